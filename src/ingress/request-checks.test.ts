import { describe, expect, it } from 'vitest';
import { isJsonContentType, tokenMatcher } from './request-checks.js';

describe('isJsonContentType', () => {
  it.each(['application/json', 'Application/JSON', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/vnd.billing+json'])('accepts %s', (header) => {
    expect(isJsonContentType(header)).toBe(true);
  });

  it.each([undefined, '', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp', 'text/json', 'application/json; charset=latin1'])('rejects %s', (header) => {
    expect(isJsonContentType(header)).toBe(false);
  });
});

describe('tokenMatcher', () => {
  const token = 'a-secret-token-0123456789';
  const matches = tokenMatcher([token]);
  it('matches only the exact token', () => {
    expect(matches(token)).toBe(true);
    expect(matches(token.toUpperCase())).toBe(false);
    expect(matches(token.slice(0, -1))).toBe(false);
    expect(matches(`${token}x`)).toBe(false);
    expect(matches('')).toBe(false);
  });
});

describe('tokenMatcher with several tokens (rotation)', () => {
  const matches = tokenMatcher(['old-token-0123456789', 'new-token-0123456789']);
  it('matches each listed token exactly, and nothing else', () => {
    expect(matches('old-token-0123456789')).toBe(true);
    expect(matches('new-token-0123456789')).toBe(true);
    expect(matches('old-token-0123456789,new-token-0123456789')).toBe(false);
    expect(matches('new-token-012345678')).toBe(false);
    expect(matches('')).toBe(false);
  });
});
