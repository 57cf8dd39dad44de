import { describe, expect, it } from 'vitest';
import { webhookPathToken } from './webhook-path.js';

describe('webhookPathToken', () => {
  it('takes POST /webhooks when no token is configured', () => {
    expect(webhookPathToken('POST', '/webhooks', false)).toEqual({ token: undefined });
    expect(webhookPathToken('POST', '/webhooks?source=billing', false)).toEqual({ token: undefined });
  });

  it('takes POST /webhooks/<segment> when a token is configured, whatever the segment', () => {
    expect(webhookPathToken('POST', '/webhooks/s3cret', true)).toEqual({ token: 's3cret' });
    expect(webhookPathToken('POST', '/webhooks/wrong?x=1', true)).toEqual({ token: 'wrong' });
  });

  it('leaves everything else to Express', () => {
    expect(webhookPathToken('GET', '/webhooks', false)).toBeNull();
    expect(webhookPathToken('POST', '/metrics', false)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks/', false)).toBeNull();
    expect(webhookPathToken('POST', '/Webhooks', false)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks/s3cret', false)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks', true)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks/', true)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks/a/b', true)).toBeNull();
    expect(webhookPathToken('POST', '/webhooks/s3%63ret', true)).toBeNull();
  });
});
