import { type Command, InvalidArgumentError, Option } from 'commander';
import { UserError } from '../errors.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger, type Logger } from '../log.js';
import { PROPERTY_CASES, type PropertyCase } from '../simulator/body-presentation.js';
import { SCENARIO_NAMES } from '../simulator/scenario-runner.js';
import { startSimulator, type Simulator } from '../simulator/simulator.js';
import { cliConfig } from './cli-config.js';

export interface SimulateOptions {
  port: number;
  host: string;
  webhookUrl: string | undefined;
  scenario: string;
  seed: number;
  customers: number;
  stepDelayMs: number;
  loop: boolean;
  rate: number;
  burst?: number;
  tokenLifetime?: number;
  latencyMs: number;
  errorRate: number;
  timeoutRate: number;
  resetRate: number;
  propertyCase: PropertyCase;
  unknownFields: boolean;
  retryBaseDelayMs: number;
  duplicateRate: number;
  lateRate: number;
  reorderRate: number;
  clientId: string;
  clientSecret?: string;
  /** The story clock: play the last `historyDays` up to now over this many seconds. */
  untilNow?: number;
  historyDays?: number;
  /** Serve the account's payment escalation settings (default: 404, as no path is documented). */
  escalationSettings?: boolean;
}

const int = (what: string, min: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < min) throw new InvalidArgumentError(`expected ${what} (an integer of at least ${min})`);
  return Number(value);
};
const nonNegative = (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a non-negative number');
  return n;
};
const fraction = (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !(n >= 0 && n <= 1)) throw new InvalidArgumentError('expected a fraction from 0 to 1');
  return n;
};
const httpUrl = (value: string) => {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL such as http://127.0.0.1:8080/webhooks');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError('expected an http(s) URL such as http://127.0.0.1:8080/webhooks');
  return value;
};

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('run the sandbox billing service: token endpoint, /api/v1 resources, request limits, webhooks, and a scenario over simulated time')
    .option('--port <port>', 'port to listen on (0: any free port)', int('a port', 0), 8070)
    .option('--host <host>', 'interface to bind (the /_simulator admin endpoints are unauthenticated)', '127.0.0.1')
    .option('--webhook-url <url>', "where webhooks are POSTed (the ingress's default address)", httpUrl, 'http://127.0.0.1:8080/webhooks')
    .option('--no-webhooks', 'record events without sending them')
    .addOption(new Option('--scenario <name>', 'scenario to play: default (every event of the spec), signups, none (serve only)').choices([...SCENARIO_NAMES, 'none']).default('default'))
    .option('--seed <n>', 'seed of every random choice; one seed, one history', int('a seed', 0), 1)
    .option('--customers <n>', 'customers in the scenario (each lives one story)', int('a count', 1), 12)
    .option('--step-delay-ms <ms>', 'wall-clock pause between two simulated instants, in milliseconds', int('milliseconds', 0), 200)
    .option('--loop', 'start over with new customers when the scenario ends, until stopped', false)
    .option('--until-now <seconds>', 'the story clock: play the last --history-days days up to the wall clock\'s now, paced over this many seconds (instead of --step-delay-ms and --loop)', int('seconds', 1))
    .option('--history-days <days>', 'simulated days the --until-now history spans; customers sign up in its first two thirds', int('days', 31), 180)
    .option('--escalation-settings', 'serve the payment escalation settings that PaymentEscalated names (default: 404, no path is documented)', false)
    .option('--rate <rps>', 'request budget of the token and resource endpoints, requests per second (0: unlimited)', nonNegative, 50)
    .option('--burst <n>', 'requests allowed at once after an idle period (default: 2 seconds of --rate)', int('a count', 1))
    .option('--token-lifetime <seconds>', 'tokens expire after this many seconds (default: never, as upstream)', int('seconds', 1))
    .option('--latency-ms <ms>', 'delay before every API answer, in milliseconds', nonNegative, 0)
    .option('--error-rate <fraction>', 'fraction of API requests answered with a 5xx', fraction, 0)
    .option('--timeout-rate <fraction>', 'fraction of API requests never answered', fraction, 0)
    .option('--reset-rate <fraction>', 'fraction of API requests whose connection is reset', fraction, 0)
    .addOption(new Option('--property-case <case>', 'letter case of property names in resource bodies (spec 9.3)').choices(PROPERTY_CASES).default('pascal'))
    .option('--unknown-fields', 'add fields no client knows to resource bodies (spec 9.4)', false)
    .option('--retry-base-delay-ms <ms>', 'first webhook retry delay, doubling after each failure, in milliseconds', int('milliseconds', 1), 1000)
    .option('--duplicate-rate <fraction>', 'fraction of webhooks delivered twice', fraction, 0)
    .option('--late-rate <fraction>', 'fraction of webhooks delivered late', fraction, 0)
    .option('--reorder-rate <fraction>', 'fraction of webhooks held back so later ones overtake them', fraction, 0)
    .option('--client-id <id>', 'client id of the client credentials grant', 'sandbox-client')
    .option('--client-secret <secret>', 'client secret (default: random per start)')
    .addHelpText('after', '\nPrints BILLING_API_URL, BILLING_AUTH_URL, BILLING_CLIENT_ID and BILLING_CLIENT_SECRET as KEY=value lines on\nstdout, logs on stderr, and runs until SIGINT/SIGTERM. Details and assumptions: docs/SIMULATOR.md')
    .action(async (opts: SimulateOptions & { webhooks: boolean }) => {
      const log = createLogger((await cliConfig('simulate')).logLevel, undefined, { service: 'simulate' }).child({ component: 'simulator' });
      const sim = await runSimulate({ ...opts, webhookUrl: opts.webhooks ? opts.webhookUrl : undefined }, { log, print: (line) => console.log(line) });
      process.exitCode = await stopOnSignal(sim, log);
    });
}

/**
 * Starts the simulator as the command does, prints the settings the loader needs, and plays the
 * scenario in the background (a scenario failure is logged; the service keeps serving).
 */
export async function runSimulate(opts: SimulateOptions, io: { log: Logger; print: (line: string) => void }): Promise<Simulator> {
  if (opts.scenario !== 'none' && !(SCENARIO_NAMES as readonly string[]).includes(opts.scenario)) throw new UserError(`--scenario: unknown scenario '${opts.scenario}'; use one of ${[...SCENARIO_NAMES, 'none'].join(', ')}`);
  if (opts.errorRate + opts.timeoutRate + opts.resetRate > 1) throw new UserError('--error-rate, --timeout-rate and --reset-rate together must not exceed 1');
  let sim: Simulator;
  try {
    sim = await startSimulator({
      port: opts.port,
      host: opts.host,
      seed: opts.seed,
      clientId: opts.clientId,
      ...(opts.clientSecret ? { clientSecret: opts.clientSecret } : {}),
      ...(opts.tokenLifetime ? { tokenLifetimeSeconds: opts.tokenLifetime } : {}),
      rateLimit: { requestsPerSecond: opts.rate, burst: opts.burst ?? Math.max(1, Math.ceil(opts.rate * 2)) },
      faults: { latencyMs: opts.latencyMs, errorRate: opts.errorRate, timeoutRate: opts.timeoutRate, resetRate: opts.resetRate },
      propertyCase: opts.propertyCase,
      unknownFields: opts.unknownFields,
      ...(opts.webhookUrl ? { webhookUrl: opts.webhookUrl } : {}),
      delivery: { retryBaseDelayMs: opts.retryBaseDelayMs, duplicateRate: opts.duplicateRate, lateRate: opts.lateRate, reorderRate: opts.reorderRate },
      escalationSettings: opts.escalationSettings ?? false,
      logger: io.log,
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EADDRINUSE') throw new UserError(`--port: ${opts.host}:${opts.port} is in use; choose another port (0 picks a free one)`);
    throw err;
  }
  io.print(`BILLING_API_URL=${sim.baseUrl}`);
  io.print(`BILLING_AUTH_URL=${sim.authUrl}`);
  io.print(`BILLING_CLIENT_ID=${sim.clientId}`);
  io.print(`BILLING_CLIENT_SECRET=${sim.clientSecret}`);
  if (opts.scenario !== 'none') {
    const name = opts.scenario as (typeof SCENARIO_NAMES)[number];
    const historyDays = opts.historyDays ?? 180;
    const storyClock = opts.untilNow
      ? { historyDays, spreadDays: Math.floor((historyDays * 2) / 3), endAt: new Date(Date.now() + opts.untilNow * 1000), durationMs: opts.untilNow * 1000 }
      : { stepDelayMs: opts.stepDelayMs, loop: opts.loop };
    sim.runScenario({ name, customers: opts.customers, ...storyClock }).then(
      () => io.log.info('still serving until stopped'),
      (err: unknown) => io.log.error('scenario failed; still serving until stopped', { err }),
    );
  }
  return sim;
}
