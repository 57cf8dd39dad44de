import { describe, expect, it } from 'vitest';
import { analystConnectionString } from './analyst-pool.js';
import { containsPattern } from './customer-search.js';
import { BadParameter, MAX_RANGE_DAYS, parseCurrency, parseDay, parseDayRange, parseResourceId, parseSearchText } from './request-params.js';

describe('parseDayRange', () => {
  it('takes two calendar days in order, both ends included', () => {
    expect(parseDayRange({ from: '2025-01-01', to: '2025-01-01' })).toEqual({ from: '2025-01-01', to: '2025-01-01' });
    expect(parseDayRange({ from: '2024-02-29', to: '2025-03-31' })).toEqual({ from: '2024-02-29', to: '2025-03-31' });
  });

  it.each([
    [{ from: '2025-02-29', to: '2025-03-01' }, 'from: no such day: 2025-02-29'],
    [{ from: '2025-1-01', to: '2025-03-01' }, 'from: expected a date YYYY-MM-DD, got "2025-1-01"'],
    [{ from: '2025-01-01' }, 'to: expected a date YYYY-MM-DD, got null'],
    [{ from: '2025-01-01', to: ['2025-01-02', '2025-01-03'] }, 'to: expected a date YYYY-MM-DD, got ["2025-01-02","2025-01-03"]'],
    [{ from: '2025-03-02', to: '2025-03-01' }, 'to: must not be before from (2025-03-02), got 2025-03-01'],
  ])('refuses %j', (query, message) => {
    expect(() => parseDayRange(query)).toThrow(new BadParameter(message.slice(0, message.indexOf(':')), message.slice(message.indexOf(':') + 2)));
  });

  it(`refuses more than ${MAX_RANGE_DAYS} days`, () => {
    expect(() => parseDayRange({ from: '2000-01-01', to: '2025-01-01' })).toThrow(/^to: at most 3660 days after from/);
    expect(parseDay('x', '2016-02-29')).toBe('2016-02-29');
  });
});

describe('parseResourceId', () => {
  it('takes the ids the billing service issues and nothing that could be more than one', () => {
    expect(parseResourceId('5f1a0c3e9b7d4a2e8c6f0b12')).toBe('5f1a0c3e9b7d4a2e8c6f0b12');
    for (const bad of ['', ' x', "a'b", 'a b', 'x'.repeat(129), undefined, ['a']]) expect(() => parseResourceId(bad), JSON.stringify(bad)).toThrow(BadParameter);
  });
});

describe('analystConnectionString', () => {
  it('starts every session as the analyst role, read-only, in UTC, after any options the URL had; their work_mem wins over ours', () => {
    const options = (url: string) => new URL(analystConnectionString(url)).searchParams.get('options');
    expect(options('postgres://u:p@h:5432/db')).toBe('-c work_mem=64MB -c role=billing_loader_analyst -c default_transaction_read_only=on -c TimeZone=UTC');
    expect(options('postgres://u:p@h/db?options=-c%20statement_timeout%3D5000%20-c%20work_mem%3D16MB&sslmode=require')).toBe(
      '-c work_mem=64MB -c statement_timeout=5000 -c work_mem=16MB -c role=billing_loader_analyst -c default_transaction_read_only=on -c TimeZone=UTC',
    );
    expect(new URL(analystConnectionString('postgres://u:p@h/db?sslmode=require')).searchParams.get('sslmode')).toBe('require');
    // DATABASE_ROLES=schema: the schema's own analyst role.
    expect(new URL(analystConnectionString('postgres://u:p@h/db', 'acme_analyst')).searchParams.get('options')).toBe('-c work_mem=64MB -c role=acme_analyst -c default_transaction_read_only=on -c TimeZone=UTC');
  });
});

describe('parseSearchText', () => {
  it('takes a trimmed text of 1-100 characters, and refuses blank, longer or repeated ones', () => {
    expect(parseSearchText('  Acme GmbH ')).toBe('Acme GmbH');
    expect(parseSearchText("o'brien@example.com")).toBe("o'brien@example.com");
    for (const bad of ['', '   ', 'x'.repeat(101), undefined, ['a', 'b']]) expect(() => parseSearchText(bad), JSON.stringify(bad)).toThrow(BadParameter);
  });

  it('is matched anywhere, with its own LIKE wildcards taken literally', () => {
    expect(containsPattern('acme')).toBe('%acme%');
    expect(containsPattern('100%_a\\b')).toBe('%100\\%\\_a\\\\b%');
  });
});

describe('parseCurrency', () => {
  it('takes a three-letter code, or reporting for every currency through fx_rates', () => {
    expect(parseCurrency('EUR')).toBe('EUR');
    expect(parseCurrency('reporting')).toBeNull();
    for (const bad of ['eur', 'EURO', '', undefined, ['EUR']]) expect(() => parseCurrency(bad), JSON.stringify(bad)).toThrow(BadParameter);
  });
});
