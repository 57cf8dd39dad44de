import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Kafka } from 'kafkajs';
import { UserError } from '../errors.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createLogger } from '../log.js';
import { createRegistry } from '../registry/registry.js';
import { readDeadLetters, readOneDeadLetter, type LetterFilter } from '../dlq/dead-letter-reader.js';
import { letterView } from '../dlq/letter-view.js';
import { NOT_REDRIVEN, readRedriveMarkers, redrive } from '../dlq/redrive.js';
import { formatLetterId, parseLetterId, type StoredDeadLetter } from '../wire/dead-letter.js';
import { topicNames } from '../wire/topics.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';

interface FilterOptions {
  dlq?: 'webhooks' | 'snapshots';
  stage?: string[];
  errorClass?: string[];
  since?: number;
  until?: number;
}

const isoTime = (value: string): number => {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw new InvalidArgumentError('expected an ISO 8601 time such as 2025-03-01T00:00:00Z');
  return ms;
};
const collect = (value: string, previous: string[] = []) => [...previous, value];
const letterId = (value: string): string => {
  if (!parseLetterId(value)) throw new InvalidArgumentError('expected a letter id <dlq topic>:<partition>:<offset>, as dlq list prints it');
  return value;
};

function withFilters(c: Command): Command {
  return c
    .addOption(new Option('--dlq <which>', 'only this DLQ (default: both)').choices(['webhooks', 'snapshots']))
    .option('--stage <stage>', 'only letters of this stage: enricher or sink (repeatable)', collect)
    .option('--error-class <class>', 'only letters of this error class, e.g. not-found (repeatable)', collect)
    .option('--since <iso>', 'only letters given up at or after this time', isoTime)
    .option('--until <iso>', 'only letters given up before this time', isoTime);
}

async function connect() {
  const config = await cliConfig('dlq');
  const log = createLogger(config.logLevel).child({ component: 'dlq' });
  const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-dlq', log });
  return { config, kafka, registry: createRegistry(config), names: topicNames(config.topicPrefix) };
}

/** The DLQ topics chosen that exist (a DLQ is created by the first stage that starts; none yet means no letters). */
async function dlqTopics(kafka: Kafka, names: ReturnType<typeof topicNames>, which: FilterOptions['dlq']): Promise<string[]> {
  const wanted = which === 'webhooks' ? [names.webhooksDlq] : which === 'snapshots' ? [names.snapshotsDlq] : [names.webhooksDlq, names.snapshotsDlq];
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    return wanted.filter((t) => existing.has(t));
  } finally {
    await admin.disconnect();
  }
}

const filterOf = (opts: FilterOptions): LetterFilter => ({
  ...(opts.stage ? { stages: opts.stage } : {}),
  ...(opts.errorClass ? { errorClasses: opts.errorClass } : {}),
  ...(opts.since !== undefined ? { since: opts.since } : {}),
  ...(opts.until !== undefined ? { until: opts.until } : {}),
});

const oneLine = (text: string, max = 120) => {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

function listLine(l: StoredDeadLetter, redriven: boolean): string {
  return [formatLetterId(l.id), new Date(l.failedAt).toISOString(), l.stage, l.errorClass, `${l.sourceTopic}:${l.sourcePartition}:${l.sourceOffset}`, redriven ? 'redriven' : '-', oneLine(l.errorMessage)].join('\t');
}

export function registerDlq(program: Command): void {
  const dlq = program
    .command('dlq')
    .description('inspect the dead-letter topics (<prefix>.webhooks.dlq, <prefix>.snapshots.dlq) and send letters back to their source topics');

  withFilters(dlq.command('list').description('list dead letters, oldest first per DLQ partition: one tab-separated line each'))
    .option('--json', 'one JSON object per line instead (id, failedAt, stage, errorClass, source, redriven, errorMessage)')
    .addHelpText(
      'after',
      environmentHelp('dlq') +
        '\n\nColumns: id (<dlq topic>:<partition>:<offset>, for dlq show), time given up, stage, error class, source\n' +
        'record (<topic>:<partition>:<offset>), "redriven" or "-", error message. Examples:\n' +
        '  billing-loader dlq list --error-class not-found --since 2025-03-01T00:00:00Z\n' +
        '  billing-loader dlq list --dlq snapshots --stage sink --json',
    )
    .action(async (opts: FilterOptions & { json?: boolean }) => {
      const { kafka, registry, names, config } = await connect();
      const letters = await readDeadLetters(kafka, registry, await dlqTopics(kafka, names, opts.dlq), filterOf(opts));
      const markers = await readRedriveMarkers(kafka, config.topicPrefix);
      for (const l of letters) {
        const redriven = markers.has(formatLetterId(l.id));
        if (opts.json) {
          console.log(JSON.stringify({ id: formatLetterId(l.id), failedAt: new Date(l.failedAt).toISOString(), stage: l.stage, errorClass: l.errorClass, source: { topic: l.sourceTopic, partition: l.sourcePartition, offset: l.sourceOffset }, redriven, errorMessage: l.errorMessage }));
        } else console.log(listLine(l, redriven));
      }
      console.error(`dlq list: ${letters.length} letter(s)`);
    });

  dlq
    .command('show')
    .description('print one dead letter as JSON: its context, the source record\'s headers and key, and its value decoded (Avro through the registry, JSON, text, else base64)')
    .argument('<id>', 'the letter id, <dlq topic>:<partition>:<offset>, as dlq list prints it', letterId)
    .addHelpText('after', environmentHelp('dlq') + '\n\nExample:\n  billing-loader dlq show billing.webhooks.dlq:0:17')
    .action(async (idText: string) => {
      const { kafka, registry, names, config } = await connect();
      const id = parseLetterId(idText);
      if (!id) throw new UserError(`not a letter id: ${idText}`);
      if (id.topic !== names.webhooksDlq && id.topic !== names.snapshotsDlq) throw new UserError(`${id.topic} is not a DLQ of TOPIC_PREFIX ${config.topicPrefix} (${names.webhooksDlq}, ${names.snapshotsDlq})`);
      const topics = await dlqTopics(kafka, names, undefined);
      const letter = topics.includes(id.topic) ? await readOneDeadLetter(kafka, registry, id) : undefined;
      if (!letter) throw new UserError(`no dead letter at ${idText} (see dlq list)`);
      const markers = await readRedriveMarkers(kafka, config.topicPrefix);
      console.log(JSON.stringify(await letterView(letter, registry, markers.get(idText)), null, 2));
    });

  withFilters(dlq.command('redrive').description('send the selected dead letters back to their source topics (the original key, value and headers), each at most once'))
    .option('--id <id>', 'only this letter (repeatable), <dlq topic>:<partition>:<offset>', (v: string, prev: string[] = []) => [...prev, letterId(v)])
    .option('--all', 'every letter that can be redriven (required when no other filter is given)')
    .option('--dry-run', 'print what would be sent and send nothing')
    .addHelpText(
      'after',
      environmentHelp('dlq') +
        '\n\nEach copy and a marker in <prefix>.dlq.redrives are written in one Kafka transaction: a letter is never sent twice,\n' +
        'by a rerun or by two redrives at once. Never sent back: ' + [...NOT_REDRIVEN.keys()].join(', ') + ' letters, letters whose source\n' +
        'value was not kept, and records of neither format. Prints "redriven <id> -> <topic>" per letter. Examples:\n' +
        '  billing-loader dlq redrive --error-class not-found --dry-run\n' +
        '  billing-loader dlq redrive --id billing.webhooks.dlq:0:17',
    )
    .action(async (opts: FilterOptions & { id?: string[]; all?: boolean; dryRun?: boolean }) => {
      const filter = { ...filterOf(opts), ...(opts.id ? { ids: opts.id } : {}) };
      if (!opts.all && Object.keys(filter).length === 0 && !opts.dlq) throw new UserError('choose the letters: --id, --stage, --error-class, --since, --until or --dlq, or --all for every one');
      const { kafka, registry, names, config } = await connect();
      const topics = await dlqTopics(kafka, names, opts.dlq);
      const outcome = await redrive({ kafka, registry, prefix: config.topicPrefix, dlqTopics: topics }, filter, {
        ...(opts.dryRun ? { dryRun: true } : {}),
        onRedriven: (l) => console.log(`redriven ${formatLetterId(l.id)} -> ${l.sourceTopic}`),
      });
      if (opts.dryRun) for (const l of outcome.redriven) console.log(`would redrive ${formatLetterId(l.id)} -> ${l.sourceTopic}`);
      for (const s of outcome.skipped) console.log(`skipped ${formatLetterId(s.letter.id)}: ${s.reason}`);
      console.error(`dlq redrive: ${outcome.redriven.length} ${opts.dryRun ? 'to redrive' : 'redriven'}, ${outcome.alreadyRedriven} already redriven before, ${outcome.skipped.length} skipped`);
    });
}
