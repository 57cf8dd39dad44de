import { afterEach, describe, expect, it } from 'vitest';
import { startRecordingReceiver, type RecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';

const running: Array<Simulator | RecordingReceiver> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

async function setup(answer: Parameters<typeof startRecordingReceiver>[0], delivery: Parameters<typeof startSimulator>[0] = {}) {
  const receiver = await startRecordingReceiver(answer);
  const sim = await startSimulator({ seed: 4, webhookUrl: `${receiver.url}/webhooks`, ...delivery, delivery: { retryBaseDelayMs: 1, ...delivery.delivery } });
  running.push(sim, receiver);
  return { receiver, sim };
}

describe('webhook dispatcher over HTTP (spec 6.1)', () => {
  it('POSTs JSON with Event, identifier fields and the legal entity', async () => {
    const { receiver, sim } = await setup(() => ({ status: 200 }));
    const s = sim.billing.signup();
    await waitFor(() => sim.stats().webhooks.delivered === 4, { what: 'signup webhooks delivered' });
    const EntityId = sim.entityId;
    const externalCustomerId = sim.current('Customer', s.customerId)?.ExternalCustomerId;
    expect(receiver.received.map((r) => r.json)).toEqual([
      { Event: 'CustomerCreated', CustomerId: s.customerId, EntityId },
      {
        Event: 'ContractCreated', ContractId: s.contractId, CustomerId: s.customerId, ExternalCustomerId: externalCustomerId,
        ContractChangeId: expect.stringMatching(/^[0-9a-f]{24}$/), ContractChangeType: 'Signup', EntityId,
      },
      { Event: 'AccountCreated', ContractId: s.contractId, EntityId },
      { Event: 'OrderSucceeded', ContractId: s.contractId, OrderId: s.orderId, EntityId },
    ]);
    expect(receiver.received.every((r) => r.method === 'POST' && r.path === '/webhooks' && r.contentType === 'application/json')).toBe(true);
  });

  it.each([200, 201, 202, 204])('takes %i as success: one request per event', async (status) => {
    const { receiver, sim } = await setup(() => ({ status }));
    sim.emit({ Event: 'ContractChanged', ContractId: 'c1' });
    await waitFor(() => sim.stats().webhooks.delivered === 1);
    expect(receiver.received).toHaveLength(1);
  });

  it('repeats a failing delivery 12 times in all, doubling the delay, then drops and counts it', async () => {
    const { receiver, sim } = await setup(() => ({ status: 503 }));
    sim.emit({ Event: 'ContractChanged', ContractId: 'c1' });
    await waitFor(() => sim.stats().webhooks.dropped === 1, { what: 'webhook dropped' });
    expect(receiver.received).toHaveLength(12);
    const [record] = sim.deliveries();
    expect(record?.attempts.map((a) => a.status)).toEqual(Array(12).fill(503));
    expect(record?.retryDelaysMs).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
    expect(sim.stats().webhooks).toMatchObject({ dropped: 1, delivered: 0, attempts: 12 });
  });

  it('recovers when the receiver comes back before the attempts run out', async () => {
    const { receiver, sim } = await setup((_req, i) => ({ status: i < 3 ? 500 : 200 }));
    sim.emit({ Event: 'ContractChanged', ContractId: 'c1' });
    await waitFor(() => sim.stats().webhooks.delivered === 1);
    expect(receiver.received).toHaveLength(4);
    expect(sim.deliveries()[0]?.retryDelaysMs).toEqual([1, 2, 4]);
  });

  it('follows a 301 to its Location', async () => {
    const { receiver, sim } = await setup((req) => (req.path === '/webhooks' ? { status: 301, headers: { location: '/moved' } } : { status: 204 }));
    sim.emit({ Event: 'CustomerChanged', CustomerId: 'k1' });
    await waitFor(() => sim.stats().webhooks.delivered === 1);
    expect(receiver.received.map((r) => [r.path, r.body])).toEqual([
      ['/webhooks', '{"Event":"CustomerChanged","CustomerId":"k1"}'],
      ['/moved', '{"Event":"CustomerChanged","CustomerId":"k1"}'],
    ]);
  });

  it('does not follow a 302: it is a failure to repeat', async () => {
    const { receiver, sim } = await setup((req, i) => (i === 0 ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 }));
    sim.emit({ Event: 'CustomerChanged', CustomerId: 'k1' });
    await waitFor(() => sim.stats().webhooks.delivered === 1);
    expect(receiver.received.map((r) => r.path)).toEqual(['/webhooks', '/webhooks']);
  });

  it('delivers twice when asked (duplicates)', async () => {
    const { receiver, sim } = await setup(() => ({ status: 200 }), { delivery: { duplicateRate: 1, reorderWindowMs: 5 } });
    sim.emit({ Event: 'CustomerChanged', CustomerId: 'k1' });
    await waitFor(() => sim.stats().webhooks.delivered === 2);
    expect(receiver.received.map((r) => r.body)).toEqual(['{"Event":"CustomerChanged","CustomerId":"k1"}', '{"Event":"CustomerChanged","CustomerId":"k1"}']);
  });

  it('delivers out of order when asked', async () => {
    const { receiver, sim } = await setup(() => ({ status: 200 }), { delivery: { reorderRate: 1, reorderWindowMs: 200 } });
    for (let i = 0; i < 20; i++) sim.emit({ Event: 'CustomerChanged', CustomerId: `k${i}` });
    await waitFor(() => sim.stats().webhooks.delivered === 20);
    const order = receiver.received.map((r) => (r.json as { CustomerId: string }).CustomerId);
    expect([...order].sort()).toEqual(Array.from({ length: 20 }, (_v, i) => `k${i}`).sort());
    expect(order).not.toEqual(Array.from({ length: 20 }, (_v, i) => `k${i}`));
  });

  it('can send webhook property names in another letter case', async () => {
    const { receiver, sim } = await setup(() => ({ status: 200 }), { webhookPropertyCase: 'camel' });
    sim.emit({ Event: 'CustomerChanged', CustomerId: 'k1' });
    await waitFor(() => sim.stats().webhooks.delivered === 1);
    expect(receiver.received[0]?.json).toEqual({ event: 'CustomerChanged', customerId: 'k1' });
  });
});
