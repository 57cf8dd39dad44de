import { PERIOD_DAYS, type BillingOperations, type Signup } from './billing-operations.js';
import type { CatalogOperations } from './catalog-operations.js';
import { PLANS } from './catalog.js';
import { addDays } from './operation-context.js';
import type { PaymentOperations } from './payment-operations.js';
import type { SeededRandom } from './seeded-random.js';

/** What a story uses to plan its customer's life: actions at days after the story's start. */
export interface StoryPlanner {
  /** Runs `action` `day` simulated days after the story starts. */
  at(day: number, action: () => void): void;
  /** Days from the story's start to the end of the simulated history; undefined: the history has no end. */
  horizonDays: number | undefined;
  billing: BillingOperations;
  payments: PaymentOperations;
  catalog: CatalogOperations;
  random: SeededRandom;
  /** Simulated time, when the action runs. */
  now(): Date;
}

export type Story = (p: StoryPlanner) => void;

/** A billing period closes: RecurringBillingApproaching, the invoice, and a payment attempt. */
function billingCycle(p: StoryPlanner, contractId: string, paymentSucceeds: boolean): string {
  p.payments.endBillingPeriod(contractId);
  const invoiceId = p.payments.bill(contractId);
  p.payments.collect(contractId, invoiceId, paymentSucceeds);
  return invoiceId;
}

/**
 * Billing cycles every period from `firstDay`: at least `count` of them, and, when the history
 * has an end, every further period until it (a paid contract is billed every period).
 */
function billEveryPeriod(p: StoryPlanner, firstDay: number, count: number, contractId: () => string, succeeds: (n: number) => boolean = () => true): void {
  for (let n = 0, day = firstDay; n < count || (p.horizonDays !== undefined && day <= p.horizonDays); n++, day += PERIOD_DAYS) {
    p.at(day, () => billingCycle(p, contractId(), succeeds(n)));
  }
}

/** Trial, conversion, paid periods, an upgrade, a component, a portal edit, an ERP id. */
export const trialToPaid: Story = (p) => {
  const plan = p.random.int(0, 1);
  const { TrialDays: trial, TrialWarningDays: warn } = PLANS[plan]!;
  let s: Signup | undefined;
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan, trial: true, bearer: 'card' })));
  p.at(trial - warn, () => p.billing.warnTrialEnd(id().contractId));
  p.at(trial, () => p.billing.endTrial(id().contractId));
  p.at(trial + 20, () => p.billing.changeContractData(id().contractId));
  p.at(trial + 36, () => p.billing.changePlan(id().contractId, 2));
  p.at(trial + 40, () => p.billing.addComponent(id().contractId, p.random.int(0, 1), p.random.int(1, 5)));
  p.at(trial + 45, () => p.billing.changeCustomer(id().customerId));
  billEveryPeriod(p, trial + 30, 2, () => id().contractId);
};

/**
 * A failed payment escalates at 5 and 10 days (dunning, lock, payment process stopped); paying
 * the oldest invoice makes the next step count from a younger one (TriggerDays 5 again); paying
 * the rest resets the escalation automatically.
 */
export const escalation: Story = (p) => {
  let s: Signup | undefined;
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan: p.random.int(0, 2), trial: false, bearer: 'debit' })));
  p.at(30, () => billingCycle(p, id().contractId, false));
  p.at(35, () => p.payments.escalate(id().contractId));
  p.at(40, () => {
    p.payments.escalate(id().contractId);
    p.payments.createDunning(id().contractId);
    p.billing.setCustomerLocked(id().customerId, true);
    p.payments.setPaymentProcess(id().contractId, false);
  });
  p.at(60, () => {
    // The payment process is stopped: the invoice is issued, no payment is attempted.
    p.payments.endBillingPeriod(id().contractId);
    p.payments.bill(id().contractId);
  });
  p.at(61, () => p.payments.registerPayment(id().contractId, 1));
  p.at(65, () => p.payments.escalate(id().contractId));
  p.at(68, () => {
    p.payments.registerPayment(id().contractId);
    p.billing.setCustomerLocked(id().customerId, false);
    p.payments.setPaymentProcess(id().contractId, true);
  });
  billEveryPeriod(p, 90, 1, () => id().contractId);
};

/** A card that expires: warning, expiry, a new card, then a successful period. */
export const cardExpiry: Story = (p) => {
  let s: Signup | undefined;
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan: p.random.int(0, 2), trial: false, bearer: 'card', cardExpiry: addDays(p.now(), 28) })));
  p.at(21, () => p.payments.bearerExpiring(id().contractId));
  p.at(28, () => p.payments.bearerExpired(id().contractId));
  p.at(29, () => p.billing.replaceBearer(id().contractId, 'card'));
  billEveryPeriod(p, 30, 1, () => id().contractId);
};

/** A revoked debit mandate and a new one, an invoice corrected, a downgrade, a component removed. */
export const debitRevoked: Story = (p) => {
  let s: Signup | undefined;
  let invoiceId = '';
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan: 2, trial: false, bearer: 'debit', components: [[0, p.random.int(2, 6)]] })));
  p.at(10, () => p.payments.cancelDebitAuth(id().contractId));
  p.at(12, () => p.billing.replaceBearer(id().contractId, 'debit'));
  p.at(30, () => (invoiceId = billingCycle(p, id().contractId, true)));
  p.at(33, () => p.payments.correctInvoice(invoiceId));
  p.at(40, () => p.billing.changePlan(id().contractId, p.random.int(0, 1)));
  p.at(42, () => p.billing.removeComponent(id().contractId));
  billEveryPeriod(p, 60, 1, () => id().contractId);
};

/**
 * Cancelled during the trial: the contract ends with the trial; a month later the customer asks
 * to be deleted (its contract is deleted with it).
 */
export const churn: Story = (p) => {
  const plan = p.random.int(0, 1);
  const trial = PLANS[plan]!.TrialDays;
  let s: Signup | undefined;
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan, trial: true })));
  p.at(5, () => p.billing.cancel(id().contractId, trial - 5));
  p.at(trial, () => p.billing.endContract(id().contractId));
  p.at(trial + 30, () => p.billing.deleteCustomer(id().customerId));
};

/**
 * A manual escalation reset, a cancellation with a 30-day notice period, and a card expiry
 * warning for the ended contract (spec 6.2: also sent for ended contracts).
 */
export const manualResetAndNotice: Story = (p) => {
  let s: Signup | undefined;
  const id = () => s!;
  p.at(0, () => (s = p.billing.signup({ plan: p.random.int(0, 2), trial: false, bearer: 'card', cardExpiry: addDays(p.now(), 100) })));
  p.at(30, () => billingCycle(p, id().contractId, false));
  p.at(35, () => p.payments.escalate(id().contractId));
  p.at(37, () => p.payments.resetEscalation(id().contractId));
  p.at(38, () => p.payments.registerPayment(id().contractId));
  p.at(45, () => p.billing.cancel(id().contractId, 30));
  p.at(60, () => billingCycle(p, id().contractId, true));
  p.at(75, () => p.billing.endContract(id().contractId));
  p.at(93, () => p.payments.bearerExpiring(id().contractId));
};

/** Just a signup. */
export const signupOnly: Story = (p) => {
  p.at(0, () => p.billing.signup());
};

/** The default scenario's stories; together they send every event of spec 6.2. */
export const DEFAULT_STORIES: readonly Story[] = [trialToPaid, escalation, cardExpiry, debitRevoked, churn, manualResetAndNotice];
