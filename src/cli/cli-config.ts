import { resolve } from 'node:path';
import { envWithDotenv, loadConfig, startedByNpmExec, type Config, type Env } from '../config.js';
import { applyHeapGrowth } from '../heap-growth.js';
import { defaultStackDir, readStackPorts, stackConnectionSettings } from '../stack/settings.js';

/** What a CLI command reads its settings from: the environment, over a `.env` file in the working folder if there is one. */
export function cliEnvironment(): Promise<Env> {
  return envWithDotenv(process.env, resolve('.env'));
}

/**
 * The configuration from `env`, with Kafka, the registry and PostgreSQL defaulting to the local
 * stack's (`billing-loader stack up`, its recorded ports in STACK_DIR). The commands, the
 * benchmarks and the demo use it; production code takes whatever Config it is given.
 */
export function configWithLocalStack(env: Env): Config {
  return loadConfig(env, { connections: stackConnectionSettings(readStackPorts(env.STACK_DIR || defaultStackDir)) });
}

/**
 * The configuration of a CLI command, from `env` (default: cliEnvironment()). Also applies the
 * process-wide settings it holds (heap growth), since every command starts here.
 */
export async function cliConfig(env?: Env): Promise<Config> {
  const config = configWithLocalStack(env ?? (await cliEnvironment()));
  applyHeapGrowth(config.heapGrowthPercent);
  return config;
}

/** How a long-running command waits for its stop (see stopOnSignal). */
export function stopOptions(): { stopWhenOrphaned: boolean } {
  return { stopWhenOrphaned: startedByNpmExec(process.env) };
}
