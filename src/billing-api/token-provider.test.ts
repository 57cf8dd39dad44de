import { describe, expect, it } from 'vitest';
import { TransientApiError } from './api-errors.js';
import { parseTokenResponse } from './token-provider.js';

describe('parseTokenResponse', () => {
  const now = 1_000_000;

  it('reads an RFC 6749 response without expiry as a token that never expires (spec 5.4)', () => {
    expect(parseTokenResponse('{"access_token":"abc","token_type":"bearer"}', now)).toEqual({ value: 'abc', renewAt: undefined });
    expect(parseTokenResponse('{"access_token":"abc"}', now)).toEqual({ value: 'abc', renewAt: undefined });
  });

  it('renews a tenth of the lifetime early, at most a minute', () => {
    expect(parseTokenResponse('{"access_token":"a","token_type":"Bearer","expires_in":100}', now).renewAt).toBe(now + 90_000);
    expect(parseTokenResponse('{"access_token":"a","expires_in":"3600"}', now).renewAt).toBe(now + 3_540_000);
  });

  it.each([
    ['not JSON', 'oops'],
    ['no token', '{"token_type":"bearer"}'],
    ['an empty token', '{"access_token":""}'],
    ['another token type', '{"access_token":"a","token_type":"mac"}'],
    ['a bad expiry', '{"access_token":"a","expires_in":"soon"}'],
    ['null', 'null'],
  ])('treats %s as a transient upstream fault', (_what, body) => {
    expect(() => parseTokenResponse(body, now)).toThrow(TransientApiError);
  });
});
