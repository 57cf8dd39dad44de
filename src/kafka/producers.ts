import type { Kafka, Producer } from 'kafkajs';
import { EOS_RETRY, defaultPartitioner } from './client.js';

/**
 * A producer with kafkajs's idempotence rules: acks -1, retries unbounded (EOS_RETRY), one
 * request in flight per broker, and the murmur2 partitioner every stage keys by.
 */
export function createIdempotentProducer(kafka: Kafka): Producer {
  return kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner, retry: EOS_RETRY });
}

/** An idempotent producer bound to a transactional id: a new one with the same id fences the old (see fencePreviousOwner). */
export function createTransactionalProducer(kafka: Kafka, transactionalId: string): Producer {
  return kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner, retry: EOS_RETRY });
}
