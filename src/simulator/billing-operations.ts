import { CITIES, COMPANIES, COMPONENTS, CURRENCIES, FIRST_NAMES, LAST_NAMES, PLANS, STREETS, VAT_RATE, type Plan } from './catalog.js';
import { componentPrice, recurringFee } from './catalog-operations.js';
import { addDays, iso, money, type OperationContext } from './operation-context.js';
import type { ResourceBody } from './truth-store.js';

export interface SignupOptions {
  /** Index into PLANS; random when absent. */
  plan?: number;
  /** Start with the plan's trial. Default true. */
  trial?: boolean;
  /** `card` (credit card) or `debit` (direct debit mandate). Random when absent. */
  bearer?: 'card' | 'debit';
  /** Card expiry, for bearer `card`; default two years ahead. */
  cardExpiry?: Date;
  /** Components subscribed at signup: [component index, quantity]. */
  components?: Array<[number, number]>;
}

export interface Signup {
  customerId: string;
  contractId: string;
  orderId: string;
}

/**
 * Customer, contract and order life cycle. Each method changes the objects first, then emits
 * the events that announce the change (spec 6.2), so a receiver that fetches on receipt sees it.
 */
export class BillingOperations {
  constructor(private readonly ctx: OperationContext) {}

  /** A signup through the self-service pages: customer, contract and its signup order. */
  signup(options: SignupOptions = {}): Signup {
    const { ctx } = this;
    const r = ctx.random;
    const now = ctx.now();
    const plan = PLANS[options.plan ?? r.int(0, PLANS.length - 1)] ?? PLANS[0]!;
    const trial = (options.trial ?? true) && plan.TrialDays > 0;
    const customerId = r.hexId();
    const firstName = r.pick(FIRST_NAMES);
    const lastName = r.pick(LAST_NAMES);
    const place = r.pick(CITIES);
    const company = r.chance(0.6) ? r.pick(COMPANIES) : null;
    const externalCustomerId = `CRM-${r.int(10000, 99999)}`;
    ctx.store.create('Customer', customerId, {
      Id: customerId,
      CreatedAt: iso(now),
      DeletedAt: null,
      IsLocked: false,
      Hidden: false,
      CustomerName: company ?? `${firstName} ${lastName}`,
      CustomerSubName: company ? `${firstName} ${lastName}` : null,
      ExternalCustomerId: externalCustomerId,
      CompanyName: company,
      FirstName: firstName,
      LastName: lastName,
      Language: 'de',
      Locale: place.Country === 'CH' ? 'de-CH' : place.Country === 'AT' ? 'de-AT' : 'de-DE',
      VatId: company ? `${place.Country}${r.int(100000000, 999999999)}` : null,
      EmailAddress: `${firstName}.${lastName}${r.int(1, 99)}@example.com`.toLowerCase(),
      Tag: null,
      Address: { Street: r.pick(STREETS), HouseNumber: String(r.int(1, 120)), PostalCode: place.PostalCode, City: place.City, Country: place.Country },
      CustomerType: company ? 'Business' : 'Consumer',
      DefaultBearerMedium: 'Email',
    });
    ctx.emit({ Event: 'CustomerCreated', CustomerId: customerId });

    const contractId = r.hexId();
    const bearerKind = options.bearer ?? (r.chance(0.7) ? 'card' : 'debit');
    const components = (options.components ?? []).map(([index, quantity]) => this.componentSubscription(index, quantity, now));
    ctx.componentSubscriptions.set(contractId, components);
    const customer = ctx.store.get('Customer', customerId)!;
    const trialEnd = addDays(now, plan.TrialDays);
    const phases = trial ? [phase('Trial', now, plan), phase('Normal', trialEnd, plan)] : [phase('Normal', now, plan)];
    ctx.store.create('Contract', contractId, {
      Id: contractId,
      CustomerId: customerId,
      CustomerName: customer.CustomerName,
      PlanId: plan.PlanId,
      PlanVariantId: plan.PlanVariantId,
      PlanGroupId: plan.PlanGroupId,
      LifecycleStatus: trial ? 'InTrial' : 'Active',
      Phases: phases,
      CurrentPhase: currentPhase(phases, now),
      StartDate: iso(now),
      EndDate: null,
      BilledUntil: null,
      LastBillingDate: null,
      NextBillingDate: iso(trial ? trialEnd : addDays(now, PERIOD_DAYS)),
      Balance: 0,
      Currency: r.pick(CURRENCIES),
      ReferenceCode: `C-${contractId.slice(-6).toUpperCase()}`,
      ExternalId: null,
      PaymentBearer: this.newBearer(bearerKind, `${firstName} ${lastName}`, options.cardExpiry),
      PaymentProvider: bearerKind === 'card' ? 'Stripe' : 'GoCardless',
      EscalationSuspended: false,
      RecurringPaymentsPaused: false,
      BillingSuspended: false,
    });
    this.contractEvent('ContractCreated', contractId, 'Signup');
    if (ctx.legacyEvents) ctx.emit({ Event: 'AccountCreated', ContractId: contractId });

    // The first period's fee, and the components' (nothing during a trial).
    const orderId = this.createOrder(contractId, plan, [this.planItem(plan, trial ? 0 : recurringFee(ctx.store, plan)), ...components.map((c) => this.componentItem(c, trial))], trial);
    ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    return { customerId, contractId, orderId };
  }

  /** The plan's warning time before the trial ends has come (no state change: the receiver reads the contract). */
  warnTrialEnd(contractId: string): void {
    this.contract(contractId);
    this.ctx.emit({ Event: 'TrialEndApproaching', ContractId: contractId });
  }

  /** The trial phase is over: the contract's next (Normal) phase is current, the first paid period starts. */
  endTrial(contractId: string): void {
    const now = this.ctx.now();
    this.ctx.store.update('Contract', contractId, (c) => {
      c.LifecycleStatus = 'Active';
      c.CurrentPhase = currentPhase(c.Phases as ResourceBody[], now);
      c.NextBillingDate = iso(addDays(now, PERIOD_DAYS));
    });
    this.contractEvent('ContractChanged', contractId, 'TrialEnd');
  }

  /** An up- or downgrade to another plan: an order, then the contract's new phase, starting now. */
  changePlan(contractId: string, planIndex: number): string {
    const plan = PLANS[planIndex];
    if (!plan) throw new RangeError(`no plan ${planIndex}`);
    const before = this.contract(contractId);
    const oldPlan = PLANS.find((p) => p.PlanId === before.PlanId);
    const oldFee = oldPlan ? recurringFee(this.ctx.store, oldPlan) : 0;
    const newFee = recurringFee(this.ctx.store, plan);
    const orderId = this.createOrder(contractId, plan, [this.planItem(plan, Math.max(0, newFee - oldFee))], false);
    const now = this.ctx.now();
    this.ctx.store.update('Contract', contractId, (c) => {
      c.PlanId = plan.PlanId;
      c.PlanVariantId = plan.PlanVariantId;
      c.PlanGroupId = plan.PlanGroupId;
      c.Phases = withPhase(c.Phases as ResourceBody[], phase('Normal', now, plan), false);
      c.CurrentPhase = currentPhase(c.Phases as ResourceBody[], now);
    });
    this.ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    this.contractEvent('ContractChanged', contractId, newFee >= oldFee ? 'Upgrade' : 'Downgrade');
    return orderId;
  }

  /** A component subscription is added (an order; the contract changes upstream, its body here does not). */
  addComponent(contractId: string, componentIndex: number, quantity: number): string {
    const now = this.ctx.now();
    const subscription = this.componentSubscription(componentIndex, quantity, now);
    const plan = PLANS.find((p) => p.PlanId === this.contract(contractId).PlanId) ?? PLANS[0]!;
    const orderId = this.createOrder(contractId, plan, [this.componentItem(subscription, false)], false);
    this.subscriptions(contractId).push(subscription);
    this.ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    this.contractEvent('ContractChanged', contractId, 'ComponentSubscriptionChange');
    return orderId;
  }

  /** Ends the first open component subscription of the contract. */
  removeComponent(contractId: string): void {
    const now = iso(this.ctx.now());
    const open = this.subscriptions(contractId).find((s) => s.EndDate === null);
    if (!open) throw new Error(`contract ${contractId} has no open component subscription`);
    open.EndDate = now;
    this.contractEvent('ContractChanged', contractId, 'ComponentSubscriptionChange');
  }

  /**
   * A cancellation: the contract gets its (future) EndDate and an Inactive phase starting then,
   * replacing any phase planned from then on (ContractCancelled now, ContractChanged at the end).
   */
  cancel(contractId: string, noticeDays: number): Date {
    const end = addDays(this.ctx.now(), noticeDays);
    this.ctx.store.update('Contract', contractId, (c) => {
      c.EndDate = iso(end);
      c.Phases = withPhase(c.Phases as ResourceBody[], inactive(end), true);
      c.CurrentPhase = currentPhase(c.Phases as ResourceBody[], this.ctx.now());
    });
    this.contractEvent('ContractCancelled', contractId, 'Cancellation');
    return end;
  }

  /** The contract's end has come (after a cancellation; or at once, when not cancelled before). */
  endContract(contractId: string): void {
    const now = this.ctx.now();
    this.ctx.store.update('Contract', contractId, (c) => {
      c.LifecycleStatus = 'Ended';
      if (c.EndDate === null) {
        c.EndDate = iso(now);
        c.Phases = withPhase(c.Phases as ResourceBody[], inactive(now), true);
      }
      c.CurrentPhase = currentPhase(c.Phases as ResourceBody[], now);
      c.NextBillingDate = null;
    });
    for (const s of this.subscriptions(contractId)) s.EndDate ??= iso(now);
    this.contractEvent('ContractChanged', contractId, 'End');
  }

  /** Contract data edited by the account (its external id): ContractDataChanged. */
  changeContractData(contractId: string): void {
    const externalId = `ERP-${this.ctx.random.int(100000, 999999)}`;
    this.ctx.store.update('Contract', contractId, (c) => {
      c.ExternalId = externalId;
    });
    this.ctx.emit({ Event: 'ContractDataChanged', ContractId: contractId });
  }

  /** The customer edits base data in the customer portal. */
  changeCustomer(customerId: string): void {
    const r = this.ctx.random;
    const place = r.pick(CITIES);
    this.ctx.store.update('Customer', customerId, (c) => {
      c.Address = { Street: r.pick(STREETS), HouseNumber: String(r.int(1, 120)), PostalCode: place.PostalCode, City: place.City, Country: place.Country };
      c.EmailAddress = `billing${r.int(100, 999)}@${String(c.LastName).toLowerCase()}.example.com`;
    });
    this.ctx.emit({ Event: 'CustomerChanged', CustomerId: customerId });
  }

  setCustomerLocked(customerId: string, locked: boolean): void {
    this.ctx.store.update('Customer', customerId, (c) => {
      c.IsLocked = locked;
    });
    this.ctx.emit({ Event: locked ? 'CustomerLocked' : 'CustomerUnlocked', CustomerId: customerId });
  }

  /**
   * Deletes the customer with its contracts: from now on their endpoints answer 404 (the real
   * service anonymises and archives them). CustomerDeleted, then ContractDeleted per contract.
   * Its orders, invoices and payments stay readable.
   */
  deleteCustomer(customerId: string): void {
    const contracts = this.ctx.store.ids('Contract').filter((id) => this.ctx.store.get('Contract', id)?.CustomerId === customerId);
    for (const id of contracts) this.ctx.store.delete('Contract', id);
    this.ctx.store.delete('Customer', customerId);
    this.ctx.emit({ Event: 'CustomerDeleted', CustomerId: customerId });
    for (const id of contracts) this.ctx.emit({ Event: 'ContractDeleted', ContractId: id, CustomerId: customerId });
  }

  /** ContractCreated, ContractChanged, ContractCancelled: with the change's id and type and the customer's external id. */
  private contractEvent(event: 'ContractCreated' | 'ContractChanged' | 'ContractCancelled', contractId: string, changeType: string): void {
    const c = this.contract(contractId);
    const customer = this.ctx.store.get('Customer', String(c.CustomerId));
    this.ctx.emit({
      Event: event,
      ContractId: contractId,
      CustomerId: String(c.CustomerId),
      ExternalCustomerId: String(customer?.ExternalCustomerId ?? ''),
      ContractChangeId: this.ctx.random.hexId(),
      ContractChangeType: changeType,
    });
  }

  private subscriptions(contractId: string): ResourceBody[] {
    const list = this.ctx.componentSubscriptions.get(contractId) ?? [];
    this.ctx.componentSubscriptions.set(contractId, list);
    return list;
  }

  private contract(contractId: string): ResourceBody {
    const c = this.ctx.store.get('Contract', contractId);
    if (!c) throw new Error(`no contract ${contractId}`);
    return c;
  }

  private componentSubscription(index: number, quantity: number, now: Date): ResourceBody {
    const component = COMPONENTS[index];
    if (!component) throw new RangeError(`no component ${index}`);
    return { Id: this.ctx.random.hexId(), ComponentId: component.ComponentId, Quantity: quantity, StartDate: iso(now), EndDate: null };
  }

  private newBearer(kind: 'card' | 'debit', holder: string, cardExpiry?: Date): ResourceBody {
    const r = this.ctx.random;
    if (kind === 'debit') {
      return { Type: 'DirectDebit', Holder: holder, MaskedIban: `DE${r.int(10, 99)} **** **** **** ${r.int(1000, 9999)}`, MandateReference: `MD-${r.int(100000, 999999)}`, Status: 'Valid' };
    }
    const expiry = cardExpiry ?? addDays(this.ctx.now(), 730);
    return { Type: 'CreditCard', Holder: holder, CardType: r.pick(['Visa', 'MasterCard', 'Amex']), Last4: String(r.int(1000, 9999)), ExpiryMonth: expiry.getUTCMonth() + 1, ExpiryYear: expiry.getUTCFullYear(), ExpiryDate: iso(expiry), Status: 'Valid' };
  }

  /** A new payment bearer on the contract (PaymentDataChanged). */
  replaceBearer(contractId: string, kind: 'card' | 'debit'): void {
    const contract = this.contract(contractId);
    const holder = String((contract.PaymentBearer as ResourceBody | null)?.Holder ?? 'Account holder');
    const bearer = this.newBearer(kind, holder);
    this.ctx.store.update('Contract', contractId, (c) => {
      c.PaymentBearer = bearer;
      c.PaymentProvider = kind === 'card' ? 'Stripe' : 'GoCardless';
    });
    this.ctx.emit({ Event: 'PaymentDataChanged', ContractId: contractId });
  }

  private planItem(plan: Plan, net: number): ResourceBody {
    return { Description: plan.Name, PlanVariantId: plan.PlanVariantId, Quantity: 1, TotalNet: money(net) };
  }

  private componentItem(subscription: ResourceBody, free: boolean): ResourceBody {
    const componentId = String(subscription.ComponentId);
    const name = COMPONENTS.find((k) => k.ComponentId === componentId)?.Name ?? 'Component';
    const net = free ? 0 : componentPrice(this.ctx.store, componentId) * Number(subscription.Quantity);
    return { Description: name, ComponentId: componentId, Quantity: subscription.Quantity, TotalNet: money(net) };
  }

  /** An order of the line items; its totals are their sum. */
  private createOrder(contractId: string, plan: Plan, lineItems: ResourceBody[], isTrial: boolean): string {
    const contract = this.contract(contractId);
    const orderId = this.ctx.random.hexId();
    const now = iso(this.ctx.now());
    const net = money(lineItems.reduce((n, i) => n + Number(i.TotalNet), 0));
    this.ctx.store.create('Order', orderId, {
      Id: orderId,
      ContractId: contractId,
      CustomerId: contract.CustomerId,
      PlanId: plan.PlanId,
      PlanVariantId: plan.PlanVariantId,
      Currency: contract.Currency,
      Total: net,
      TotalVat: money(net * VAT_RATE),
      TotalGross: money(net * (1 + VAT_RATE)),
      IsTrial: isTrial,
      Status: 'Completed',
      CreatedAt: now,
      LineItems: lineItems,
    });
    return orderId;
  }
}

/** Days of a billing period: the sandbox's month. */
export const PERIOD_DAYS = 30;

function phase(type: 'Trial' | 'Normal', start: Date, plan: Plan): ResourceBody {
  return { Type: type, StartDate: iso(start), PlanId: plan.PlanId, PlanVariantId: plan.PlanVariantId, Quantity: 1, InheritStartDate: false };
}

function inactive(start: Date): ResourceBody {
  return { Type: 'Inactive', StartDate: iso(start), PlanId: null, PlanVariantId: null, Quantity: 1, InheritStartDate: false };
}

/**
 * The phases with `next` in place. With `replaceLater` (an end), phases starting at or after it
 * are dropped. Otherwise (a new plan) phases planned after it are dropped except a later
 * Inactive one (a cancellation stays), and a phase starting at the same instant stays before it:
 * the last phase started is the current one, and every change is a new phase.
 */
function withPhase(phases: ResourceBody[], next: ResourceBody, replaceLater: boolean): ResourceBody[] {
  const at = Date.parse(String(next.StartDate));
  const before = phases.filter((p) => (replaceLater ? Date.parse(String(p.StartDate)) < at : Date.parse(String(p.StartDate)) <= at));
  const after = replaceLater ? [] : phases.filter((p) => Date.parse(String(p.StartDate)) > at && p.Type === 'Inactive');
  return [...before, next, ...after];
}

/** The phase in effect at `now` (the last one started), without InheritStartDate, as CurrentPhase shows it. */
export function currentPhase(phases: ResourceBody[], now: Date): ResourceBody | null {
  const current = phases.filter((p) => Date.parse(String(p.StartDate)) <= now.getTime()).at(-1);
  if (!current) return null;
  return { Type: current.Type, StartDate: current.StartDate, PlanId: current.PlanId, PlanVariantId: current.PlanVariantId, Quantity: current.Quantity };
}
