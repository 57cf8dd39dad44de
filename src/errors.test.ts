import { describe, expect, it } from 'vitest';
import { classifyHttpStatus, isRetriable, isRetriableSqlState, LoaderError } from './errors.js';

describe('error classification', () => {
  it.each([
    [200, 'ok'], [204, 'ok'], [404, 'gone'], [410, 'gone'], [429, 'rate-limited'], [401, 'unauthorized'],
    [403, 'forbidden'], [408, 'retry'], [500, 'retry'], [503, 'retry'], [400, 'bad-request'], [422, 'bad-request'],
  ] as const)('HTTP %i is %s', (status, disposition) => {
    expect(classifyHttpStatus(status)).toBe(disposition);
  });

  it.each([
    ['08006', true], ['57P01', true], ['53300', true], ['40001', true], ['40P01', true],
    ['23505', false], ['42P01', false], ['22P02', false], [undefined, false],
  ] as const)('SQLSTATE %s retriable: %s', (code, expected) => {
    expect(isRetriableSqlState(code)).toBe(expected);
  });

  it('treats network errors as retriable and programmer errors as not', () => {
    expect(isRetriable(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isRetriable(new TypeError('x'))).toBe(false);
    expect(isRetriable(new LoaderError('x', { retriable: true }))).toBe(true);
    expect(isRetriable(new Error('plain'))).toBe(false);
  });
});
