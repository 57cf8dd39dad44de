import { resolve } from 'node:path';
import { COMMAND_SETTINGS, envWithDotenv, loadConfig, startedByNpmExec, type CommandName, type Config, type ConnectionDefaults, type Env, type OptionKey } from '../config.js';
import { applyHeapGrowth } from '../heap-growth.js';
import { defaultStackDir, readStackPorts, stackConnectionSettings } from '../stack/settings.js';

/** What a CLI command reads its settings from: the environment, over a `.env` file in the working folder if there is one. */
export function cliEnvironment(): Promise<Env> {
  return envWithDotenv(process.env, resolve('.env'));
}

/**
 * The commands that may talk to the local stack without being told where it is: `stack` manages
 * it, `demo` brings it up, `simulate` stands in for the billing service. Every other command
 * refuses to start without the connection settings it reads, so a production process with a
 * missing Kafka, registry or database setting exits 2 naming it, instead of reaching for
 * 127.0.0.1 and failing minutes later.
 */
export type LocalStackCommand = 'stack' | 'demo' | 'simulate';
const LOCAL_STACK_COMMANDS: readonly string[] = ['stack', 'demo', 'simulate'] satisfies LocalStackCommand[];

/** The commands that connect to PostgreSQL with a login of their own when it is set, instead of DATABASE_URL's. */
const OWN_DATABASE_LOGIN: Partial<Record<string, string>> = { migrate: 'MIGRATE_DATABASE_URL', dashboard: 'DASHBOARD_DATABASE_URL' };

const CONNECTION_OPTIONS: Record<keyof ConnectionDefaults, OptionKey> = { KAFKA_BROKERS: 'kafkaBrokers', SCHEMA_REGISTRY_URL: 'schemaRegistryUrl', DATABASE_URL: 'databaseUrl' };

/**
 * The configuration of `command` from `env`. For `stack`, `demo` and `simulate`, Kafka, the
 * registry and PostgreSQL default to the local stack's (its recorded ports in STACK_DIR). Other
 * commands must be given the ones they read; a connection a command never reads keeps the local
 * stack's value only to fill the typed Config, and is never used.
 */
export function configForCommand(command: CommandName | LocalStackCommand, env: Env): Config {
  if (LOCAL_STACK_COMMANDS.includes(command)) return configWithLocalStack(env);
  const stack = localStackConnections(env);
  const reads = new Set<OptionKey>(COMMAND_SETTINGS[command as CommandName]);
  // A command whose own login wins over DATABASE_URL needs no DATABASE_URL when that login is given.
  const ownLogin = OWN_DATABASE_LOGIN[command];
  if (ownLogin !== undefined && (env[ownLogin] || env[`${ownLogin}_FILE`])) reads.delete('databaseUrl');
  const unread = Object.fromEntries(Object.entries(stack).filter(([variable]) => !reads.has(CONNECTION_OPTIONS[variable as keyof ConnectionDefaults])));
  return loadConfig(env, { connections: unread });
}

/** The configuration from `env`, with every connection defaulting to the local stack's: the local-stack commands and the benchmarks. */
export function configWithLocalStack(env: Env): Config {
  return loadConfig(env, { connections: localStackConnections(env) });
}

function localStackConnections(env: Env): ConnectionDefaults {
  return stackConnectionSettings(readStackPorts(env.STACK_DIR || defaultStackDir));
}

/**
 * The configuration of a CLI command, from `env` (default: cliEnvironment()). Also applies the
 * process-wide settings it holds (heap growth), since every command starts here.
 */
export async function cliConfig(command: CommandName | LocalStackCommand, env?: Env): Promise<Config> {
  const config = configForCommand(command, env ?? (await cliEnvironment()));
  applyHeapGrowth(config.heapGrowthPercent);
  return config;
}

/** How a long-running command waits for its stop (see stopOnSignal). */
export function stopOptions(): { stopWhenOrphaned: boolean } {
  return { stopWhenOrphaned: startedByNpmExec(process.env) };
}
