import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMAND_SETTINGS, options, SETTINGS_OF, type CommandName, type OptionKey } from '../config.js';
import { environmentHelp } from './env-help.js';

const COMMANDS = Object.keys(COMMAND_SETTINGS) as CommandName[];
const envOf = (key: OptionKey): string => options[key].env;
const listed = (command: CommandName): Set<string> => new Set([...environmentHelp(command).matchAll(/^ {2}([A-Z][A-Z0-9_]*) /gm)].map((m) => m[1] as string));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The option fields a set of source files reads as `config.<field>` or `(await cliConfig()).<field>`. */
function configReads(files: string[]): OptionKey[] {
  const keys = new Set(Object.keys(options));
  const found = new Set<OptionKey>();
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:\bconfig|\))\.(\w+)/g)) if (keys.has(m[1] as string)) found.add(m[1] as OptionKey);
  }
  return [...found];
}

const src = join(import.meta.dirname, '..');
/** The component code each command runs, besides its own command file. */
const COMPONENT_CODE: Partial<Record<CommandName, string[]>> = {
  ingress: ['ingress'],
  enricher: ['enricher', 'billing-api'],
  sink: ['sink'],
  run: ['ingress', 'enricher', 'billing-api', 'sink'],
  backfill: ['backfill', 'billing-api'],
  dashboard: ['dashboard'],
};

describe('environmentHelp', () => {
  it.each(COMMANDS)("lists every setting the %s command's code reads as config.<field>", (command) => {
    const files = [join(src, 'cli', `${command}-command.ts`), ...(COMPONENT_CODE[command] ?? []).flatMap((d) => sources(join(src, d)))];
    const reads = configReads(files);
    expect(reads.length).toBeGreaterThan(0);
    const help = listed(command);
    expect(reads.map(envOf).filter((v) => !help.has(v))).toEqual([]);
  });

  it('lists every option under at least one command', () => {
    const anywhere = new Set(COMMANDS.flatMap((c) => [...listed(c)]));
    expect(Object.values(options).map((o) => o.env).filter((v) => !anywhere.has(v))).toEqual([]);
  });

  it('lists under run everything the ingress, the enricher and the sink read, except the ports for running those alone', () => {
    const run = listed('run');
    const parts = new Set([...listed('ingress'), ...listed('enricher'), ...listed('sink')]);
    parts.delete('ENRICHER_PORT');
    parts.delete('SINK_PORT');
    expect([...parts].filter((v) => !run.has(v))).toEqual([]);
  });

  it('lists the ENRICHER_* and BILLING_* settings under enricher, the INGRESS_* ones under ingress', () => {
    const all = Object.values(options).map((o) => o.env);
    const enricher = listed('enricher');
    expect(all.filter((v) => /^(ENRICHER|BILLING)_/.test(v) && !enricher.has(v))).toEqual([]);
    const ingress = listed('ingress');
    expect(all.filter((v) => v.startsWith('INGRESS_') && !ingress.has(v))).toEqual([]);
  });

  it('lists the Kafka and registry access settings with the commands that reach Kafka or the registry, and only there', () => {
    for (const command of COMMANDS) {
      const help = listed(command);
      for (const [group, anchor] of [[SETTINGS_OF.kafka, 'KAFKA_BROKERS'], [SETTINGS_OF.registry, 'SCHEMA_REGISTRY_URL']] as const) {
        const vars = group.map(envOf);
        expect(vars.filter((v) => help.has(v)), `${command}: ${anchor}`).toEqual(help.has(anchor) ? vars : []);
      }
    }
    expect(listed('migrate').has('KAFKA_SSL')).toBe(false);
  });
});
