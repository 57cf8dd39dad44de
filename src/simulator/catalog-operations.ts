import { COMPONENTS, PLAN_GROUP, PLANS, type Component, type Plan } from './catalog.js';
import { money, type OperationContext } from './operation-context.js';
import type { ResourceBody, TruthStore } from './truth-store.js';

/** A localizable name as the service serves it: the default under `_c`, translations by language (shape assumed). */
function localized(name: string, de: string): ResourceBody {
  return { _c: name, de };
}

const MONTH = { Unit: 'Month', Quantity: 1 };

function planBody(plan: Plan): ResourceBody {
  return {
    Id: plan.PlanId,
    PlanGroupId: plan.PlanGroupId,
    Name: localized(plan.Name, plan.NameDe),
    TrialPeriod: plan.TrialDays > 0 ? { Unit: 'Day', Quantity: plan.TrialDays } : null,
    TrialEndPolicy: 'NoAction',
  };
}

function planVariantBody(plan: Plan): ResourceBody {
  return {
    Id: plan.PlanVariantId,
    PlanId: plan.PlanId,
    InternalName: `${plan.Name} monthly`,
    RecurringFee: plan.Price,
    SetupFee: 0,
    FeePeriod: MONTH,
    BillingPeriod: MONTH,
    ContractPeriod: MONTH,
    CancellationPeriod: { Unit: 'Day', Quantity: 30 },
  };
}

function componentBody(component: Component): ResourceBody {
  return {
    Id: component.ComponentId,
    PlanGroupId: PLAN_GROUP.PlanGroupId,
    Name: localized(component.Name, component.NameDe),
    ComponentType: 'Quantity',
    Unit: component.Unit,
    PricePerUnit: component.PricePerUnit,
    FeePeriod: MONTH,
    ExternalId: `COMP-${component.ComponentId.slice(-4).toUpperCase()}`,
  };
}

/** The current net fee per period of a plan variant: the served object's, else the initial price. */
export function recurringFee(store: TruthStore, plan: Plan): number {
  const fee = store.get('PlanVariant', plan.PlanVariantId)?.RecurringFee;
  return typeof fee === 'number' ? fee : plan.Price;
}

/** The current net price per unit of a component. */
export function componentPrice(store: TruthStore, componentId: string): number {
  const served = store.get('Component', componentId)?.PricePerUnit;
  if (typeof served === 'number') return served;
  return COMPONENTS.find((c) => c.ComponentId === componentId)?.PricePerUnit ?? 0;
}

/**
 * The account's product catalog as objects of the API: one plan group, a plan and a monthly
 * variant per plan, the components. Contracts name them by PlanId, PlanVariantId, PlanGroupId;
 * invoices are priced from them. Catalog changes announce themselves with the catalog events
 * (PlanVariantChanged, ComponentChanged, ...).
 */
export class CatalogOperations {
  constructor(private readonly ctx: OperationContext) {}

  /** Creates the catalog objects (configuration that exists before any customer); no events. Idempotent. */
  create(): void {
    const { store } = this.ctx;
    if (store.get('PlanGroup', PLAN_GROUP.PlanGroupId)) return;
    store.create('PlanGroup', PLAN_GROUP.PlanGroupId, { Id: PLAN_GROUP.PlanGroupId, Name: localized(PLAN_GROUP.Name, PLAN_GROUP.NameDe) });
    for (const plan of PLANS) {
      store.create('Plan', plan.PlanId, planBody(plan));
      store.create('PlanVariant', plan.PlanVariantId, planVariantBody(plan));
    }
    for (const component of COMPONENTS) store.create('Component', component.ComponentId, componentBody(component));
  }

  /** A new price for a plan variant (PlanVariantChanged). Contracts on it are billed the new fee from their next period. */
  setRecurringFee(planIndex: number, fee: number): void {
    const plan = PLANS[planIndex];
    if (!plan) throw new RangeError(`no plan ${planIndex}`);
    this.ctx.store.update('PlanVariant', plan.PlanVariantId, (v) => {
      v.RecurringFee = money(fee);
    });
    this.ctx.emit({ Event: 'PlanVariantChanged', PlanVariantId: plan.PlanVariantId });
  }

  /** A new price per unit for a component (ComponentChanged). */
  setComponentPrice(componentIndex: number, price: number): void {
    const component = COMPONENTS[componentIndex];
    if (!component) throw new RangeError(`no component ${componentIndex}`);
    this.ctx.store.update('Component', component.ComponentId, (c) => {
      c.PricePerUnit = money(price);
    });
    this.ctx.emit({ Event: 'ComponentChanged', ComponentId: component.ComponentId });
  }

  /** Renames a plan (PlanChanged). */
  renamePlan(planIndex: number, name: string): void {
    const plan = PLANS[planIndex];
    if (!plan) throw new RangeError(`no plan ${planIndex}`);
    this.ctx.store.update('Plan', plan.PlanId, (p) => {
      p.Name = { ...(p.Name as ResourceBody), _c: name };
    });
    this.ctx.emit({ Event: 'PlanChanged', PlanId: plan.PlanId });
  }

  /**
   * A price rise, as an account does it now and then: every plan variant's fee and every
   * component's price go up by `fraction` (PlanVariantChanged, ComponentChanged per object).
   */
  raisePrices(fraction: number): void {
    PLANS.forEach((plan, i) => this.setRecurringFee(i, recurringFee(this.ctx.store, plan) * (1 + fraction)));
    COMPONENTS.forEach((component, i) => this.setComponentPrice(i, componentPrice(this.ctx.store, component.ComponentId) * (1 + fraction)));
  }

  /**
   * A plan launched as a beta, with its variant and an add-on component, that no contract uses
   * (PlanCreated, PlanVariantCreated, ComponentCreated). Returns the ids for `retire`.
   */
  launchBeta(name: string, fee: number): { planId: string; planVariantId: string; componentId: string } {
    const r = this.ctx.random;
    const plan: Plan = { PlanId: r.hexId(), PlanVariantId: r.hexId(), PlanGroupId: PLAN_GROUP.PlanGroupId, Name: name, NameDe: name, Price: money(fee), TrialDays: 0, TrialWarningDays: 0 };
    const component: Component = { ComponentId: r.hexId(), Name: `${name} add-on`, NameDe: `${name} Zusatz`, Unit: 'Seat', PricePerUnit: money(fee / 10) };
    this.ctx.store.create('Plan', plan.PlanId, planBody(plan));
    this.ctx.emit({ Event: 'PlanCreated', PlanId: plan.PlanId });
    this.ctx.store.create('PlanVariant', plan.PlanVariantId, planVariantBody(plan));
    this.ctx.emit({ Event: 'PlanVariantCreated', PlanVariantId: plan.PlanVariantId });
    this.ctx.store.create('Component', component.ComponentId, componentBody(component));
    this.ctx.emit({ Event: 'ComponentCreated', ComponentId: component.ComponentId });
    return { planId: plan.PlanId, planVariantId: plan.PlanVariantId, componentId: component.ComponentId };
  }

  /** Deletes what `launchBeta` created (PlanVariantDeleted, PlanDeleted, ComponentDeleted): their paths answer 404 from now on. */
  retire(beta: { planId: string; planVariantId: string; componentId: string }): void {
    this.ctx.store.delete('PlanVariant', beta.planVariantId);
    this.ctx.emit({ Event: 'PlanVariantDeleted', PlanVariantId: beta.planVariantId });
    this.ctx.store.delete('Plan', beta.planId);
    this.ctx.emit({ Event: 'PlanDeleted', PlanId: beta.planId });
    this.ctx.store.delete('Component', beta.componentId);
    this.ctx.emit({ Event: 'ComponentDeleted', ComponentId: beta.componentId });
  }
}
