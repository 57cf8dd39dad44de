import { randomBytes } from 'node:crypto';

export interface IssuedToken {
  accessToken: string;
  /** Seconds until expiry; undefined: never expires (the upstream's current behaviour, spec 5.4). */
  expiresIn: number | undefined;
}

/**
 * Issues and checks opaque bearer tokens. Tokens are random strings the simulator remembers
 * (spec 5.3: tokens are not self-validated). They live forever unless `tokenLifetimeSeconds`
 * is set, or until `revokeAll()`, so a client's renewal on 401 can be exercised.
 */
export class TokenIssuer {
  private readonly tokens = new Map<string, { expiresAtMs: number }>();
  /** Token requests received, successful or not: proves a client reuses its token (spec 5.5). */
  requests = 0;
  issued = 0;

  constructor(
    private lifetimeSeconds: number | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  issue(): IssuedToken {
    const accessToken = randomBytes(24).toString('base64url');
    const lifetime = this.lifetimeSeconds;
    this.tokens.set(accessToken, { expiresAtMs: lifetime === undefined ? Infinity : this.now() + lifetime * 1000 });
    this.issued++;
    return { accessToken, expiresIn: lifetime };
  }

  isValid(token: string): boolean {
    const entry = this.tokens.get(token);
    if (!entry) return false;
    if (entry.expiresAtMs <= this.now()) {
      this.tokens.delete(token);
      return false;
    }
    return true;
  }

  /** Invalidates every token issued so far; the next API request with one of them gets 401. */
  revokeAll(): number {
    const n = this.tokens.size;
    this.tokens.clear();
    return n;
  }

  /** Applies to tokens issued from now on. `undefined`: never expire. */
  setLifetime(seconds: number | undefined): void {
    this.lifetimeSeconds = seconds;
  }
}
