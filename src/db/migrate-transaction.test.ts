import { describe, expect, it } from 'vitest';
import { statementHead } from './migrate-transaction.js';

describe('statementHead', () => {
  it('names the statement a lock wait timed out on: its first line up to the body, noting more statements after it', () => {
    expect(statementHead('CREATE OR REPLACE VIEW "s"."contract_history" AS SELECT f.resource_id,\n  f.version')).toBe('CREATE OR REPLACE VIEW "s"."contract_history"');
    expect(statementHead('DROP FUNCTION IF EXISTS "s"."contract_as_of"(timestamptz)')).toBe('DROP FUNCTION IF EXISTS "s"."contract_as_of"');
    expect(statementHead('-- The metric views.\n\nCREATE VIEW metric_contract_lifecycle AS\nSELECT 1;\n\nCREATE VIEW contract_daily AS SELECT 2;\n')).toBe('CREATE VIEW metric_contract_lifecycle (and the statements after it)');
    expect(statementHead('LOCK TABLE "s".resource_versions IN SHARE MODE')).toBe('LOCK TABLE "s".resource_versions IN SHARE MODE');
  });
});
