import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

const TOKEN = 'test-token-0123456789abcdef';
let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress({}, { INGRESS_TOKEN: TOKEN, INGRESS_MAX_BODY_BYTES: '1024' });
});
afterAll(async () => {
  await t?.stop();
});

const path = `/webhooks/${TOKEN}`;

// Each case: what is sent, the status docs/CONTRACT.md section 3 gives it, and a word the error must name.
const cases: { name: string; body: string; status: number; error: RegExp; contentType?: string | null; path?: string }[] = [
  { name: 'malformed JSON', body: '{"Event": "ContractChanged", ', status: 400, error: /not valid JSON/ },
  { name: 'a JSON array', body: '[{"Event":"ContractChanged","ContractId":"c1"}]', status: 400, error: /JSON object, got an array/ },
  { name: 'a JSON scalar', body: '"ContractChanged"', status: 400, error: /JSON object, got a string/ },
  { name: 'missing Event', body: '{"ContractId":"c1"}', status: 400, error: /missing field Event/ },
  { name: 'non-string Event', body: '{"Event":["ContractChanged"]}', status: 400, error: /Event must be a string/ },
  { name: 'a numeric identifier', body: '{"Event":"ContractChanged","ContractId":42}', status: 400, error: /ContractId must be a string, got a number/ },
  { name: 'an object identifier', body: '{"Event":"CustomerChanged","customerId":{"id":"k1"}}', status: 400, error: /CustomerId must be a string, got an object/ },
  { name: 'a null identifier', body: '{"Event":"OrderSucceeded","ContractId":"c1","OrderId":null}', status: 400, error: /OrderId must be a string, got null/ },
  { name: 'an empty identifier', body: '{"Event":"InvoiceCorrected","OldInvoiceDraftId":"","NewInvoiceDraftId":"d2"}', status: 400, error: /OldInvoiceDraftId must not be empty/ },
  { name: 'a numeric deprecated identifier', body: '{"Event":"InvoiceCorrected","OldInvoiceId":5,"NewInvoiceDraftId":"d2"}', status: 400, error: /OldInvoiceId must be a string, got a number/ },
  { name: 'an empty Event', body: '{"Event":"","ContractId":"c1"}', status: 400, error: /Event must not be empty/ },
  { name: 'an identifier over 256 characters', body: JSON.stringify({ Event: 'ContractChanged', ContractId: 'c'.repeat(257) }), status: 400, error: /longer than 256/ },
  { name: 'an identifier with a control character', body: JSON.stringify({ Event: 'ContractChanged', ContractId: 'c1\u0007' }), status: 400, error: /control characters/ },
  { name: 'invalid UTF-8', body: '', status: 400, error: /not valid UTF-8/ },
  { name: 'a body over the limit', body: JSON.stringify({ Event: 'ContractChanged', ContractId: 'c1', Padding: 'x'.repeat(2000) }), status: 413, error: /larger than 1024 bytes/ },
  { name: 'a body of 4 MiB', body: JSON.stringify({ Event: 'ContractChanged', ContractId: 'c1', Padding: 'x'.repeat(4 * 1024 * 1024) }), status: 413, error: /larger than 1024 bytes/ },
  { name: 'a text/plain content type', body: '{"Event":"ContractChanged","ContractId":"c1"}', status: 415, error: /application\/json/, contentType: 'text/plain' },
  { name: 'no content type', body: '{"Event":"ContractChanged","ContractId":"c1"}', status: 415, error: /application\/json/, contentType: null },
  { name: 'a form content type', body: 'Event=ContractChanged', status: 415, error: /application\/json/, contentType: 'application/x-www-form-urlencoded' },
  { name: 'a wrong token', body: '{"Event":"ContractChanged","ContractId":"c1"}', status: 404, error: /not found/, path: `/webhooks/${TOKEN.slice(0, -1)}x` },
  { name: 'a missing token', body: '{"Event":"ContractChanged","ContractId":"c1"}', status: 404, error: /not found/, path: '/webhooks' },
  { name: 'a token of another length', body: '{"Event":"ContractChanged","ContractId":"c1"}', status: 404, error: /not found/, path: `/webhooks/${TOKEN}0` },
];

describe('ingress: bad input gets its status and writes nothing', () => {
  it.each(cases)('$name: $status', async (c) => {
    const answer =
      c.name === 'invalid UTF-8'
        ? await rawPost(Buffer.from([0x7b, 0x22, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]))
        : await t.post(c.body, { path: c.path ?? path, contentType: c.contentType });
    expect(answer.status).toBe(c.status);
    expect(answer.body.error).toMatch(c.error);
    expect(await t.recordCount()).toBe(0);
  });

  it('still writes a good webhook after all that (so the zero counts above mean something)', async () => {
    const answer = await t.post({ Event: 'ContractChanged', ContractId: 'c1' }, { path });
    expect(answer.status).toBe(200);
    expect(await t.recordCount()).toBe(1);
    const metrics = await t.metrics.getSingleMetricAsString('billing_loader_ingress_requests_total');
    for (const status of ['400', '404', '413', '415']) expect(metrics).toMatch(new RegExp(`status="${status}"} [1-9]`));
  });

  // These skip the ingress's fast path (src/ingress/webhook-path.ts) and reach the handler through Express.
  it('takes the other spellings of the path Express matches: a percent-encoded token, a trailing slash', async () => {
    const before = await t.recordCount();
    const encoded = `/webhooks/%${TOKEN.charCodeAt(0).toString(16)}${TOKEN.slice(1)}`;
    expect((await t.post({ Event: 'ContractChanged', ContractId: 'c2' }, { path: encoded })).status).toBe(200);
    expect((await t.post({ Event: 'ContractChanged', ContractId: 'c3' }, { path: `${path}/` })).status).toBe(200);
    const wrong = await t.post({ Event: 'ContractChanged', ContractId: 'c4' }, { path: `/webhooks/%78${TOKEN.slice(1)}` });
    expect(wrong).toEqual({ status: 404, body: { error: 'not found' } });
    expect(await t.recordCount()).toBe(before + 2);
  });
});

// The loader reads only Event and the identifiers. Any other field, whatever its value, is kept
// and never refused: a refused webhook is retried about a dozen times and then dropped (spec 6.1).
describe('ingress: fields the loader does not read never cause a refusal', () => {
  const odd: [string, unknown][] = [];
  for (const name of ['YourCustomerId', 'PaymentProvider', 'ExpiryDate', 'DueDate', 'TriggerDays']) {
    for (const value of [null, 42, 2.5, { nested: ['x'] }, '', true]) odd.push([name, value]);
  }

  it('answers 200 for each of those fields null, a number, an object, empty..., and keeps the value as received', async () => {
    const sent: { name: string; value: unknown; body: string; eventId?: string }[] = [];
    for (const [name, value] of odd) {
      const body = `{"Event":"PaymentEscalated", "ContractId":"c-odd", "${name}": ${JSON.stringify(value)}}`;
      const answer = await t.post(body, { path });
      expect(answer.status, `${name} = ${JSON.stringify(value)}`).toBe(200);
      sent.push({ name, value, body, eventId: answer.body.event_id });
    }
    const stored = new Map((await t.readAll()).map((r) => [r.value.event_id, r]));
    for (const { name, value, body, eventId } of sent) {
      const record = stored.get(eventId as string);
      const what = `${name} = ${JSON.stringify(value)}`;
      expect(record?.value.body, what).toBe(body);
      expect(record?.key, what).toBe('Contract:c-odd');
      const avro = name.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toLowerCase();
      // The named field holds a value of its Avro type; anything else goes to extra_fields under its own name.
      const fits = name === 'TriggerDays' ? value === 42 : typeof value === 'string';
      expect((record?.value as unknown as Record<string, unknown>)[avro], what).toEqual(fits ? value : null);
      expect(JSON.parse(record?.value.extra_fields as string), what).toEqual(fits ? {} : { [name]: value });
    }
  });

  it('takes an empty or null deprecated invoice id as absent: 200, the drafts still the identifiers', async () => {
    const body = '{"Event":"InvoiceCorrected","OldInvoiceId":"","NewInvoiceId":null,"OldInvoiceDraftId":"d1","NewInvoiceDraftId":"d2"}';
    const answer = await t.post(body, { path });
    expect(answer.status).toBe(200);
    const stored = (await t.readAll()).find((r) => r.value.event_id === answer.body.event_id);
    expect(stored?.value).toMatchObject({ body, old_invoice_id: null, new_invoice_id: null, old_invoice_draft_id: 'd1', new_invoice_draft_id: 'd2' });
    expect(stored?.key).toBe('InvoiceDraft:d1');
    expect(JSON.parse(stored?.value.extra_fields as string)).toEqual({ OldInvoiceId: '', NewInvoiceId: null });
  });
});

async function rawPost(body: Buffer) {
  const res = await fetch(`${t.ingress.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, body: (await res.json()) as { error?: string } };
}
