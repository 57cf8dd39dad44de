import type { ResourceType } from '../../src/billing-api/resource-types.js';
import type { ResourceReader } from '../../src/enricher/resource-reader.js';
import { LoaderError } from '../../src/errors.js';
import type { Simulator } from '../../src/simulator/simulator.js';

/**
 * TEMPORARY: a minimal reader over real HTTP against the simulator, used until the billing API
 * client (src/billing-api) lands; to be replaced by it. No retries, no budget.
 */
export function createSimulatorReader(sim: Simulator): ResourceReader {
  let token: Promise<string> | undefined;
  const getToken = () =>
    (token ??= fetch(`${sim.authUrl}/oauth/token/`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    }).then(async (r) => ((await r.json()) as { access_token: string }).access_token));
  const paths: Record<ResourceType, string> = {
    Contract: 'Contracts', Customer: 'Customers', Order: 'Orders', Invoice: 'Invoices', InvoiceDraft: 'InvoiceDrafts',
    Dunning: 'Dunnings', PaymentTransaction: 'PaymentTransactions', PaymentEscalationProcess: 'PaymentEscalationProcesses',
  };
  return {
    async getResource(type, id) {
      let res: Response;
      try {
        res = await fetch(`${sim.baseUrl}/api/v1/${paths[type]}/${encodeURIComponent(id)}`, { headers: { Authorization: `Bearer ${await getToken()}` } });
      } catch (err) {
        throw new LoaderError('unreachable', { retriable: true, cause: err });
      }
      if (res.status === 404) return { kind: 'gone' };
      if (res.status >= 500 || res.status === 429) throw new LoaderError(`HTTP ${res.status}`, { retriable: true });
      if (!res.ok) throw Object.assign(new LoaderError(`HTTP ${res.status}`), { name: 'ApiRejectedError' });
      return { kind: 'found', body: await res.text() };
    },
  };
}
