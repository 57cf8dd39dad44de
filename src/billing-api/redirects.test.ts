import { describe, expect, it } from 'vitest';
import type { HttpRequest } from './http-exchange.js';
import { nextHop } from './redirects.js';

const get: HttpRequest = { origin: 'https://api.example.com', path: '/api/v1/Contracts/c1', method: 'GET', headers: { authorization: 'Bearer t', accept: 'application/json' }, endpoint: 'resource', resourceType: 'Contract' };
const post: HttpRequest = { origin: 'https://auth.example.com', path: '/oauth/token/', method: 'POST', headers: { authorization: 'Basic x', 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=password&password=p', endpoint: 'token', resourceType: '' };

describe('nextHop', () => {
  it('resolves a relative Location against the current request and keeps the token on the same origin', () => {
    expect(nextHop(get, get, 301, '../Contracts/c2?x=1')).toEqual({ follow: { ...get, path: '/api/v1/Contracts/c2?x=1' } });
  });

  it('drops the Authorization header for another origin, and allows http to https', () => {
    const plain = { ...get, origin: 'http://api.example.com' };
    expect(nextHop(plain, plain, 302, 'https://cdn.example.com/c1')).toEqual({ follow: { ...plain, origin: 'https://cdn.example.com', path: '/c1', headers: { accept: 'application/json' } } });
  });

  it('never goes from https to http, even on the same host', () => {
    expect(nextHop(get, get, 301, 'http://api.example.com/api/v1/Contracts/c1')).toEqual({ refuse: 'HTTP 301 from https to http' });
  });

  it('checks the downgrade against the original scheme, not the previous hop', () => {
    const hop = { ...get, origin: 'https://other.example.com' };
    expect(nextHop(get, hop, 307, 'http://third.example.com/x')).toMatchObject({ refuse: expect.stringMatching(/https to http/) });
  });

  it('keeps a POST and its body for 307 on the same origin, and makes a 303 a GET without a body', () => {
    expect(nextHop(post, post, 307, '/v2/oauth/token/')).toEqual({ follow: { ...post, path: '/v2/oauth/token/' } });
    expect(nextHop(post, post, 303, '/done')).toEqual({ follow: { ...post, path: '/done', method: 'GET', body: undefined, headers: { authorization: 'Basic x' } } });
  });

  it('does not send a request with a body (credentials) to another origin', () => {
    expect(nextHop(post, post, 308, 'https://evil.example.net/oauth/token/')).toMatchObject({ refuse: expect.stringMatching(/another origin/) });
  });

  it.each([undefined, '', 'javascript:alert(1)', 'ftp://api.example.com/x', 'http://[::1'])('refuses Location %j', (location) => {
    expect(nextHop(get, get, 302, location)).toHaveProperty('refuse');
  });
});
