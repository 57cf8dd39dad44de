import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checksumMatches, migrationChecksum } from './migration-checksum.js';

describe('migration checksum', () => {
  const sql = '-- Why this table exists.\nCREATE TABLE t (a int);\n  -- indented note\nCREATE INDEX ON t (a);\n';

  it('ignores whole-line comments, so a reworded explanation is not a changed migration', () => {
    const reworded = '-- Why this table exists, said better\n-- over two lines.\nCREATE TABLE t (a int);\nCREATE INDEX ON t (a);\n';
    expect(migrationChecksum(reworded)).toBe(migrationChecksum(sql));
  });

  it('changes with any statement text, including a trailing comment on a statement line', () => {
    expect(migrationChecksum(sql.replace('a int', 'a bigint'))).not.toBe(migrationChecksum(sql));
    expect(migrationChecksum(sql.replace('(a int);', '(a int); -- note'))).not.toBe(migrationChecksum(sql));
  });

  it('accepts what earlier versions recorded: the full text, and the text before comments were reworded (that migration only)', () => {
    expect(checksumMatches('0004_x.sql', migrationChecksum(sql), sql)).toBe(true);
    expect(checksumMatches('0004_x.sql', createHash('sha256').update(sql).digest('hex'), sql)).toBe(true);
    expect(checksumMatches('0001_webhook_events.sql', 'cd77492816f73146befeaebf45b12c6a23df1dcd460300b1abbf49f756028f11', sql)).toBe(true);
    expect(checksumMatches('0002_resource_versions.sql', 'cd77492816f73146befeaebf45b12c6a23df1dcd460300b1abbf49f756028f11', sql)).toBe(false);
    expect(checksumMatches('0001_webhook_events.sql', 'edited', sql)).toBe(false);
  });
});
