import { COMPONENTS, PLANS, VAT_RATE } from './catalog.js';
import { DAY_MS, addDays, iso, money, type OperationContext } from './operation-context.js';
import type { ResourceBody } from './truth-store.js';

interface Receivable {
  invoiceId: string;
  due: Date;
  amount: number;
  paid: boolean;
}

/** Escalation steps by TriggerDays, as an account's payment escalation settings would define them (spec 1). */
export const ESCALATION_STEPS: Readonly<Record<number, string[]>> = {
  5: ['Reminder'],
  10: ['Dunning', 'LockCustomer', 'StopPaymentProcess'],
};

/**
 * Billing, invoices, payments, escalation and dunning. As in BillingOperations, objects change
 * first and the events follow. Receivables are bookkeeping of the simulator, not a resource.
 */
export class PaymentOperations {
  private readonly receivables = new Map<string, Receivable[]>();
  private readonly closedPeriods = new Map<string, { start: string; end: string }>();
  private invoiceCount = 0;
  private dunningCount = 0;

  constructor(private readonly ctx: OperationContext) {}

  /** A billing period ended (RecurringBillingApproaching); the contract moves to the next period. */
  endBillingPeriod(contractId: string): void {
    const c = this.contract(contractId);
    const start = String(c.CurrentPeriodStart);
    const end = String(c.CurrentPeriodEnd);
    this.closedPeriods.set(contractId, { start, end });
    this.ctx.store.update('Contract', contractId, (b) => {
      b.CurrentPeriodStart = end;
      b.CurrentPeriodEnd = iso(addDays(new Date(end), 30));
    });
    this.ctx.emit({ Event: 'RecurringBillingApproaching', ContractId: contractId });
  }

  /** Recurring billing of the last closed period: a finalized draft and its invoice (InvoiceCreated). */
  bill(contractId: string): string {
    const c = this.contract(contractId);
    const period = this.closedPeriods.get(contractId) ?? { start: String(c.CurrentPeriodStart), end: String(c.CurrentPeriodEnd) };
    const plan = PLANS.find((p) => p.PlanId === c.PlanId);
    const items: ResourceBody[] = [{ Description: `${plan?.Name ?? 'Plan'} subscription`, Quantity: 1, PricePerUnit: plan?.Price ?? 0, PeriodStart: period.start, PeriodEnd: period.end, VatPercentage: VAT_RATE * 100 }];
    for (const s of c.ComponentSubscriptions as ResourceBody[]) {
      if (s.EndDate !== null) continue;
      const price = COMPONENTS.find((k) => k.ComponentId === s.ComponentId)?.PricePerUnit ?? 0;
      items.push({ Description: String(s.ComponentName), Quantity: s.Quantity, PricePerUnit: price, PeriodStart: period.start, PeriodEnd: period.end, VatPercentage: VAT_RATE * 100 });
    }
    const { invoiceId } = this.issue(c, items, null);
    this.ctx.emit({ Event: 'InvoiceCreated', InvoiceId: invoiceId });
    return invoiceId;
  }

  /** A corrected invoice replaces `invoiceId` (its amounts reduced by `discount`, a fraction): new draft and invoice, the old ones marked corrected. */
  correctInvoice(invoiceId: string, discount = 0.5): string {
    const old = this.ctx.store.get('Invoice', invoiceId);
    if (!old) throw new Error(`no invoice ${invoiceId}`);
    const c = this.contract(String(old.ContractId));
    const items = (old.Items as ResourceBody[]).map((i) => ({ ...i, PricePerUnit: money(Number(i.PricePerUnit) * (1 - discount)) }));
    const previous = (this.receivables.get(String(c.Id)) ?? []).find((r) => r.invoiceId === invoiceId);
    // The correction replaces the receivable: paid stays paid, open stays open (with the new amount).
    const created = this.issue(c, items, old, previous?.paid ?? false);
    if (previous) previous.paid = true;
    this.ctx.store.update('InvoiceDraft', String(old.InvoiceDraftId), (d) => {
      d.Status = 'Corrected';
      d.CorrectedByDraftId = created.draftId;
    });
    this.ctx.store.update('Invoice', invoiceId, (i) => {
      i.Status = 'Corrected';
      i.CorrectedByInvoiceId = created.invoiceId;
    });
    this.ctx.emit({
      Event: 'InvoiceCorrected',
      ...(this.ctx.legacyEvents ? { OldInvoiceId: invoiceId, NewInvoiceId: created.invoiceId } : {}),
      OldInvoiceDraftId: String(old.InvoiceDraftId),
      NewInvoiceDraftId: created.draftId,
    });
    return created.invoiceId;
  }

  /** A payment attempt for an invoice through the contract's provider: PaymentSucceeded or PaymentFailed. */
  collect(contractId: string, invoiceId: string, succeed: boolean): string {
    const c = this.contract(contractId);
    const receivable = (this.receivables.get(contractId) ?? []).find((r) => r.invoiceId === invoiceId);
    const id = this.ctx.random.hexId();
    const now = iso(this.ctx.now());
    this.ctx.store.create('PaymentTransaction', id, {
      Id: id,
      ContractId: contractId,
      CustomerId: c.CustomerId,
      InvoiceId: invoiceId,
      TransactionType: 'Payment',
      Amount: receivable?.amount ?? 0,
      Currency: c.Currency,
      PaymentProvider: c.PaymentProvider,
      BearerType: (c.PaymentBearer as ResourceBody | null)?.Type ?? null,
      Status: succeed ? 'Succeeded' : 'Failed',
      ErrorCode: succeed ? null : this.ctx.random.pick(['InsufficientFunds', 'CardDeclined', 'BearerExpired']),
      CreatedAt: now,
      CompletedAt: now,
    });
    if (succeed && receivable) receivable.paid = true;
    this.ctx.emit({ Event: succeed ? 'PaymentSucceeded' : 'PaymentFailed', PaymentTransactionId: id });
    return id;
  }

  /**
   * An escalation step: TriggerDays counts from the due date of the oldest unpaid receivable
   * (spec 6.2), so paying the oldest one can make it fall again (5, 10, 5).
   */
  escalate(contractId: string): { processId: string; triggerDays: number } {
    const c = this.contract(contractId);
    const unpaid = this.unpaid(contractId);
    const oldest = unpaid[0];
    if (!oldest) throw new Error(`contract ${contractId} has nothing unpaid to escalate`);
    const now = this.ctx.now();
    const triggerDays = Math.floor((now.getTime() - oldest.due.getTime()) / DAY_MS);
    const outstanding = money(unpaid.reduce((n, r) => n + r.amount, 0));
    const step = { TriggerDays: triggerDays, DueDate: iso(oldest.due), ExecutedAt: iso(now), Actions: ESCALATION_STEPS[triggerDays] ?? ['Reminder'] };
    let processId = c.PaymentEscalationProcessId as string | null;
    if (processId) {
      this.ctx.store.update('PaymentEscalationProcess', processId, (p) => {
        p.TriggerDays = triggerDays;
        p.DueDate = step.DueDate;
        p.OutstandingAmount = outstanding;
        (p.Steps as ResourceBody[]).push(step);
      });
    } else {
      processId = this.ctx.random.hexId();
      this.ctx.store.create('PaymentEscalationProcess', processId, {
        Id: processId,
        ContractId: contractId,
        CustomerId: c.CustomerId,
        StartedAt: iso(now),
        Status: 'Escalated',
        ResetAt: null,
        TriggerDays: triggerDays,
        DueDate: step.DueDate,
        OutstandingAmount: outstanding,
        Currency: c.Currency,
        Steps: [step],
      });
    }
    const id = processId;
    this.ctx.store.update('Contract', contractId, (b) => {
      b.EscalationStatus = 'Escalated';
      b.PaymentEscalationProcessId = id;
      b.Balance = money(-outstanding);
    });
    const customer = this.ctx.store.get('Customer', String(c.CustomerId));
    this.ctx.emit({
      Event: 'PaymentEscalated',
      ContractId: contractId,
      CustomerId: String(c.CustomerId),
      YourCustomerId: String(customer?.ExternalCustomerId ?? c.ExternalCustomerId),
      TriggerDays: triggerDays,
      DueDate: step.DueDate,
      PaymentProvider: String(c.PaymentProvider),
      PaymentEscalationProcessId: id,
    });
    return { processId: id, triggerDays };
  }

  /** A dunning document over the unpaid receivables (DunningCreated). */
  createDunning(contractId: string): string {
    const c = this.contract(contractId);
    const unpaid = this.unpaid(contractId);
    const id = this.ctx.random.hexId();
    const now = this.ctx.now();
    const level = this.ctx.store.ids('Dunning').filter((d) => this.ctx.store.get('Dunning', d)?.ContractId === contractId).length + 1;
    const outstanding = money(unpaid.reduce((n, r) => n + r.amount, 0));
    this.ctx.store.create('Dunning', id, {
      Id: id,
      DunningNumber: `DUN-${now.getUTCFullYear()}-${String(++this.dunningCount).padStart(5, '0')}`,
      ContractId: contractId,
      CustomerId: c.CustomerId,
      PaymentEscalationProcessId: c.PaymentEscalationProcessId,
      DunningLevel: level,
      DocumentDate: iso(now),
      DueDate: iso(addDays(now, 7)),
      Currency: c.Currency,
      OutstandingAmount: outstanding,
      FeeAmount: 5,
      TotalAmount: money(outstanding + 5),
      InvoiceIds: unpaid.map((r) => r.invoiceId),
    });
    this.ctx.emit({ Event: 'DunningCreated', DunningId: id });
    return id;
  }

  setPaymentProcess(contractId: string, active: boolean): void {
    this.ctx.store.update('Contract', contractId, (c) => {
      c.PaymentProcessStatus = active ? 'Active' : 'Stopped';
    });
    this.ctx.emit({ Event: 'PaymentProcessStatusChanged', ContractId: contractId });
  }

  /**
   * An external payment (bank transfer) registered against the oldest unpaid receivables
   * (PaymentRegistered). `count` receivables are paid; default all. When nothing remains unpaid
   * on an escalated contract, the escalation resets automatically (PaymentEscalationReset).
   */
  registerPayment(contractId: string, count = Infinity): void {
    const unpaid = this.unpaid(contractId);
    let paid = 0;
    for (const r of unpaid.slice(0, count)) {
      r.paid = true;
      paid += r.amount;
    }
    const remaining = money(this.unpaid(contractId).reduce((n, r) => n + r.amount, 0));
    this.ctx.store.update('Contract', contractId, (c) => {
      c.Balance = money(-remaining);
      c.LastPaymentRegisteredAmount = money(paid);
    });
    this.ctx.emit({ Event: 'PaymentRegistered', ContractId: contractId });
    if (remaining === 0 && this.contract(contractId).EscalationStatus === 'Escalated') this.resetEscalation(contractId);
  }

  /** Resets the contract's escalation (automatically after payment, or manually): the contract and its process change; a later escalation starts a new process. */
  resetEscalation(contractId: string): void {
    const c = this.contract(contractId);
    const processId = c.PaymentEscalationProcessId as string | null;
    // The reset ends the process too; the event names only the contract and the customer, so a
    // loader learns of this change only if it reads the contract's processes again.
    if (processId) {
      const at = iso(this.ctx.now());
      this.ctx.store.update('PaymentEscalationProcess', processId, (p) => {
        p.Status = 'Reset';
        p.ResetAt = at;
      });
    }
    this.ctx.store.update('Contract', contractId, (b) => {
      b.EscalationStatus = 'None';
      b.PaymentEscalationProcessId = null;
    });
    this.ctx.emit({ Event: 'PaymentEscalationReset', ContractId: contractId, CustomerId: String(c.CustomerId) });
  }

  bearerExpiring(contractId: string): void {
    this.ctx.emit({ Event: 'PaymentBearerExpiring', ContractId: contractId, ExpiryDate: this.bearerExpiry(contractId) });
  }

  bearerExpired(contractId: string): void {
    const expiry = this.bearerExpiry(contractId);
    this.ctx.store.update('Contract', contractId, (c) => {
      (c.PaymentBearer as ResourceBody).Status = 'Expired';
    });
    this.ctx.emit({ Event: 'PaymentBearerExpired', ContractId: contractId, ExpiryDate: expiry });
  }

  /** The customer or the provider revoked the debit authorisation (DebitAuthCancelled). */
  cancelDebitAuth(contractId: string): void {
    const c = this.contract(contractId);
    const customer = this.ctx.store.get('Customer', String(c.CustomerId));
    this.ctx.store.update('Contract', contractId, (b) => {
      (b.PaymentBearer as ResourceBody).Status = 'Revoked';
    });
    this.ctx.emit({
      Event: 'DebitAuthCancelled',
      ContractId: contractId,
      CustomerId: String(c.CustomerId),
      YourCustomerId: String(customer?.ExternalCustomerId ?? c.ExternalCustomerId),
      PaymentProvider: String(c.PaymentProvider),
    });
  }

  private bearerExpiry(contractId: string): string {
    const bearer = this.contract(contractId).PaymentBearer as ResourceBody | null;
    if (typeof bearer?.ExpiryDate !== 'string') throw new Error(`contract ${contractId} has no card with an expiry date`);
    return bearer.ExpiryDate;
  }

  private unpaid(contractId: string): Receivable[] {
    return (this.receivables.get(contractId) ?? []).filter((r) => !r.paid).sort((a, b) => a.due.getTime() - b.due.getTime());
  }

  private issue(c: ResourceBody, items: ResourceBody[], corrects: ResourceBody | null, paid = false): { invoiceId: string; draftId: string } {
    const now = this.ctx.now();
    const contractId = String(c.Id);
    const net = money(items.reduce((n, i) => n + Number(i.PricePerUnit) * Number(i.Quantity), 0));
    const totals = { TotalNet: net, TotalVat: money(net * VAT_RATE), TotalGross: money(net * (1 + VAT_RATE)) };
    const lines = items.map((i) => ({ ...i, TotalNet: money(Number(i.PricePerUnit) * Number(i.Quantity)) }));
    const draftId = this.ctx.random.hexId();
    const invoiceId = this.ctx.random.hexId();
    this.ctx.store.create('InvoiceDraft', draftId, {
      Id: draftId, ContractId: contractId, CustomerId: c.CustomerId, Currency: c.Currency, Items: lines, ...totals,
      Status: 'Finalized', InvoiceId: invoiceId, CreatedAt: iso(now), CorrectsDraftId: corrects ? corrects.InvoiceDraftId : null, CorrectedByDraftId: null,
    });
    this.ctx.store.create('Invoice', invoiceId, {
      Id: invoiceId, InvoiceNumber: `INV-${now.getUTCFullYear()}-${String(++this.invoiceCount).padStart(6, '0')}`, IsInvoice: true,
      ContractId: contractId, CustomerId: c.CustomerId, InvoiceDraftId: draftId, DocumentDate: iso(now), DueDate: iso(now), SentAt: iso(now),
      Currency: c.Currency, Items: lines, ...totals, Status: 'Sent', CorrectsInvoiceId: corrects ? corrects.Id : null, CorrectedByInvoiceId: null,
    });
    const list = this.receivables.get(contractId) ?? [];
    list.push({ invoiceId, due: now, amount: totals.TotalGross, paid });
    this.receivables.set(contractId, list);
    return { invoiceId, draftId };
  }

  private contract(contractId: string): ResourceBody {
    const c = this.ctx.store.get('Contract', contractId);
    if (!c) throw new Error(`no contract ${contractId}`);
    return c;
  }
}
