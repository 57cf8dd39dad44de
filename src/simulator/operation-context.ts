import type { WebhookPayload } from './event-names.js';
import type { SeededRandom } from './seeded-random.js';
import type { ResourceBody, TruthStore } from './truth-store.js';

/** What the billing operations act on: the objects, simulated time, randomness, and the event outlet. */
export interface OperationContext {
  store: TruthStore;
  /** The scenario's generator: identifiers, names and amounts come from here, so a seed reproduces them. */
  random: SeededRandom;
  /** Simulated time. */
  now(): Date;
  /**
   * Records the event and hands it to the dispatcher. Call only after the state change it
   * announces is in the store: the receiver fetches on receipt.
   */
  emit(payload: WebhookPayload): void;
  /** Also send the deprecated AccountCreated next to ContractCreated, and the deprecated invoice ids in InvoiceCorrected. */
  legacyEvents: boolean;
  /**
   * Id of the account's payment escalation settings, the PaymentEscalationProcessId of
   * PaymentEscalated and of dunnings (the id names the legal entity's settings, not a process).
   */
  escalationSettingsId: string;
  /**
   * Component subscriptions per contract: bookkeeping of the simulator. The real service serves
   * them under `/contracts/{id}/ComponentSubscriptions`, not in the contract's body.
   */
  componentSubscriptions: Map<string, ResourceBody[]>;
}

export const DAY_MS = 86_400_000;

/** A timestamp as the service writes it: .NET style, seven fraction digits, `2025-03-01T10:00:00.0000000Z`. */
export function iso(date: Date): string {
  return date.toISOString().replace(/Z$/, '0000Z');
}

/** A date-only field (`DueDate`, `DocumentDate`): `YYYY-MM-DD`, the UTC date. */
export function dateOnly(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * DAY_MS);
}

/** Money with two decimals, as JSON numbers; never -0 (it serialises as 0, so a body would not round-trip). */
export function money(amount: number): number {
  const v = Math.round(amount * 100) / 100;
  return v === 0 ? 0 : v;
}
