import { Command, InvalidArgumentError } from 'commander';
import { createBillingApiClient } from '../billing-api/client.js';
import { billingApiClientOptions } from '../billing-api/client-options.js';
import { LISTABLE_TYPES, RESOURCE_TYPES, isResourceType, type ResourceType } from '../billing-api/resource-types.js';
import { runBackfill } from '../backfill/backfill.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createLogger } from '../log.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';

function typesArg(value: string): ResourceType[] {
  const types = value.split(',').map((t) => t.trim()).filter(Boolean);
  const bad = types.filter((t) => !isResourceType(t));
  if (types.length === 0 || bad.length > 0) throw new InvalidArgumentError(`expected a comma-separated list of ${RESOURCE_TYPES.join(', ')}${bad.length ? `; unknown: ${bad.join(', ')}` : ''}`);
  return types as ResourceType[];
}

export function registerBackfill(program: Command): void {
  program
    .command('backfill')
    .description('snapshot every existing object of the given types through the list endpoints, into the same versioning path as webhooks (source_event null); resumable')
    .option('--types <list>', `comma-separated resource types (default: every type with a list endpoint: ${LISTABLE_TYPES.join(',')})`, typesArg)
    .option('--restart', 'start every type from the first page, ignoring saved progress')
    .option('--page-size <n>', 'objects per list request (default 500, the service\'s maximum)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('expected an integer from 1 to 500');
      return n;
    })
    .addHelpText('after', '\nThe enricher must be running (or run later) to turn the backfilled objects into versions.')
    .addHelpText('after', environmentHelp('backfill'))
    .action(async (opts: { types?: ResourceType[]; restart?: boolean; pageSize?: number }) => {
      const config = await cliConfig('backfill');
      const apiOptions = billingApiClientOptions(config);
      const log = createLogger(config.logLevel, undefined, { service: 'backfill' });
      const api = createBillingApiClient({ ...apiOptions, logger: log });
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const result = await runBackfill(
          { kafka: createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-backfill', log }), api, log, progress: (l) => console.error(l) },
          { topicPrefix: config.topicPrefix, topicPartitions: config.topicPartitions, types: opts.types ?? [...LISTABLE_TYPES], restart: opts.restart ?? false, ...(opts.pageSize ? { pageSize: opts.pageSize } : {}), signal: stop.signal },
        );
        const total = Object.values(result.objects).reduce((a, b) => a + b, 0);
        for (const { reason } of result.incomplete) console.error(`backfill: incomplete: ${reason}`);
        console.error(`backfill: ${stop.signal.aborted ? 'interrupted (rerun to resume)' : result.incomplete.length > 0 ? 'finished with incomplete types' : 'done'}: ${total} objects sent for versioning${result.withoutId ? `, ${result.withoutId} without an identifier skipped` : ''}`);
        if (result.incomplete.length > 0) process.exitCode = 1;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await api.close();
      }
    });
}
