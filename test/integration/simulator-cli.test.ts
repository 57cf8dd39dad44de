import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { runSimulate, type SimulateOptions } from '../../src/cli/simulate-command.js';
import { silentLogger } from '../../src/log.js';
import { startRecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { waitFor } from '../helpers/wait-for.js';

afterEach(() => void vi.restoreAllMocks());

function capture(stream: NodeJS.WriteStream): () => string {
  const chunks: string[] = [];
  vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  return () => chunks.join('');
}

const defaults: SimulateOptions = {
  port: 0, host: '127.0.0.1', webhookUrl: undefined, scenario: 'signups', seed: 1, customers: 2, stepDelayMs: 0, loop: false, rate: 50,
  latencyMs: 0, errorRate: 0, timeoutRate: 0, resetRate: 0, propertyCase: 'pascal', unknownFields: false, retryBaseDelayMs: 10,
  duplicateRate: 0, lateRate: 0, reorderRate: 0, clientId: 'sandbox-client',
};

describe('billing-loader simulate', () => {
  it('has --help naming its options', async () => {
    const out = capture(process.stdout);
    expect(await main(['simulate', '--help'])).toBe(0);
    for (const option of ['--port', '--webhook-url', '--scenario', '--seed', '--rate', '--retry-base-delay-ms', '--property-case', '--unknown-fields', '--until-now', '--escalation-settings']) expect(out()).toContain(option);
  });

  it.each([
    [['--port', 'abc']],
    [['--scenario', 'nonsense']],
    [['--error-rate', '2']],
    [['--webhook-url', 'ftp://x']],
    [['--error-rate', '0.6', '--reset-rate', '0.6']],
  ])('refuses bad arguments %j with exit code 2 and one line', async (args) => {
    const err = capture(process.stderr);
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => void process.stderr.write(`${String(line)}\n`));
    expect(await main(['simulate', ...args])).toBe(2);
    expect(err()).toMatch(/\S/);
    expect(err()).not.toMatch(/^\s+at /m);
  });

  it('prints the BILLING_* settings that work, and plays the scenario to the webhook URL', async () => {
    const receiver = await startRecordingReceiver();
    const lines: string[] = [];
    const sim = await runSimulate({ ...defaults, webhookUrl: `${receiver.url}/webhooks` }, { log: silentLogger, print: (l) => lines.push(l) });
    try {
      const settings = Object.fromEntries(lines.map((l) => l.split(/=(.*)/s).slice(0, 2) as [string, string]));
      expect(Object.keys(settings)).toEqual(['BILLING_API_URL', 'BILLING_AUTH_URL', 'BILLING_CLIENT_ID', 'BILLING_CLIENT_SECRET']);
      const tokenRes = await fetch(`${settings.BILLING_AUTH_URL}/oauth/token/`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${settings.BILLING_CLIENT_ID}:${settings.BILLING_CLIENT_SECRET}`).toString('base64')}` },
        body: 'grant_type=client_credentials',
      });
      expect(tokenRes.status).toBe(200);
      await waitFor(() => receiver.received.length === 8, { what: 'two signups, four webhooks each' });
      const { access_token: token } = (await tokenRes.json()) as { access_token: string };
      const contractId = (receiver.received.find((r) => (r.json as { Event: string }).Event === 'ContractCreated')?.json as { ContractId: string }).ContractId;
      expect((await fetch(`${settings.BILLING_API_URL}/api/v1/Contracts/${contractId}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await sim.stop();
      await receiver.stop();
    }
  });

  it('with --until-now plays a history that ends at the wall clock, never after it', async () => {
    const sim = await runSimulate({ ...defaults, scenario: 'default', customers: 6, untilNow: 2, historyDays: 90 }, { log: silentLogger, print: () => undefined });
    try {
      await waitFor(() => sim.events().some((e) => e.payload.Event === 'InvoiceCreated'), { what: 'a billing' });
      const now = new Date().toISOString();
      const events = sim.events();
      expect(events.every((e) => e.simulatedAt <= now)).toBe(true);
      const earliest = new Date(Date.now() - 91 * 86_400_000).toISOString();
      expect(events.every((e) => e.simulatedAt >= earliest)).toBe(true);
    } finally {
      await sim.stop();
    }
  });
});
