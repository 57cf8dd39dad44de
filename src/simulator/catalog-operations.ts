import { COMPONENTS, PLANS } from './catalog.js';
import { money, type OperationContext } from './operation-context.js';
import type { ResourceBody } from './truth-store.js';

/**
 * The account's product catalog as objects of the API, in the documented shapes
 * (docs/CONTRACT.md, "Catalog"): one plan group, a plan and a monthly variant per plan of
 * catalog.ts, its components. A minimal catalog: the plan changes of the scenario do not use it.
 * Catalog changes announce themselves with the catalog events (PlanChanged, PlanVariantChanged,
 * PlanCreated, ...), whose id fields are assumed (`PlanId`, `PlanVariantId`, `ComponentId`).
 */
export const PLAN_GROUP_ID = '5f1a0c3e9b7d4a2e8c6f0a01';

const MONTH = { Unit: 'Month', Quantity: 1 };

/** A localizable name: the default under `_c` (shape assumed). */
const localized = (name: string): ResourceBody => ({ _c: name });

function planBody(id: string, name: string, trialDays: number): ResourceBody {
  return { Id: id, PlanGroupId: PLAN_GROUP_ID, Name: localized(name), TrialPeriod: trialDays > 0 ? { Unit: 'Day', Quantity: trialDays } : null, TrialEndPolicy: 'NoAction' };
}

function planVariantBody(id: string, planId: string, name: string, fee: number): ResourceBody {
  return { Id: id, PlanId: planId, InternalName: `${name} monthly`, RecurringFee: fee, SetupFee: 0, FeePeriod: MONTH, BillingPeriod: MONTH, ContractPeriod: MONTH, CancellationPeriod: { Unit: 'Day', Quantity: 30 } };
}

function componentBody(id: string, name: string, price: number): ResourceBody {
  return { Id: id, PlanGroupId: PLAN_GROUP_ID, Name: localized(name), ComponentType: 'Quantity', Unit: 'Unit', PricePerUnit: price, FeePeriod: MONTH, ExternalId: `COMP-${id.slice(-4).toUpperCase()}` };
}

export class CatalogOperations {
  constructor(private readonly ctx: OperationContext) {}

  /** Creates the catalog objects (configuration that exists before any customer); no events. Idempotent. */
  create(): void {
    const { store } = this.ctx;
    if (store.get('PlanGroup', PLAN_GROUP_ID)) return;
    store.create('PlanGroup', PLAN_GROUP_ID, { Id: PLAN_GROUP_ID, Name: localized('Subscriptions') });
    for (const plan of PLANS) {
      store.create('Plan', plan.PlanId, planBody(plan.PlanId, plan.Name, plan.TrialDays));
      store.create('PlanVariant', plan.PlanVariantId, planVariantBody(plan.PlanVariantId, plan.PlanId, plan.Name, plan.Price));
    }
    for (const c of COMPONENTS) store.create('Component', c.ComponentId, componentBody(c.ComponentId, c.Name, c.PricePerUnit));
  }

  /** A new price for a plan variant (PlanVariantChanged). */
  setRecurringFee(planIndex: number, fee: number): void {
    const plan = PLANS[planIndex];
    if (!plan) throw new RangeError(`no plan ${planIndex}`);
    this.ctx.store.update('PlanVariant', plan.PlanVariantId, (v) => {
      v.RecurringFee = money(fee);
    });
    this.ctx.emit({ Event: 'PlanVariantChanged', PlanVariantId: plan.PlanVariantId });
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

  /** A new plan with its variant and a component (PlanCreated, PlanVariantCreated, ComponentCreated). */
  launchBeta(name: string, fee: number): { planId: string; planVariantId: string; componentId: string } {
    const r = this.ctx.random;
    const ids = { planId: r.hexId(), planVariantId: r.hexId(), componentId: r.hexId() };
    this.ctx.store.create('Plan', ids.planId, planBody(ids.planId, name, 0));
    this.ctx.emit({ Event: 'PlanCreated', PlanId: ids.planId });
    this.ctx.store.create('PlanVariant', ids.planVariantId, planVariantBody(ids.planVariantId, ids.planId, name, money(fee)));
    this.ctx.emit({ Event: 'PlanVariantCreated', PlanVariantId: ids.planVariantId });
    this.ctx.store.create('Component', ids.componentId, componentBody(ids.componentId, `${name} add-on`, money(fee / 10)));
    this.ctx.emit({ Event: 'ComponentCreated', ComponentId: ids.componentId });
    return ids;
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
