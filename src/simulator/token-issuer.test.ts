import { describe, expect, it } from 'vitest';
import { TokenIssuer } from './token-issuer.js';

describe('TokenIssuer', () => {
  it('issues tokens that never expire by default, until revoked', () => {
    let now = 0;
    const issuer = new TokenIssuer(undefined, () => now);
    const t = issuer.issue();
    expect(t.expiresIn).toBeUndefined();
    now = 10 * 365 * 86_400_000;
    expect(issuer.isValid(t.accessToken)).toBe(true);
    expect(issuer.revokeAll()).toBe(1);
    expect(issuer.isValid(t.accessToken)).toBe(false);
  });

  it('expires tokens after the configured lifetime', () => {
    let now = 0;
    const issuer = new TokenIssuer(60, () => now);
    const t = issuer.issue();
    expect(t.expiresIn).toBe(60);
    now = 59_999;
    expect(issuer.isValid(t.accessToken)).toBe(true);
    now = 60_000;
    expect(issuer.isValid(t.accessToken)).toBe(false);
  });

  it('rejects tokens it never issued', () => {
    expect(new TokenIssuer(undefined).isValid('forged')).toBe(false);
  });
});
