import { CITIES, COMPANIES, COMPONENTS, CURRENCIES, FIRST_NAMES, LAST_NAMES, PLANS, STREETS, VAT_RATE, type Plan } from './catalog.js';
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
    ctx.store.create('Customer', customerId, {
      Id: customerId,
      CreatedAt: iso(now),
      ExternalCustomerId: `CRM-${r.int(10000, 99999)}`,
      CompanyName: r.chance(0.6) ? r.pick(COMPANIES) : null,
      FirstName: firstName,
      LastName: lastName,
      EmailAddress: `${firstName}.${lastName}${r.int(1, 99)}@example.com`.toLowerCase(),
      Address: { Street: r.pick(STREETS), HouseNumber: String(r.int(1, 120)), PostalCode: place.PostalCode, City: place.City, Country: place.Country },
      Locale: place.Country === 'CH' ? 'de-CH' : place.Country === 'AT' ? 'de-AT' : 'de-DE',
      IsLocked: false,
      DefaultBearerMedium: 'Email',
    });
    ctx.emit({ Event: 'CustomerCreated', CustomerId: customerId });

    const contractId = r.hexId();
    const bearerKind = options.bearer ?? (r.chance(0.7) ? 'card' : 'debit');
    const components = (options.components ?? []).map(([index, quantity]) => this.componentSubscription(index, quantity, now));
    const customer = ctx.store.get('Customer', customerId)!;
    ctx.store.create('Contract', contractId, {
      Id: contractId,
      CustomerId: customerId,
      ExternalCustomerId: customer.ExternalCustomerId,
      ReferenceCode: `C-${contractId.slice(-6).toUpperCase()}`,
      PlanId: plan.PlanId,
      PlanVariantId: plan.PlanVariantId,
      PlanName: plan.Name,
      Currency: r.pick(CURRENCIES),
      LifecycleStatus: trial ? 'InTrial' : 'Active',
      StartDate: iso(now),
      TrialEndDate: trial ? iso(addDays(now, plan.TrialDays)) : null,
      CancellationDate: null,
      EndDate: null,
      NoticePeriodDays: 30,
      Phases: [{ Type: trial ? 'Trial' : 'Normal', StartDate: iso(now), PlanId: plan.PlanId, PlanVariantId: plan.PlanVariantId }],
      ComponentSubscriptions: components,
      CurrentPeriodStart: iso(now),
      CurrentPeriodEnd: iso(addDays(now, trial ? plan.TrialDays : 30)),
      Balance: 0,
      LastPaymentRegisteredAmount: null,
      PaymentProvider: bearerKind === 'card' ? 'Stripe' : 'GoCardless',
      PaymentBearer: this.newBearer(bearerKind, `${firstName} ${lastName}`, options.cardExpiry),
      PaymentProcessStatus: 'Active',
      EscalationStatus: 'None',
      PaymentEscalationProcessId: null,
    });
    ctx.emit({ Event: 'ContractCreated', ContractId: contractId });
    if (ctx.legacyEvents) ctx.emit({ Event: 'AccountCreated', ContractId: contractId });

    const orderId = this.createOrder(contractId, 'Signup', plan, components, trial ? 0 : plan.Price);
    ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    return { customerId, contractId, orderId };
  }

  /** The plan's warning time before the trial ends has come (no state change: the receiver reads the contract). */
  warnTrialEnd(contractId: string): void {
    this.contract(contractId);
    this.ctx.emit({ Event: 'TrialEndApproaching', ContractId: contractId });
  }

  endTrial(contractId: string): void {
    const now = iso(this.ctx.now());
    this.ctx.store.update('Contract', contractId, (c) => {
      c.LifecycleStatus = 'Active';
      (c.Phases as ResourceBody[]).push({ Type: 'Normal', StartDate: now, PlanId: c.PlanId, PlanVariantId: c.PlanVariantId });
      c.CurrentPeriodStart = now;
      c.CurrentPeriodEnd = iso(addDays(this.ctx.now(), 30));
    });
    this.ctx.emit({ Event: 'ContractChanged', ContractId: contractId });
  }

  /** An up- or downgrade to another plan: an order, then the contract's new phase. */
  changePlan(contractId: string, planIndex: number): string {
    const plan = PLANS[planIndex];
    if (!plan) throw new RangeError(`no plan ${planIndex}`);
    const before = this.contract(contractId);
    const oldPrice = PLANS.find((p) => p.PlanId === before.PlanId)?.Price ?? 0;
    const orderId = this.createOrder(contractId, plan.Price >= oldPrice ? 'Upgrade' : 'Downgrade', plan, [], money(Math.max(0, plan.Price - oldPrice)));
    const now = iso(this.ctx.now());
    this.ctx.store.update('Contract', contractId, (c) => {
      c.PlanId = plan.PlanId;
      c.PlanVariantId = plan.PlanVariantId;
      c.PlanName = plan.Name;
      (c.Phases as ResourceBody[]).push({ Type: 'Normal', StartDate: now, PlanId: plan.PlanId, PlanVariantId: plan.PlanVariantId });
    });
    this.ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    this.ctx.emit({ Event: 'ContractChanged', ContractId: contractId });
    return orderId;
  }

  addComponent(contractId: string, componentIndex: number, quantity: number): string {
    const now = this.ctx.now();
    const subscription = this.componentSubscription(componentIndex, quantity, now);
    const plan = PLANS.find((p) => p.PlanId === this.contract(contractId).PlanId) ?? PLANS[0]!;
    const orderId = this.createOrder(contractId, 'ComponentSubscription', plan, [subscription], money((COMPONENTS[componentIndex]?.PricePerUnit ?? 0) * quantity));
    this.ctx.store.update('Contract', contractId, (c) => {
      (c.ComponentSubscriptions as ResourceBody[]).push(subscription);
    });
    this.ctx.emit({ Event: 'OrderSucceeded', ContractId: contractId, OrderId: orderId });
    this.ctx.emit({ Event: 'ContractChanged', ContractId: contractId });
    return orderId;
  }

  /** Ends the first open component subscription of the contract. */
  removeComponent(contractId: string): void {
    const now = iso(this.ctx.now());
    this.ctx.store.update('Contract', contractId, (c) => {
      const open = (c.ComponentSubscriptions as ResourceBody[]).find((s) => s.EndDate === null);
      if (!open) throw new Error(`contract ${contractId} has no open component subscription`);
      open.EndDate = now;
    });
    this.ctx.emit({ Event: 'ContractChanged', ContractId: contractId });
  }

  /** A cancellation: the contract ends after the notice period (spec 6.2: ContractCancelled now, ContractChanged at the end). */
  cancel(contractId: string, noticeDays: number): Date {
    const end = addDays(this.ctx.now(), noticeDays);
    this.ctx.store.update('Contract', contractId, (c) => {
      c.CancellationDate = iso(this.ctx.now());
      c.EndDate = iso(end);
      c.NoticePeriodDays = noticeDays;
    });
    this.ctx.emit({ Event: 'ContractCancelled', ContractId: contractId });
    return end;
  }

  endContract(contractId: string): void {
    const now = iso(this.ctx.now());
    this.ctx.store.update('Contract', contractId, (c) => {
      c.LifecycleStatus = 'Ended';
      c.EndDate ??= now;
      (c.Phases as ResourceBody[]).push({ Type: 'Inactive', StartDate: now, PlanId: null, PlanVariantId: null });
      for (const s of c.ComponentSubscriptions as ResourceBody[]) s.EndDate ??= now;
    });
    this.ctx.emit({ Event: 'ContractChanged', ContractId: contractId });
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

  /** Deletes the customer: from now on its endpoint answers 404. Its contracts stay readable. */
  deleteCustomer(customerId: string): void {
    this.ctx.store.delete('Customer', customerId);
    this.ctx.emit({ Event: 'CustomerDeleted', CustomerId: customerId });
  }

  private contract(contractId: string): ResourceBody {
    const c = this.ctx.store.get('Contract', contractId);
    if (!c) throw new Error(`no contract ${contractId}`);
    return c;
  }

  private componentSubscription(index: number, quantity: number, now: Date): ResourceBody {
    const component = COMPONENTS[index];
    if (!component) throw new RangeError(`no component ${index}`);
    return { Id: this.ctx.random.hexId(), ComponentId: component.ComponentId, ComponentName: component.Name, Quantity: quantity, StartDate: iso(now), EndDate: null };
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

  private createOrder(contractId: string, orderType: string, plan: Plan, components: ResourceBody[], net: number): string {
    const contract = this.contract(contractId);
    const orderId = this.ctx.random.hexId();
    const now = iso(this.ctx.now());
    this.ctx.store.create('Order', orderId, {
      Id: orderId,
      ContractId: contractId,
      CustomerId: contract.CustomerId,
      OrderType: orderType,
      Status: 'Completed',
      CreatedAt: now,
      CompletedAt: now,
      Currency: contract.Currency,
      PlanId: plan.PlanId,
      PlanVariantId: plan.PlanVariantId,
      Components: components.map((s) => ({ ComponentId: s.ComponentId, Quantity: s.Quantity })),
      TotalNet: money(net),
      TotalVat: money(net * VAT_RATE),
      TotalGross: money(net * (1 + VAT_RATE)),
    });
    return orderId;
  }
}
