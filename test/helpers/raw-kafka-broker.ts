import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * kafkajs's own broker connection, for requests its public API does not make: a produce under a
 * transactional producer id that never told the coordinator (how a hanging transaction looks
 * from the partition), and offsets read uncommitted (the high watermark, past open transactions).
 * Test use only: it reaches into kafkajs's source, which the project pins (package-lock.json).
 */
const require = createRequire(import.meta.url);
const Broker = require('kafkajs/src/broker/index.js') as new (options: Record<string, unknown>) => RawBrokerApi;
const ConnectionPool = require('kafkajs/src/network/connectionPool.js') as new (options: Record<string, unknown>) => unknown;
const socketFactory = require('kafkajs/src/network/socketFactory.js') as () => unknown;

interface RawBrokerApi {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  initProducerId(request: { transactionalId: string; transactionTimeout: number }): Promise<{ producerId: number; producerEpoch: number }>;
  produce(request: Record<string, unknown>): Promise<unknown>;
  listOffsets(request: { isolationLevel: number; topics: { topic: string; partitions: { partition: number; timestamp: number }[] }[] }): Promise<{
    responses: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }>;
}

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const logger = { ...silent, namespace: () => logger };

export interface RawKafkaBroker {
  /**
   * Writes `values` to one partition as records of an open transaction of `transactionalId`'s
   * producer id, without AddPartitionsToTxn: the coordinator never learns of the partition, so no
   * marker ever closes them (a broker must run with transaction.partition.verification.enable=false
   * to take them). The producer's id and epoch are those InitProducerId hands out.
   */
  writeOrphanedTransaction(transactionalId: string, topic: string, partition: number, values: string[]): Promise<{ producerId: number; producerEpoch: number }>;
  /** Per partition: the end offset read committed (the last stable offset) and uncommitted (the high watermark). */
  endOffsets(topic: string, partitions: number[]): Promise<Map<number, { lastStable: bigint; high: bigint }>>;
  disconnect(): Promise<void>;
}

/** A connection to a single-node cluster's broker (`host:port`; all leaders and coordinators are on it). */
export async function connectRawBroker(address: string): Promise<RawKafkaBroker> {
  const [host, port] = address.split(':') as [string, string];
  const connectionPool = new ConnectionPool({ host, port: Number(port), logger, socketFactory: socketFactory(), requestTimeout: 30_000, connectionTimeout: 5_000, clientId: 'raw-kafka-broker' });
  const broker = new Broker({ connectionPool, logger });
  await broker.connect();
  const offsets = async (topic: string, partitions: number[], isolationLevel: number) => {
    const { responses } = await broker.listOffsets({ isolationLevel, topics: [{ topic, partitions: partitions.map((partition) => ({ partition, timestamp: -1 })) }] });
    return new Map((responses[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
  };
  return {
    async writeOrphanedTransaction(transactionalId, topic, partition, values) {
      const { producerId, producerEpoch } = await broker.initProducerId({ transactionalId, transactionTimeout: 60_000 });
      const produce = () =>
        broker.produce({
          transactionalId,
          producerId,
          producerEpoch,
          acks: -1,
          topicData: [{ topic, partitions: [{ partition, firstSequence: 0, messages: values.map((value) => ({ key: null, value })) }] }],
        });
      // A topic created a moment ago may not have its leader yet (NOT_LEADER_OR_FOLLOWER, retriable).
      for (let attempt = 1; ; attempt++) {
        try {
          await produce();
          return { producerId, producerEpoch };
        } catch (err) {
          if (attempt >= 20 || (err as { retriable?: boolean }).retriable !== true) throw err;
          await sleep(250);
        }
      }
    },
    async endOffsets(topic, partitions) {
      const committed = await offsets(topic, partitions, 1);
      const uncommitted = await offsets(topic, partitions, 0);
      return new Map(partitions.map((p) => [p, { lastStable: committed.get(p) ?? -1n, high: uncommitted.get(p) ?? -1n }]));
    },
    disconnect: () => broker.disconnect(),
  };
}
