/** The files in schemas/ that describe the values of the pipeline's Avro topics. */
export const WEBHOOK_SCHEMA_FILE = 'webhook.avsc';
export const SNAPSHOT_SCHEMA_FILE = 'resource-snapshot.avsc';
/** The earlier dead-letter format (read by billing-loader dlq, no longer written; src/wire/dead-letter.ts). */
export const DEAD_LETTER_SCHEMA_FILE = 'dead-letter.avsc';

/** The registry subject of a topic's values (TopicNameStrategy, as every Confluent-compatible client expects). */
export const valueSubject = (topic: string) => `${topic}-value`;
