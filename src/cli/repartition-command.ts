import { type Command, InvalidArgumentError } from 'commander';
import { repartitionEnricherTopics } from '../enricher/repartition.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createLogger } from '../log.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of partitions, at least 1');
  return n;
};

export function registerRepartition(program: Command): void {
  program
    .command('repartition')
    .description("grow the enricher's internal topics (<prefix>.enricher.requests and .heads) together, and move every head and pending request to its new partition (the enricher must be stopped)")
    .option('--partitions <n>', 'the new partition count of both topics (default: the larger of their current counts, to repair topics grown by hand)', positiveInt)
    .addHelpText(
      'after',
      environmentHelp('repartition') +
        '\n\nA resource\'s partition depends on the partition count; its version history (its head) must follow it, or its\n' +
        'versions restart at 1. Procedure: stop the enricher (and any backfill), run this, start the enricher. Example:\n' +
        '  billing-loader repartition --partitions 12',
    )
    .action(async (opts: { partitions?: number }) => {
      const config = await cliConfig('repartition');
      const log = createLogger(config.logLevel, undefined, { service: 'repartition' }).child({ component: 'repartition' });
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-repartition', log });
      const report = await repartitionEnricherTopics(kafka, config.topicPrefix, { ...(opts.partitions !== undefined ? { partitions: opts.partitions } : {}), progress: (line) => console.error(line) });
      console.log(`repartition: both topics have ${report.partitions} partitions; moved ${report.headsMoved} head(s) and ${report.requestsMoved} pending request(s); start the enricher`);
    });
}
