import { type Command, InvalidArgumentError, Option } from 'commander';
import { enricherGroupId } from '../enricher/enricher.js';
import { createPool } from '../db/pool.js';
import { UserError } from '../errors.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { topicNames } from '../wire/topics.js';
import { createLogger } from '../log.js';
import { createRegistry } from '../registry/registry.js';
import { applyReset, assertGroupInactive, parsePartitionOffsets, planReset, type ResetTarget } from '../kafka/group-reset.js';
import { rebuildWarehouse } from '../sink/rebuild.js';
import { warehouseRoles } from '../warehouse/schema-roles.js';
import { sinkGroupId } from '../sink/sink.js';
import { environmentHelp } from './env-help.js';
import { cliConfig } from './cli-config.js';
import { migrateDatabaseUrl } from '../config.js';

interface ReplayOptions {
  group: 'sink' | 'enricher';
  groupId?: string;
  topic?: string[];
  toBeginning?: boolean;
  toTimestamp?: number;
  toOffsets?: string;
  rebuild?: boolean;
  dryRun?: boolean;
  allowTruncatedLog?: boolean;
}

const isoTime = (value: string): number => {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw new InvalidArgumentError('expected an ISO 8601 time such as 2025-03-01T00:00:00Z');
  return ms;
};
const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description("move a component's consumer group to the beginning, a time or explicit offsets, or rebuild the warehouse from the snapshot log")
    .addOption(new Option('--group <component>', 'whose consumer group to move').choices(['sink', 'enricher']).default('sink'))
    .option('--group-id <id>', 'the consumer group id itself (default: SINK_GROUP_ID or <TOPIC_PREFIX>.sink for the sink, <TOPIC_PREFIX>.enricher for the enricher: its router, which reads the webhooks)')
    .option('--topic <topic>', 'a topic to move (repeatable; default: <prefix>.snapshots and <prefix>.webhooks for the sink, <prefix>.webhooks for the enricher)', collect)
    .option('--to-beginning', 'move to the start of each partition')
    .option('--to-timestamp <iso>', 'move to the first record at or after this time (partitions without one: to their end)', isoTime)
    .option('--to-offsets <p:o,...>', 'move the given partitions of the one --topic to these offsets (others stay)')
    .option('--rebuild', 'rebuild the warehouse from the snapshot and webhook logs into a fresh schema, verify it and swap it in atomically (the sink must be stopped)')
    .option('--allow-truncated-log', 'with --rebuild: accept topics whose beginning retention already deleted')
    .option('--dry-run', 'print what would move (or be rebuilt) and change nothing')
    .addHelpText(
      'after',
      environmentHelp('replay') +
        '\n\nThe group must have no active member (stop the component first). Moves are printed on stdout as\n"<topic> <partition> <from> -> <to>"; progress goes to stderr. Examples:\n' +
        '  billing-loader replay --group sink --to-beginning --dry-run\n' +
        '  billing-loader replay --group enricher --to-timestamp 2025-03-01T00:00:00Z\n' +
        '  billing-loader replay --topic billing.snapshots --to-offsets 0:1200,3:877\n' +
        '  billing-loader replay --rebuild',
    )
    .action(async (opts: ReplayOptions) => {
      const chosen = [opts.toBeginning, opts.toTimestamp !== undefined, opts.toOffsets !== undefined, opts.rebuild].filter(Boolean).length;
      if (chosen !== 1) throw new UserError('choose exactly one of --to-beginning, --to-timestamp, --to-offsets, --rebuild');
      if (opts.allowTruncatedLog && !opts.rebuild) throw new UserError('--allow-truncated-log only applies to --rebuild');
      const config = await cliConfig('replay');
      const log = createLogger(config.logLevel, undefined, { service: 'replay' }).child({ component: 'replay' });
      const names = topicNames(config.topicPrefix);
      const groupId = opts.groupId ?? (opts.group === 'sink' ? sinkGroupId(config) : enricherGroupId(config.topicPrefix));
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-replay', log });

      if (opts.rebuild) {
        if (opts.group !== 'sink' || opts.topic) throw new UserError('--rebuild reads <prefix>.snapshots and <prefix>.webhooks for the sink; drop --group enricher / --topic');
        if (opts.dryRun) {
          const admin = kafka.admin();
          await admin.connect();
          try {
            await assertGroupInactive(admin, groupId, 'sink');
            for (const topic of [names.snapshots, names.webhooks]) {
              const offsets = await admin.fetchTopicOffsets(topic);
              const records = offsets.reduce((n, p) => n + BigInt(p.high) - BigInt(p.low), 0n);
              console.log(`${topic}: would read ${records} records (partitions ${offsets.map((p) => `${p.partition}:${p.low}..${p.high}`).join(' ')})`);
            }
            console.log(`would rebuild schema ${config.databaseSchema} in a fresh schema and swap it in`);
          } finally {
            await admin.disconnect();
          }
          return;
        }
        // The rebuild creates, renames and drops schemas: the owner's DDL, so the owner's login.
        const pool = createPool({ databaseUrl: migrateDatabaseUrl(config), applicationName: 'billing-loader replay --rebuild', log, max: 4 });
        try {
          const started = Date.now();
          const report = await rebuildWarehouse(
            { kafka, registry: createRegistry(config), pool, log, progress: (line) => console.error(line) },
            config,
            { sinkGroupId: groupId, allowTruncatedLog: opts.allowTruncatedLog ?? false, roles: warehouseRoles(config.databaseRoles, config.databaseSchema) },
          );
          console.error(`rebuild: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          console.log(
            `rebuilt ${report.schema}: ${report.versionsWritten} versions, ${report.webhooksWritten} webhooks from ${report.recordsRead} records` +
              `${report.refused ? `, ${report.refused} refused` : ''}${report.replacedSchema ? `; previous warehouse kept as ${report.replacedSchema}` : ''}`,
          );
        } finally {
          await pool.end();
        }
        return;
      }

      const defaultTopics = opts.group === 'sink' ? [names.snapshots, names.webhooks] : [names.webhooks];
      const topics = opts.topic ?? defaultTopics;
      let target: ResetTarget;
      if (opts.toBeginning) target = { kind: 'beginning' };
      else if (opts.toTimestamp !== undefined) target = { kind: 'timestamp', ms: opts.toTimestamp };
      else {
        if (topics.length !== 1) throw new UserError('--to-offsets moves one topic: name it with a single --topic');
        target = { kind: 'offsets', topic: topics[0] as string, offsets: parsePartitionOffsets(opts.toOffsets as string) };
      }
      const admin = kafka.admin();
      await admin.connect();
      try {
        await assertGroupInactive(admin, groupId, opts.group);
        const moves = await planReset(admin, groupId, topics, target);
        const verb = opts.dryRun ? 'would move' : 'moved';
        if (!opts.dryRun) await applyReset(admin, groupId, moves);
        for (const m of moves) console.log(`${m.topic} ${m.partition} ${m.from ?? 'none'} -> ${m.to}`);
        console.error(`replay: ${verb} ${moves.length} partition(s) of group ${groupId}${opts.dryRun ? ' (dry run: nothing changed)' : ''}`);
      } finally {
        await admin.disconnect();
      }
    });
}
