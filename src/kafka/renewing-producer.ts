import type { Producer, ProducerBatch, RecordMetadata } from 'kafkajs';

/**
 * An idempotent producer that is replaced after a failed send. kafkajs rolls an idempotent
 * producer's sequence numbers back when a send fails, even when the request reached the log (an
 * answer lost to a broker restart); from then on the broker can refuse every send of that
 * producer id (OUT_OF_ORDER_SEQUENCE_NUMBER, not retriable), and a caller that retries with the
 * same producer never gets through. A new producer has a new producer id and fresh sequence
 * numbers: the worst case is a record written twice, never one refused forever.
 */
export interface RenewingProducer {
  /** Sends with the current producer (connecting it first); on failure, replaces it and rethrows. */
  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]>;
  disconnect(): Promise<void>;
}

export function createRenewingProducer(create: () => Producer): RenewingProducer {
  let current: Promise<Producer> | undefined;
  const connected = (): Promise<Producer> => {
    if (!current) {
      const producer = create();
      const connecting = producer.connect().then(() => producer);
      connecting.catch(() => {
        if (current === connecting) current = undefined;
      });
      current = connecting;
    }
    return current;
  };
  return {
    async sendBatch(batch) {
      const used = connected();
      const producer = await used;
      try {
        return await producer.sendBatch(batch);
      } catch (err) {
        // Sends of other callers still in flight on it fail too, and their retries get the new one.
        if (current === used) current = undefined;
        await producer.disconnect().catch(() => undefined);
        throw err;
      }
    },
    async disconnect() {
      const used = current;
      current = undefined;
      if (used) await (await used.catch(() => undefined))?.disconnect();
    },
  };
}
