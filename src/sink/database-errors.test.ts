import { describe, expect, it } from 'vitest';
import { classifyDatabaseError } from './database-errors.js';

const pgError = (code: string) => Object.assign(new Error('x'), { code });

describe('classifyDatabaseError', () => {
  it('retries outages, refuses only data errors, and blocks on everything else', () => {
    expect(classifyDatabaseError(pgError('57P01'))).toBe('transient'); // admin shutdown
    expect(classifyDatabaseError(pgError('08006'))).toBe('transient');
    expect(classifyDatabaseError(pgError('ECONNREFUSED'))).toBe('transient');
    expect(classifyDatabaseError(new Error('Connection terminated unexpectedly'))).toBe('transient');
    expect(classifyDatabaseError(pgError('22P02'))).toBe('data');
    expect(classifyDatabaseError(pgError('23505'))).toBe('data');
    expect(classifyDatabaseError(pgError('42P01'))).toBe('blocked'); // migrations not run: never a DLQ
    expect(classifyDatabaseError(pgError('42501'))).toBe('blocked');
  });
});
