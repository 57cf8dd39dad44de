import { createHash } from 'node:crypto';

/**
 * What a migration's recorded checksum covers: its statements, not its explanations. Whole-line
 * `--` comments are left out, so a comment can be reworded without every warehouse that applied
 * the file refusing to migrate again; any change to a statement line (a trailing comment on one
 * included) is still a changed migration.
 */
export function migrationChecksum(sql: string): string {
  const statements = sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  return createHash('sha256').update(statements).digest('hex');
}

/**
 * Full-text checksums recorded by earlier versions for the text these files had before their
 * comments were reworded (the statements are unchanged).
 */
const EARLIER_TEXTS: Readonly<Record<string, readonly string[]>> = {
  '0001_webhook_events.sql': ['cd77492816f73146befeaebf45b12c6a23df1dcd460300b1abbf49f756028f11'],
  '0002_resource_versions.sql': ['b9772f13f089d34c015100c677aae317b87e86646ec2335686b34a018723d089'],
  '0003_loaded_at.sql': ['5e438ac4691215bf764609f9397f43c66b6a842068345078c333187223ac292f'],
};

/**
 * Whether the checksum a warehouse recorded for `name` belongs to `sql`: the statement checksum
 * recorded now, the full-text checksum earlier versions recorded, or one of the file's earlier
 * texts above.
 */
export function checksumMatches(name: string, recorded: string, sql: string): boolean {
  return recorded === migrationChecksum(sql) || recorded === createHash('sha256').update(sql).digest('hex') || (EARLIER_TEXTS[name] ?? []).includes(recorded);
}
