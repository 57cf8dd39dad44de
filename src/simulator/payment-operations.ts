import { PERIOD_DAYS, currentPhase } from './billing-operations.js';
import { COMPONENTS, PLANS, VAT_RATE } from './catalog.js';
import { componentPrice, recurringFee } from './catalog-operations.js';
import { DAY_MS, addDays, dateOnly, iso, money, type OperationContext } from './operation-context.js';
import type { ResourceBody } from './truth-store.js';

interface Receivable {
  invoiceId: string;
  due: Date;
  amount: number;
  paid: boolean;
}

/** Escalation steps by TriggerDays, as an account's payment escalation settings define them (spec 1). */
export const ESCALATION_STEPS: Readonly<Record<number, string[]>> = {
  5: ['Reminder'],
  10: ['Dunning', 'LockCustomer', 'StopPaymentProcess'],
};

/**
 * The account's payment escalation settings, the object a PaymentEscalationProcessId names:
 * field names from the old Pactas SDK's PaymentEscalationProcessDTO; no path serves it upstream
 * as far as documented, so the sandbox serves it only when asked to (assumed).
 */
export function escalationSettingsBody(id: string): ResourceBody {
  return {
    Id: id,
    Name: 'Standard payment escalation',
    Steps: Object.entries(ESCALATION_STEPS).flatMap(([days, actions]) => actions.map((action) => ({ TriggerDays: Number(days), Action: action, EmailId: null }))),
  };
}

/**
 * Billing, invoices, payments, escalation and dunning. As in BillingOperations, objects change
 * first and the events follow. Receivables are bookkeeping of the simulator, not a resource.
 */
export class PaymentOperations {
  private readonly receivables = new Map<string, Receivable[]>();
  private readonly closedPeriods = new Map<string, { start: string; end: string }>();
  /** Contracts whose escalation is in progress (the service keeps this state; no documented field shows it). */
  private readonly escalated = new Set<string>();
  private invoiceCount = 0;
  private dunningCount = 0;

  constructor(private readonly ctx: OperationContext) {}

  /**
   * A billing period ended (RecurringBillingApproaching): the contract is billed until the
   * period's end, its last billing date is now, its next one a period later.
   */
  endBillingPeriod(contractId: string): void {
    const c = this.contract(contractId);
    const now = this.ctx.now();
    const start = String(c.BilledUntil ?? (c.CurrentPhase as { StartDate?: string } | null)?.StartDate ?? c.StartDate);
    const end = iso(now);
    this.closedPeriods.set(contractId, { start, end });
    this.ctx.store.update('Contract', contractId, (b) => {
      b.BilledUntil = end;
      b.LastBillingDate = end;
      b.NextBillingDate = b.EndDate !== null && Date.parse(String(b.EndDate)) <= now.getTime() + PERIOD_DAYS * DAY_MS ? null : iso(addDays(now, PERIOD_DAYS));
      b.CurrentPhase = currentPhase(b.Phases as ResourceBody[], now);
    });
    this.ctx.emit({ Event: 'RecurringBillingApproaching', ContractId: contractId });
  }

  /** Recurring billing of the last closed period: a finalized draft and its invoice (InvoiceCreated). */
  bill(contractId: string): string {
    const c = this.contract(contractId);
    const period = this.closedPeriods.get(contractId) ?? { start: String(c.StartDate), end: iso(this.ctx.now()) };
    const plan = PLANS.find((p) => p.PlanId === c.PlanId);
    const fee = plan ? recurringFee(this.ctx.store, plan) : 0;
    const items: ResourceBody[] = [{ Description: `${plan?.Name ?? 'Plan'} subscription`, PlanVariantId: c.PlanVariantId, Quantity: 1, PricePerUnit: fee, PeriodStart: period.start, PeriodEnd: period.end, VatPercentage: VAT_RATE * 100 }];
    for (const s of this.ctx.componentSubscriptions.get(contractId) ?? []) {
      if (s.EndDate !== null) continue;
      const name = COMPONENTS.find((k) => k.ComponentId === s.ComponentId)?.Name ?? 'Component';
      items.push({ Description: name, ComponentId: s.ComponentId, Quantity: s.Quantity, PricePerUnit: componentPrice(this.ctx.store, String(s.ComponentId)), PeriodStart: period.start, PeriodEnd: period.end, VatPercentage: VAT_RATE * 100 });
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
      NewInvoiceDraftIds: [created.draftId],
      ContractId: String(c.Id),
      CustomerId: String(c.CustomerId),
    });
    return created.invoiceId;
  }

  /** A payment attempt for an invoice through the contract's provider: PaymentSucceeded or PaymentFailed. */
  collect(contractId: string, invoiceId: string, succeed: boolean): string {
    const c = this.contract(contractId);
    const receivable = (this.receivables.get(contractId) ?? []).find((r) => r.invoiceId === invoiceId);
    const id = this.ctx.random.hexId();
    const now = iso(this.ctx.now());
    const amount = receivable?.amount ?? 0;
    const bearerType = (c.PaymentBearer as ResourceBody | null)?.Type;
    const status = (name: string, httpCode: number) => ({ Status: name, Timestamp: now, HttpCode: httpCode, Amount: amount, Preauth: false });
    const final = succeed ? status('Succeeded', 200) : status('Failed', 402);
    this.ctx.store.create('PaymentTransaction', id, {
      Id: id,
      ContractId: contractId,
      CustomerId: c.CustomerId,
      CustomerName: c.CustomerName,
      Amount: amount,
      Currency: c.Currency,
      PaymentProvider: c.PaymentProvider,
      PaymentProviderRole: bearerType === 'DirectDebit' ? 'Debit' : 'CreditCard',
      Trigger: 'Recurring',
      Preauth: false,
      StatusTimestamp: now,
      Status: final,
      StatusHistory: [status('Created', 200), status('InProgress', 200), final],
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
    const dueDate = iso(oldest.due);
    const id = this.ctx.escalationSettingsId;
    this.escalated.add(contractId);
    this.ctx.store.update('Contract', contractId, (b) => {
      b.Balance = money(-outstanding);
    });
    const customer = this.ctx.store.get('Customer', String(c.CustomerId));
    this.ctx.emit({
      Event: 'PaymentEscalated',
      ContractId: contractId,
      CustomerId: String(c.CustomerId),
      YourCustomerId: String(customer?.ExternalCustomerId ?? c.ExternalCustomerId),
      TriggerDays: triggerDays,
      DueDate: dueDate,
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
      PaymentEscalationProcessId: this.ctx.escalationSettingsId,
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
      c.RecurringPaymentsPaused = !active;
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
    for (const r of unpaid.slice(0, count)) r.paid = true;
    const remaining = money(this.unpaid(contractId).reduce((n, r) => n + r.amount, 0));
    this.ctx.store.update('Contract', contractId, (c) => {
      c.Balance = money(-remaining);
    });
    this.ctx.emit({ Event: 'PaymentRegistered', ContractId: contractId });
    if (remaining === 0 && this.escalated.has(contractId)) this.resetEscalation(contractId);
  }

  /**
   * Resets the contract's escalation (automatically after payment, or manually). No documented
   * field of the contract shows an escalation, so the contract does not change; the event is
   * the record. A later escalation starts over.
   */
  resetEscalation(contractId: string): void {
    const c = this.contract(contractId);
    this.escalated.delete(contractId);
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
    const customer = this.ctx.store.get('Customer', String(c.CustomerId));
    this.ctx.store.create('InvoiceDraft', draftId, {
      Id: draftId, ContractId: contractId, CustomerId: c.CustomerId, Currency: c.Currency, Items: lines, ...totals,
      Status: 'Finalized', InvoiceId: invoiceId, CreatedAt: iso(now), CorrectsDraftId: corrects ? corrects.InvoiceDraftId : null, CorrectedByDraftId: null,
    });
    this.ctx.store.create('Invoice', invoiceId, {
      Id: invoiceId, InvoiceNumber: `INV-${now.getUTCFullYear()}-${String(++this.invoiceCount).padStart(6, '0')}`, IsInvoice: true,
      CustomerId: c.CustomerId, ContractId: contractId, ExternalCustomerId: customer?.ExternalCustomerId ?? null,
      Created: iso(now), SentAt: iso(now), DueDate: dateOnly(now), DocumentDate: dateOnly(now),
      Currency: c.Currency, ...totals,
      // Not documented (assumed): the items, the status and the links between drafts, invoices and corrections.
      Items: lines, Status: 'Sent', InvoiceDraftId: draftId, CorrectsInvoiceId: corrects ? corrects.Id : null, CorrectedByInvoiceId: null,
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
