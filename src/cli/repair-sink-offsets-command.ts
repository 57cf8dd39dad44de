import type { Command } from 'commander';
import { createPool } from '../db/pool.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createLogger } from '../log.js';
import { applyRewind, planRewind } from '../sink/rewind.js';
import { sinkGroupId } from '../sink/sink.js';
import { topicNames } from '../wire/topics.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';

/** `billing-loader repair sink-offsets`: after a database restore, move the sink back to what the warehouse holds. */
export function registerRepairSinkOffsets(repair: Command): void {
  repair
    .command('sink-offsets')
    .description("after PostgreSQL was restored to an earlier point, move the sink's consumer groups back to the first record the warehouse does not hold, so the sink writes the gap again (the sink must be stopped)")
    .option('--group-id <id>', "the sink's consumer group (default: SINK_GROUP_ID or <TOPIC_PREFIX>.sink); its dead-letter group <id>.dead-letters moves too")
    .option('--allow-truncated-log', 'when retention already deleted records the warehouse lacks, move those partitions to their start, accepting the loss, instead of refusing')
    .option('--dry-run', 'print what would move and change nothing')
    .addHelpText(
      'after',
      environmentHelp('repair-sink-offsets') +
        '\n\nThe warehouse records where in Kafka each row came from (resource_versions and webhook_events: topic\n' +
        'partition and offset; dead_letters: the DLQ offset). For every partition the sink reads, the group moves\n' +
        'back to the highest stored offset + 1 (the partition\'s start when nothing of it is stored); a partition\n' +
        'already committed at or before that stays. Writes are idempotent, so what is read twice is stored once.\n' +
        'Each partition is printed on stdout as "<group> <topic> <partition> <committed> -> <new>" (or "stays");\n' +
        'progress goes to stderr. Procedure: docs/OPERATIONS.md, "Backup and restore". Example:\n' +
        '  billing-loader repair sink-offsets --dry-run',
    )
    .action(async (opts: { groupId?: string; allowTruncatedLog?: boolean; dryRun?: boolean }) => {
      const config = await cliConfig('repair-sink-offsets');
      const log = createLogger(config.logLevel, undefined, { service: 'repair' }).child({ component: 'repair' });
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-repair', log });
      const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'billing-loader repair sink-offsets', log, max: 1 });
      const admin = kafka.admin();
      await admin.connect();
      try {
        const moves = await planRewind(admin, pool, config.databaseSchema, topicNames(config.topicPrefix), {
          sinkGroupId: opts.groupId ?? sinkGroupId(config),
          allowTruncatedLog: opts.allowTruncatedLog ?? false,
          progress: (line) => console.error(line),
        });
        if (!opts.dryRun) await applyRewind(admin, moves);
        for (const m of moves) {
          const where = `${m.groupId} ${m.topic} ${m.partition} ${m.committed ?? 'none'}`;
          console.log(m.to === null ? `${where} stays (warehouse: ${m.warehouse})` : `${where} -> ${m.to}${m.truncated ? ' (log start: records before it are lost)' : ''}`);
        }
        const moved = moves.filter((m) => m.to !== null);
        const records = moved.reduce((n, m) => n + BigInt(m.committed ?? '0') - BigInt(m.to ?? '0'), 0n);
        const verb = opts.dryRun ? 'would move' : 'moved';
        console.error(`repair sink-offsets: ${verb} ${moved.length} of ${moves.length} partition(s) back, ${records} record(s) to read again${opts.dryRun ? ' (dry run: nothing changed)' : ''}`);
      } finally {
        await admin.disconnect();
        await pool.end();
      }
    });
}
