import { Command, CommanderError } from 'commander';
import { UserError, errorMessage } from '../errors.js';
import { kafkaAccessError } from '../kafka/client.js';
import { VERSION } from '../version.js';
import { registerBackfill } from './backfill-command.js';
import { registerDashboard } from './dashboard-command.js';
import { registerDemo } from './demo-command.js';
import { registerDlq } from './dlq-command.js';
import { registerEnricher } from './enricher-command.js';
import { registerIngress } from './ingress-command.js';
import { registerMigrate } from './migrate-command.js';
import { registerRun } from './run-command.js';
import { registerReplay } from './replay-command.js';
import { registerRepair } from './repair-command.js';
import { registerRepartition } from './repartition-command.js';
import { registerSimulate } from './simulate-command.js';
import { registerSink } from './sink-command.js';
import { registerStack } from './stack-command.js';

/**
 * The `billing-loader` executable. Returns the exit code: 0 done, 1 failure, 2 a user error
 * (bad arguments or configuration), reported as one line without a stack trace.
 */
export async function main(argv: string[]): Promise<number> {
  const program = new Command('billing-loader')
    .description('Loads the full history of a subscription billing service into PostgreSQL through Kafka.')
    .version(VERSION, '--version', 'print the version and exit')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  registerStack(program);
  registerMigrate(program);
  registerSimulate(program);
  registerDemo(program);
  registerSink(program);
  registerReplay(program);
  registerIngress(program);
  registerEnricher(program);
  registerRun(program);
  registerBackfill(program);
  registerRepartition(program);
  registerDashboard(program);
  registerDlq(program);
  registerRepair(program);
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A command may set process.exitCode to report a state (e.g. `stack status`: 3 when not all run).
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const user = err instanceof UserError ? err : kafkaAccessError(err);
    if (user) {
      console.error(`billing-loader: ${user.message}`);
      return 2;
    }
    console.error(`billing-loader: ${errorMessage(err)}`);
    if (process.env.LOG_LEVEL === 'debug') console.error(err);
    return 1;
  }
}
