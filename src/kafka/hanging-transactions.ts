import type { Kafka, Transaction } from 'kafkajs';

/** Partitions of one topic, as kafkajs's transaction takes them. */
export interface TopicPartitions {
  topic: string;
  partitions: { partition: number }[];
}

/**
 * Adds `closing` to a transaction without writing a record there (kafkajs patch 005,
 * `transaction.addPartitions`). The transaction's marker is then written to each of those
 * partitions with the producer's id and its current epoch, and a marker of a producer id closes
 * every record of that id still open in the partition, whatever epoch wrote it.
 *
 * That is the one way a client can end a hanging transaction: records of its producer id in a
 * partition whose markers were never written, so the coordinator will never write them either,
 * nor time them out. The partition's last stable offset stays below them for good, and a
 * read-committed consumer sees nothing after them. Kafka has been seen to leave one when a broker
 * stopped right after acknowledging a commit (docs/ARCHITECTURE.md, "Hanging transactions").
 * Committing closes the records as committed, which is what their transaction was acknowledged
 * as; a transaction the coordinator knew of was aborted or committed by it already, by the fence
 * that precedes this (fencePreviousOwner).
 */
export async function closeHangingTransactions(transaction: Transaction, closing: TopicPartitions[]): Promise<void> {
  const topics = closing.filter((t) => t.partitions.length > 0);
  if (topics.length > 0) await transaction.addPartitions(topics);
}

/** Every partition of `topics`, read from the cluster's metadata now (a topic's count can grow). */
export async function allPartitions(kafka: Kafka, topics: string[]): Promise<TopicPartitions[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics });
    return metadata.topics.map((t) => ({ topic: t.name, partitions: t.partitions.map((p) => ({ partition: p.partitionId })) }));
  } finally {
    await admin.disconnect();
  }
}
