import type { Consumer } from 'kafkajs';
import { errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import type { Logger } from '../log.js';
import { backoffDelayMs } from '../retry.js';
import { commitPastMarkers } from './commit-past-markers.js';

export interface SupervisedConsumer {
  /** The consumer instance running now (it changes after a replacement). */
  current(): Consumer;
  /**
   * Replaces the running instance now (the stall watchdog's cure). The old one is disconnected,
   * waiting at most RESTART_DISCONNECT_MS: a batch handler that never returns holds kafkajs's
   * disconnect for ever, and its member then leaves the group when its session times out.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** How long a restart waits for the old instance to disconnect before starting the new one. */
export const RESTART_DISCONNECT_MS = 10_000;

export interface SupervisedConsumerOptions {
  /** Health condition name; set while the consumer is down, cleared when it joins its group. */
  name: string;
  create: () => Consumer;
  /** Registers the instance's event handlers, connects, subscribes and runs it. */
  start: (consumer: Consumer) => Promise<void>;
  log: Logger;
  health: Health;
  /** Longest wait between replacements, in ms. Default 30000. */
  maxDelayMs?: number;
}

/**
 * Keeps a consumer running. kafkajs restarts a consumer only after a retriable error; some
 * failures during a broker outage are not (e.g. "Failed to find group coordinator" while the
 * group rejoins), and then the consumer stays stopped while the process looks alive: the
 * pipeline stalls with nothing in any log after the crash (found by the broker-restart fault
 * test). Here such a crash replaces the instance, with backoff, until it joins its group again;
 * and each instance commits past batches of nothing but markers (commit-past-markers.ts);
 * /readyz says so meanwhile. Offsets were only ever committed after the work they cover, so the
 * new instance resumes exactly where the old one safely stopped.
 */
export async function startSupervisedConsumer(options: SupervisedConsumerOptions): Promise<SupervisedConsumer> {
  let consumer = options.create();
  let stopped = false;
  let attempt = 0;

  const launch = async (c: Consumer) => {
    commitPastMarkers(c, options.log);
    c.on(c.events.GROUP_JOIN, () => {
      attempt = 0;
      options.health.setCondition(options.name, undefined);
    });
    c.on(c.events.CRASH, ({ payload }) => {
      if (payload.restart || stopped || c !== consumer) return;
      options.health.setCondition(options.name, `consumer stopped (${errorMessage(payload.error)}); replacing it`);
      options.log.error('consumer stopped without a restart, replacing it', { consumer: options.name, err: payload.error });
      replace();
    });
    await options.start(c);
  };

  const replace = () => {
    const delay = backoffDelayMs(attempt++, 500, options.maxDelayMs ?? 30_000);
    setTimeout(() => {
      if (stopped) return;
      void (async () => {
        await consumer.disconnect().catch(() => undefined);
        consumer = options.create();
        try {
          await launch(consumer);
        } catch (err) {
          options.log.warn('replacement consumer failed to start, retrying', { consumer: options.name, err: errorMessage(err) });
          replace();
        }
      })();
    }, delay).unref();
  };

  await launch(consumer);
  return {
    current: () => consumer,
    async restart() {
      if (stopped) return;
      const old = consumer;
      consumer = options.create();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([old.disconnect().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, RESTART_DISCONNECT_MS)))]);
      clearTimeout(timer);
      if (stopped) return;
      try {
        await launch(consumer);
      } catch (err) {
        options.log.warn('replacement consumer failed to start, retrying', { consumer: options.name, err: errorMessage(err) });
        replace();
      }
    },
    async stop() {
      stopped = true;
      await consumer.disconnect();
    },
  };
}
