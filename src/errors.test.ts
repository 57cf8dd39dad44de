import { describe, expect, it } from 'vitest';
import { classifyDatabaseError, classifyHttpStatus, isConnectionLost, classifyRegistryError, isRetriable, isRetriableSqlState, LoaderError } from './errors.js';

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

const pgError = (code: string) => Object.assign(new Error('x'), { code });
/** What the registry client throws for an HTTP answer (and, as status 400, for a network failure). */
const registryError = (status: number) => Object.assign(new Error(`registry answered ${status}`), { status });
const framed = (schemaId: number) => Buffer.concat([Buffer.from([0]), Buffer.from([0, 0, 0, schemaId]), Buffer.from('avro')]);

describe('classifyDatabaseError', () => {
  it.each([
    [pgError('57P01'), 'transient'], // admin shutdown
    [pgError('08006'), 'transient'],
    [pgError('40P01'), 'transient'],
    [pgError('ECONNREFUSED'), 'transient'],
    [new Error('Connection terminated unexpectedly'), 'transient'],
    [pgError('22P02'), 'bad-record'],
    [pgError('23505'), 'bad-record'],
    [pgError('42P01'), 'configuration'], // migrations not run: never a DLQ
    [pgError('42501'), 'configuration'], // a grant missing
    [new Error('something else'), 'configuration'],
  ] as const)('%s is %s', (err, kind) => {
    expect(classifyDatabaseError(err)).toBe(kind);
  });
});

describe('isConnectionLost', () => {
  it.each([
    [pgError('57P01'), true], // the session terminated (shutdown, pg_terminate_backend)
    [pgError('08006'), true],
    [new Error('Connection terminated unexpectedly'), true],
    [new Error('Client has encountered a connection error and is not queryable'), true],
    [pgError('40001'), false], // a serialization failure: the session goes on
    [pgError('55P03'), false],
    [pgError('23505'), false],
    [new Error('something else'), false],
  ] as const)('%s: %s', (err, lost) => {
    expect(isConnectionLost(err)).toBe(lost);
  });
});

describe('classifyRegistryError', () => {
  it.each([
    ['a 5xx answer', 'transient', registryError(503), framed(7)],
    ['a network failure the client reports as status 400', 'transient', registryError(400), framed(7)],
    ['a socket error', 'transient', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), framed(7)],
    ['an undici timeout', 'transient', Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), framed(7)],
    ['a retriable loader error', 'transient', new LoaderError('down', { retriable: true }), framed(7)],
    ['a 404 for the schema id of a framed record', 'configuration', registryError(404), framed(7)],
    ['a 404 for a value that is not framed', 'bad-record', registryError(404), Buffer.from('{"json":true}')],
    ['an Avro decoding error', 'bad-record', new Error('truncated buffer'), framed(7)],
    ['a decoder TypeError', 'bad-record', new TypeError('bad input'), framed(7)],
    ['a failure on an empty value', 'bad-record', new Error('invalid magic byte'), null],
  ] as const)('%s is %s', (_what, kind, err, value) => {
    expect(classifyRegistryError(err, value)).toBe(kind);
  });
});
