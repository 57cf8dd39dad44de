/**
 * The broker errors on which kafkajs 2.2.4's consumer runner rejoins its group instead of retrying
 * a batch in place (`consumer/runner.js` with `isRebalancing` in `errors.js`, plus
 * UNKNOWN_MEMBER_ID, which makes it rejoin as a new member). A handler that meets one of these
 * gives the batch back by throwing it: the next generation reads the batch again from the
 * committed offset.
 */
const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID']);

export function isRebalanceError(err: unknown): boolean {
  const type = (err as { type?: unknown } | null | undefined)?.type;
  return typeof type === 'string' && REBALANCE_ERRORS.has(type);
}
