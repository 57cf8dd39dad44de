/**
 * Group membership timeouts of the consumers whose batches take seconds (the router, the delay
 * forwarder, the sink); the fetcher sets its own from its configured session timeout.
 *
 * A member that stops heartbeating is dropped after the session timeout. In a rebalance, the
 * coordinator waits up to the longest rebalance timeout among the members for each known member
 * to join again; kafkajs's default is 60 s. After a crash or a rolling restart the coordinator
 * can still list a member id that no process holds (a consumer that failed its start, or the
 * process that was restarted): every other member's JoinGroup then waited up to a minute, and a
 * router stayed out of its group for over a minute. These consumers rejoin within seconds, their
 * batches being short (the sink gives a batch back when a rebalance starts, batch-handler.ts), so
 * a rebalance timeout below the session timeout bounds that wait without dropping a live member.
 */
export const GROUP_TIMEOUTS = Object.freeze({
  sessionTimeout: 30_000,
  rebalanceTimeout: 20_000,
  heartbeatInterval: 3000,
});
