import { request as httpRequest } from 'node:http';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { quoteIdent } from '../../src/db/pool.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { topicNames } from '../../src/wire/topics.js';
import type { RunningPipeline } from '../../src/pipeline.js';
import type { Registry } from '../../src/registry/registry.js';
import type { Simulator } from '../../src/simulator/simulator.js';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';
import { drainPipeline, readAllDeadLetters, topicRecordCount } from '../helpers/pipeline-drain.js';
import { canonical, compareWarehouseToTruth } from '../helpers/warehouse-truth.js';
import { startRecordingServer, type RecordingServer } from './billing-api-recording-server.js';

/**
 * Malformed and hostile webhooks POSTed to the real ingress of a running pipeline (docs/CONTRACT.md
 * properties 7, 8, 9): each gets the answer docs/INGRESS.md gives it with an `{"error": ...}`
 * body; none stops a component (readiness stays green and a real signup still flows into the
 * warehouse afterwards); none writes a false version; and a path-hostile identifier fetches only
 * that literal identifier, as one encoded path segment. The API is reached through a recording
 * proxy in front of the simulator, which keeps the raw request targets.
 */
let run: SimulatedPipeline;
let config: Config;
let pool: pg.Pool;
let kafka: Kafka;
let registry: Registry;
let sim: Simulator;
let proxy: RecordingServer;
let pipeline: RunningPipeline;

beforeAll(async () => {
  run = await startSimulatedPipeline({
    name: 'bad-input-sweep-test',
    sim: { seed: 31, delivery: { retryBaseDelayMs: 100 } },
    maxConcurrency: 8,
    // Through a proxy that records the raw request paths.
    frontApi: async (sandboxUrl) => (proxy = await startRecordingProxy(new URL(sandboxUrl))),
  });
  ({ config, pool, kafka, registry, sim, pipeline } = run);
}, 120_000);

afterAll(async () => {
  await run?.stop();
});

/** Forwards the raw request target untouched (node:http, not fetch: a WHATWG URL would resolve dot segments). */
function startRecordingProxy(upstream: URL): Promise<RecordingServer> {
  return startRecordingServer(
    (req, res) =>
      new Promise<void>((resolve, reject) => {
        const headers = { ...req.headers, host: upstream.host };
        const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.once('end', resolve);
        });
        forward.once('error', reject);
        forward.end(req.body);
      }),
  );
}

interface Answer {
  status: number;
  body: { error?: unknown; event_id?: unknown };
}

async function post(body: string | Buffer, options: { contentType?: string | null; path?: string; method?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  const type = options.contentType === undefined ? 'application/json' : options.contentType;
  if (type !== null) headers['content-type'] = type;
  const res = await fetch(`${pipeline.ingress.url}${options.path ?? '/webhooks'}`, { method: options.method ?? 'POST', headers, body: options.method === 'GET' ? undefined : body });
  const text = await res.text();
  let parsed: Answer['body'];
  try {
    parsed = JSON.parse(text) as Answer['body'];
  } catch {
    parsed = { error: `(not JSON) ${text.slice(0, 200)}` };
  }
  return { status: res.status, body: parsed };
}

const json = (value: unknown) => JSON.stringify(value);
const changed = (id: string) => json({ Event: 'ContractChanged', ContractId: id });

/** Refused: the documented 4xx, an {"error": ...} body naming the problem, nothing written. */
const refused: { name: string; body: string | Buffer; status: number; error: RegExp; contentType?: string | null; path?: string; method?: string }[] = [
  { name: 'malformed JSON', body: '{"Event": "ContractChanged", ', status: 400, error: /JSON/ },
  { name: 'a JSON array', body: '[{"Event":"ContractChanged","ContractId":"c1"}]', status: 400, error: /object/ },
  { name: 'a JSON string', body: '"ContractChanged"', status: 400, error: /object/ },
  { name: 'JSON null', body: 'null', status: 400, error: /object/ },
  { name: 'an empty body', body: '', status: 400, error: /JSON/ },
  { name: 'missing Event', body: json({ ContractId: 'c1' }), status: 400, error: /Event/ },
  { name: 'a numeric Event', body: json({ Event: 7, ContractId: 'c1' }), status: 400, error: /Event/ },
  { name: 'an empty Event', body: json({ Event: '', ContractId: 'c1' }), status: 400, error: /Event/ },
  { name: 'an Event over 256 characters', body: json({ Event: 'E'.repeat(257) }), status: 400, error: /256/ },
  { name: 'a numeric identifier', body: json({ Event: 'ContractChanged', ContractId: 42 }), status: 400, error: /ContractId/ },
  { name: 'a huge numeric identifier', body: '{"Event":"ContractChanged","ContractId":1e400}', status: 400, error: /ContractId/ },
  { name: 'an object identifier', body: json({ Event: 'CustomerChanged', CustomerId: { $ne: null } }), status: 400, error: /CustomerId/ },
  { name: 'an array identifier', body: json({ Event: 'ContractChanged', ContractId: ['a', 'b'] }), status: 400, error: /ContractId/ },
  { name: 'a null identifier', body: json({ Event: 'OrderSucceeded', ContractId: 'c1', OrderId: null }), status: 400, error: /OrderId/ },
  { name: 'an empty identifier', body: json({ Event: 'ContractChanged', ContractId: '' }), status: 400, error: /ContractId/ },
  { name: 'a numeric deprecated identifier', body: json({ Event: 'InvoiceCorrected', OldInvoiceId: 5, NewInvoiceDraftId: 'd2' }), status: 400, error: /OldInvoiceId/ },
  { name: 'an identifier over 256 characters', body: changed('c'.repeat(257)), status: 400, error: /256/ },
  { name: 'an identifier with NUL', body: changed('c1\u0000'), status: 400, error: /control/ },
  { name: 'an identifier with a newline (log forging)', body: changed('c1\n{"level":"error"}'), status: 400, error: /control/ },
  { name: 'an identifier with a C1 control', body: changed('c1\u0085'), status: 400, error: /control/ },
  { name: 'a lone surrogate escaped in an identifier', body: '{"Event":"ContractChanged","ContractId":"lone\\ud800"}', status: 400, error: /ContractId is not valid Unicode/ },
  { name: 'two case variants with different values', body: '{"Event":"ContractChanged","ContractId":"c1","contractid":"c2"}', status: 400, error: /ContractId|contractid/i },
  { name: 'invalid UTF-8', body: Buffer.from([0x7b, 0x22, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), status: 400, error: /UTF-8/ },
  { name: 'a raw UTF-8-encoded surrogate', body: Buffer.concat([Buffer.from('{"Event":"ContractChanged","ContractId":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), status: 400, error: /UTF-8/ },
  { name: '100 KB of whitespace', body: `${' \n\t\r'.repeat(25_600)}${changed('c1')}`, status: 413, error: /larger/ },
  { name: 'a body over 64 KiB', body: json({ Event: 'ContractChanged', ContractId: 'c1', Padding: 'x'.repeat(70_000) }), status: 413, error: /larger/ },
  { name: 'text/plain', body: changed('c1'), contentType: 'text/plain', status: 415, error: /application\/json/ },
  { name: 'no content type', body: changed('c1'), contentType: null, status: 415, error: /application\/json/ },
  { name: 'a Latin-1 charset', body: changed('c1'), contentType: 'application/json; charset=iso-8859-1', status: 415, error: /UTF-8|charset/i },
  { name: 'a form', body: 'Event=ContractChanged&ContractId=c1', contentType: 'application/x-www-form-urlencoded', status: 415, error: /application\/json/ },
  { name: 'nesting 65 levels deep', body: `{"Event":"ContractChanged","ContractId":"c1","Deep":${'['.repeat(64)}${']'.repeat(64)}}`, status: 400, error: /nested deeper than 64/ },
  { name: 'nesting 20,000 levels deep (40 KB)', body: `{"Event":"ContractChanged","ContractId":"c1","Deep":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, status: 400, error: /nested deeper than 64/ },
  { name: 'an unknown path below /webhooks', body: changed('c1'), path: '/webhooks/../webhooks/x', status: 404, error: /not found/ },
  { name: 'a GET of /webhooks', body: '', method: 'GET', status: 404, error: /not found/ },
];

describe('bad-input sweep against a running pipeline', () => {
  it('answers every malformed webhook with its documented status and an {"error"} body, and writes nothing for it', async () => {
    expect(refused.length).toBeGreaterThanOrEqual(30);
    const before = await topicRecordCount(kafka, topicNames(config.topicPrefix).webhooks);
    const wrong: string[] = [];
    for (const c of refused) {
      const answer = await post(c.body, { contentType: c.contentType, path: c.path, method: c.method });
      if (answer.status !== c.status || typeof answer.body.error !== 'string' || !c.error.test(answer.body.error)) {
        wrong.push(`${c.name}: expected ${c.status} matching ${c.error}, got ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await topicRecordCount(kafka, topicNames(config.topicPrefix).webhooks)).toBe(before);
    expect((await fetch(`${pipeline.ingress.url}/readyz`)).status).toBe(200);
  });

  it('accepts hostile but well-formed webhooks, fetches only the literal ids, writes no false version, and keeps flowing', async () => {
    const realCustomer = sim.billing.signup().customerId; // its own events flow too
    // Identifiers the API must receive as exactly one segment, each with the path it must request.
    const hostileIds: [string, string][] = [
      ["'; DROP TABLE contract_history; --", "/api/v1/Contracts/'%3B%20DROP%20TABLE%20contract_history%3B%20--"],
      ['../Customers/x', '/api/v1/Contracts/..%2FCustomers%2Fx'],
      ['%2e%2e', '/api/v1/Contracts/%252e%252e'],
      ['a/b?c#d', '/api/v1/Contracts/a%2Fb%3Fc%23d'],
      ['..', '/api/v1/Contracts/%2E%2E'],
      ['.', '/api/v1/Contracts/%2E'],
      ['\u202Eevil\u202C', '/api/v1/Contracts/%E2%80%AEevil%E2%80%AC'], // right-to-left override
      ['zero\u200Bwidth\uFEFF', '/api/v1/Contracts/zero%E2%80%8Bwidth%EF%BB%BF'],
      ['\u{1F4B8}\u{1F469}\u200D\u{1F4BB}', '/api/v1/Contracts/%F0%9F%92%B8%F0%9F%91%A9%E2%80%8D%F0%9F%92%BB'], // emoji, a ZWJ sequence
      ['caf\u00E9', '/api/v1/Contracts/caf%C3%A9'], // NFC
      ['cafe\u0301', '/api/v1/Contracts/cafe%CC%81'], // NFD: another id, not the same one
      ['0123456789abcdef01234567', '/api/v1/Contracts/0123456789abcdef01234567'], // forged: no such contract
      [realCustomer, `/api/v1/Contracts/${realCustomer}`], // a customer's id claimed as a contract
    ];
    const accepted: { name: string; body: string }[] = [
      ...hostileIds.map(([id]) => ({ name: `ContractId ${JSON.stringify(id)}`, body: changed(id) })),
      { name: 'an unknown event with no identifiers', body: json({ Event: 'SomethingNewUpstream', Note: 'no ids at all' }) },
      { name: 'an unknown event naming a nonexistent invoice', body: json({ Event: 'InvoiceVoided', InvoiceId: 'fedcba9876543210fedcba98' }) },
      { name: 'one field in two cases with the same value', body: '{"Event":"ContractChanged","ContractId":"dup-case","CONTRACTID":"dup-case"}' },
      { name: 'a huge integer in an unknown field', body: `{"Event":"ContractChanged","ContractId":"big-number","Amount":${'9'.repeat(400)}}` },
      { name: 'a 1e300 in an unknown field', body: '{"Event":"ContractChanged","ContractId":"big-exponent","Amount":1e300}' },
      { name: 'nesting 64 levels deep (the limit) in an unknown field', body: `{"Event":"ContractChanged","ContractId":"deep","Deep":${'['.repeat(63)}${']'.repeat(63)}}` },
      { name: '__proto__ and constructor fields', body: '{"Event":"ContractChanged","ContractId":"proto","__proto__":{"ContractId":"polluted"},"constructor":{"prototype":{"x":1}}}' },
      // Fields the loader never reads: any value is kept, none is a reason to refuse (spec 6.1 rule 5).
      ...['YourCustomerId', 'PaymentProvider', 'ExpiryDate', 'DueDate'].flatMap((name) =>
        [null, 42, { odd: [name] }, ''].map((value) => ({ name: `${name} ${JSON.stringify(value)}`, body: json({ Event: 'DebitAuthCancelled', ContractId: 'odd-fields', CustomerId: 'odd-fields', [name]: value }) })),
      ),
      { name: 'TriggerDays a fraction', body: json({ Event: 'PaymentEscalated', ContractId: 'odd-fields', TriggerDays: 2.5 }) },
      { name: 'TriggerDays beyond 32 bits', body: json({ Event: 'PaymentEscalated', ContractId: 'odd-fields', TriggerDays: 2 ** 31 }) },
      { name: 'TriggerDays 1e308', body: '{"Event":"PaymentEscalated","ContractId":"odd-fields","TriggerDays":1e308}' },
      { name: 'TriggerDays null', body: '{"Event":"PaymentEscalated","ContractId":"odd-fields","TriggerDays":null}' },
      { name: 'TriggerDays a string', body: '{"Event":"PaymentEscalated","ContractId":"odd-fields","TriggerDays":"5"}' },
      { name: 'PaymentProvider with control characters', body: json({ Event: 'DebitAuthCancelled', ContractId: 'odd-fields', PaymentProvider: 'Card\n\u0085' }) },
      { name: 'empty and null deprecated invoice ids', body: json({ Event: 'InvoiceCorrected', OldInvoiceId: '', NewInvoiceId: null, OldInvoiceDraftId: 'odd-draft-1', NewInvoiceDraftId: 'odd-draft-2' }) },
      { name: 'a byte order mark inside a value and RTL text in an unknown field', body: json({ Event: 'ContractChanged', ContractId: 'rtl', Note: '\u05E9\u05DC\u05D5\u05DD \u202Bmixed\u202C \uFEFF' }) },
    ];
    // Valid JSON the ingress keeps, but PostgreSQL's jsonb refuses: accepted, then the sink sends
    // that one row to the webhooks DLQ with the reason (docs/WAREHOUSE.md, `rejected-by-database`).
    const deadLettered: { name: string; body: string }[] = [
      { name: 'NUL escaped in an unknown field', body: '{"Event":"ContractChanged","ContractId":"nul-extra","Note":"a\\u0000b"}' },
      { name: 'a lone surrogate escaped in an unknown field', body: '{"Event":"ContractChanged","ContractId":"lone-extra","Note":"\\udc00"}' },
    ];
    const wrong: string[] = [];
    for (const c of [...accepted, ...deadLettered]) {
      const answer = await post(c.body);
      if (answer.status !== 200 || typeof answer.body.event_id !== 'string' || !/^[0-9a-f-]{36}$/.test(answer.body.event_id)) wrong.push(`${c.name}: expected 200 with an event_id, got ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    expect(wrong).toEqual([]);

    // Later valid webhooks still flow end to end.
    const later = sim.billing.signup();
    await drainPipeline({ kafka, config, pool, sim, timeoutMs: 45_000 });
    expect((await fetch(`${pipeline.ingress.url}/readyz`)).status).toBe(200);
    const schema = quoteIdent(config.databaseSchema);
    const { rows: contracts } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.contract_history WHERE resource_id = $1`, [later.contractId]);
    expect(contracts[0]?.n).toBeGreaterThan(0);

    // No false version: every version in the warehouse is a true state of a real object
    // (the forged ids, the customer id claimed as a contract, the unknown event's invoice).
    const truth = await compareWarehouseToTruth(pool, config.databaseSchema, sim);
    expect(truth.problems).toEqual([]);
    const { rows: forged } = await pool.query<{ resource_id: string }>(
      `SELECT resource_type, resource_id FROM ${schema}.resource_versions WHERE resource_id = ANY($1) AND NOT (resource_type = 'Customer' AND resource_id = $2)`,
      [hostileIds.map(([id]) => id).concat(['fedcba9876543210fedcba98', 'dup-case', 'big-number', 'big-exponent', 'deep', 'deeper', 'proto', 'polluted', 'rtl', 'odd-fields', 'odd-draft-1', 'odd-draft-2']), realCustomer],
    );
    expect(forged).toEqual([]);

    // Each hostile id was requested as exactly its one encoded segment, and nothing else was.
    const paths = proxy.requests.map((r) => r.url);
    for (const [id, path] of hostileIds) expect(paths, `fetch of ${JSON.stringify(id)}`).toContain(path);
    const outside = paths.filter((p) => !/^\/oauth\/token\/?$/.test(p) && !/^\/api\/v1\/(Contracts|Customers|Orders|Invoices|InvoiceDrafts|Dunnings|PaymentTransactions|PaymentEscalationProcesses)\/[^/?#]+$/.test(p));
    expect(outside).toEqual([]);
    expect(paths.filter((p) => /Customers\/x$/.test(p))).toEqual([]);
    expect(paths).not.toContain('/api/v1/Contracts/polluted');
    // The SQL in an id was data, not a statement: the warehouse is intact.
    const { rows: tables } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.contract_history`);
    expect(tables[0]?.n).toBeGreaterThan(0);

    // Every accepted webhook is a row of webhook_events, with its body as received. The webhooks
    // DLQ holds the rows PostgreSQL refused, and the enricher's give-ups of ids that answered 404
    // for the whole not-found window (every id here that names no object).
    const { rows: stored } = await pool.query<{ payload: string }>(`SELECT payload::text AS payload FROM ${schema}.webhook_events`);
    const bodies = new Set(stored.map((r) => canonical(JSON.parse(r.payload))));
    for (const c of accepted) expect(bodies.has(canonical(JSON.parse(c.body))), `${c.name} in webhook_events`).toBe(true);
    const names = topicNames(config.topicPrefix);
    for (const c of deadLettered) expect(bodies.has(canonical(JSON.parse(c.body))), `${c.name} not in webhook_events`).toBe(false);
    const all = await readAllDeadLetters(kafka, registry, names.webhooksDlq);
    const givenUp = all.filter((l) => l.stage === 'enricher');
    expect(givenUp.length).toBeGreaterThan(0);
    expect(new Set(givenUp.map((l) => `${l.errorClass} ${l.sourceTopic}`))).toEqual(new Set([`not-found ${enricherTopics(config.topicPrefix).requests}`]));
    const letters = all.filter((l) => l.stage !== 'enricher');
    expect(letters.map((l) => ({ stage: l.stage, errorClass: l.errorClass, topic: l.sourceTopic }))).toEqual(deadLettered.map(() => ({ stage: 'sink', errorClass: 'rejected-by-database', topic: names.webhooks })));
    const sources = await Promise.all(letters.map(async (l) => ((await registry.decode(l.value as Buffer)) as { body: string }).body));
    expect(sources.sort()).toEqual(deadLettered.map((c) => c.body).sort());
    expect(await topicRecordCount(kafka, names.snapshotsDlq)).toBe(0);
  }, 90_000);
});
