import type { Command } from 'commander';
import { repairHeads } from '../enricher/repair-heads.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createLogger } from '../log.js';
import { createRegistry } from '../registry/registry.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';
import { registerRepairSinkOffsets } from './repair-sink-offsets-command.js';

export function registerRepair(program: Command): void {
  const repair = program.command('repair').description('rebuild state the pipeline keeps in Kafka after it was lost, or bring it back in line with a restored warehouse');
  repair
    .command('heads')
    .description("rebuild the enricher's heads topic (<prefix>.enricher.heads) from the snapshot log, so that versions go on from the latest in the log (the enricher must be stopped)")
    .option('--dry-run', 'print what would be written and write nothing')
    .addHelpText(
      'after',
      environmentHelp('repair') +
        '\n\nWithout its heads the enricher numbers every resource\'s versions from 1 again, and the sink refuses each\n' +
        'as a version conflict. Each resource\'s head becomes its latest version in <prefix>.snapshots; heads already\n' +
        'at or past it stay. Procedure: stop every enricher, run this, start the enrichers. Example:\n' +
        '  billing-loader repair heads --dry-run',
    )
    .action(async (opts: { dryRun?: boolean }) => {
      const config = await cliConfig('repair');
      const log = createLogger(config.logLevel).child({ component: 'repair' });
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-repair', log });
      const report = await repairHeads({ kafka, registry: createRegistry(config), prefix: config.topicPrefix, ...(opts.dryRun ? { dryRun: true } : {}), progress: (line) => console.error(line) });
      const verb = opts.dryRun ? 'would write' : 'wrote';
      console.log(`repair heads: ${report.resources} resource(s) in the snapshot log; ${verb} ${report.written} head(s), ${report.current} already current${report.undecodable > 0 ? `; ${report.undecodable} undecodable record(s) skipped` : ''}`);
    });
  registerRepairSinkOffsets(repair);
}
