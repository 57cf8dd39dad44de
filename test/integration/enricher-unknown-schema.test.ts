import { afterAll, describe, expect, it } from 'vitest';
import { createHealth } from '../../src/health.js';
import { enricherGroupId, startEnricher } from '../../src/enricher/enricher.js';
import { createKafka, kafkaConnection } from '../../src/kafka/client.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createRegistry } from '../../src/registry/registry.js';
import { topicNames } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { groupLag, topicRecordCount } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A webhook record whose schema id the registry does not know (a wrong SCHEMA_REGISTRY_URL, a
 * wiped registry) is no fault of the webhook: the enricher's router holds the batch instead of
 * dead-lettering it, and says why where an operator looks: /readyz names the schema id and the
 * setting to check, and nothing is committed or sent to the DLQ.
 */
const running: Running[] = [];
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop()));
});

describe('enricher: the registry does not know the schema id of a webhook', () => {
  it('holds the webhook: not ready with the reason, nothing committed, nothing dead-lettered', async () => {
    const config = testConfig();
    const log = createLogger('error');
    const kafka = createKafka({ ...kafkaConnection(config), clientId: 'enricher-unknown-schema-test', log });
    const names = topicNames(config.topicPrefix);
    const health = createHealth();
    const reader = {
      getResource: () => Promise.reject(new Error('no read is expected: the webhook is never decoded')),
    };
    running.push(await startEnricher({ kafka, registry: createRegistry(config), reader, log, metrics: createMetrics(), health }, config));
    const producer = kafka.producer();
    await producer.connect();
    const unknownId = 0x7fffff00;
    await producer.send({ topic: names.webhooks, acks: -1, messages: [{ key: 'Contract:held', value: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]), Buffer.from('xx')]) }] });
    await producer.disconnect();

    const reason = await waitFor(async () => (await health.readiness()).checks['enricher.webhook-decode']?.reason, { what: 'the enricher not ready over the unknown schema id', timeoutMs: 60_000 });
    expect(reason).toMatch(new RegExp(`schema id ${unknownId}`));
    expect(reason).toMatch(/SCHEMA_REGISTRY_URL/);
    expect((await health.readiness()).ready).toBe(false);
    expect(await topicRecordCount(kafka, names.webhooksDlq)).toBe(0);
    expect(await groupLag(kafka, enricherGroupId(config.topicPrefix), names.webhooks)).toBe(1);
  }, 120_000);
});
