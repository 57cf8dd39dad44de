import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { schemasDir } from '../registry/registry.js';
import { parseWebhook } from '../ingress/parse-webhook.js';
import { WEBHOOK_FIELDS } from './webhook-fields.js';
import { WEBHOOK_SCHEMA_FILE } from './schemas.js';
import { retryCountOf, toWebhookRecord } from './webhook-record.js';

const schemaJson = JSON.parse(readFileSync(join(schemasDir, WEBHOOK_SCHEMA_FILE), 'utf8')) as { fields: { name: string; type: unknown; default?: unknown }[] };
const type = avro.Type.forSchema(schemaJson as avro.Schema);

function record(body: string) {
  const parsed = parseWebhook(body);
  if (!parsed.ok) throw new Error(parsed.error);
  return toWebhookRecord(parsed.webhook, { eventId: 'e-1', receivedAtMs: 1_700_000_000_000, body });
}

describe('webhook record and schemas/webhook.avsc', () => {
  it('declares every known field as optional with a null default, and event as a plain string', () => {
    const byName = new Map(schemaJson.fields.map((f) => [f.name, f]));
    for (const field of WEBHOOK_FIELDS) {
      expect(byName.get(field.avro), field.avro).toEqual(expect.objectContaining({ type: ['null', field.kind === 'int' ? 'int' : 'string'], default: null }));
    }
    expect(byName.get('event')?.type).toBe('string');
    expect(byName.get('received_at')?.type).toEqual({ type: 'long', logicalType: 'timestamp-millis' });
  });

  it('builds records the schema accepts, and they round-trip through Avro', () => {
    const body = '{"event":"PaymentEscalated","CONTRACTID":"c1","TriggerDays":10,"Unknown":{"deep":[1]}}';
    const value = record(body);
    expect(type.isValid(value)).toBe(true);
    const decoded = type.fromBuffer(type.toBuffer(value)) as Record<string, unknown>;
    expect(decoded).toMatchObject({ event_id: 'e-1', event: 'PaymentEscalated', received_at: 1_700_000_000_000, body, contract_id: 'c1', trigger_days: 10, customer_id: null, extra_fields: '{"Unknown":{"deep":[1]}}' });
  });

  it('writes {} as extra_fields when every field is known', () => {
    expect(record('{"Event":"ContractChanged","ContractId":"c1"}').extra_fields).toBe('{}');
  });
});

describe('retryCountOf (the X-Retry-Count header of a redelivery)', () => {
  it('keeps a plain non-negative 32-bit count, and nothing else', () => {
    expect(retryCountOf('3')).toBe(3);
    expect(retryCountOf(' 12 ')).toBe(12);
    expect(retryCountOf(undefined)).toBeNull();
    expect(retryCountOf('')).toBeNull();
    expect(retryCountOf('-1')).toBeNull();
    expect(retryCountOf('1.5')).toBeNull();
    expect(retryCountOf('soon')).toBeNull();
    expect(retryCountOf('2147483648')).toBeNull();
  });

  it('goes into the record, which the schema accepts', () => {
    const parsed = parseWebhook('{"Event":"ContractChanged","ContractId":"c1","EntityId":"e1"}');
    if (!parsed.ok) throw new Error(parsed.error);
    const value = toWebhookRecord(parsed.webhook, { eventId: 'e-1', receivedAtMs: 0, body: '{}', retryCount: '2' });
    expect(value).toMatchObject({ entity_id: 'e1', retry_count: 2 });
    expect(type.isValid(value)).toBe(true);
  });
});
