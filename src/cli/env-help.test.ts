import { describe, expect, it } from 'vitest';
import { environmentHelp } from './env-help.js';

describe('environmentHelp', () => {
  it('lists the Kafka and registry access settings wherever a command names the Kafka brokers or the registry', () => {
    const kafkaOnly = environmentHelp(['KAFKA_BROKERS', 'TOPIC_PREFIX']);
    for (const v of ['KAFKA_SSL', 'KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD']) expect(kafkaOnly).toContain(`  ${v} `);
    expect(kafkaOnly).not.toContain('SCHEMA_REGISTRY_USERNAME');
    const both = environmentHelp(['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL']);
    for (const v of ['SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD', 'SCHEMA_REGISTRY_CA_FILE']) expect(both).toContain(`  ${v} `);
    expect(environmentHelp(['DATABASE_URL'])).not.toContain('KAFKA_SSL');
  });
});
