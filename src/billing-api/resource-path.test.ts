import { describe, expect, it } from 'vitest';
import { ApiRejectedError } from './api-errors.js';
import { MAX_ID_LENGTH, collectionPath, encodeResourceId, resourcePath } from './resource-path.js';

describe('encodeResourceId', () => {
  it.each([
    ['5f1a2b', '5f1a2b'],
    ['../Customers/x', '..%2FCustomers%2Fx'],
    ['..', '%2E%2E'],
    ['.', '%2E'],
    ['...', '...'],
    ['a/b?c#d', 'a%2Fb%3Fc%23d'],
    ['a b%20c', 'a%20b%2520c'],
    ['Grüße/✓', 'Gr%C3%BC%C3%9Fe%2F%E2%9C%93'],
    ['x\r\nHost: evil', 'x%0D%0AHost%3A%20evil'],
    ['%2E%2E', '%252E%252E'],
  ])('encodes %j as one segment %j', (id, encoded) => {
    expect(encodeResourceId(id)).toBe(encoded);
  });

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(MAX_ID_LENGTH + 1)],
    ['a lone surrogate', 'a\uD800b'],
  ])('rejects an id that is %s as the record\'s fault', (_what, id) => {
    expect(() => encodeResourceId(id, 'Contract')).toThrow(ApiRejectedError);
  });
});

describe('resourcePath', () => {
  it('joins the base path, /api/v1, the type path and the encoded id as text', () => {
    expect(resourcePath('', 'Contracts', '../Customers/x')).toBe('/api/v1/Contracts/..%2FCustomers%2Fx');
    expect(resourcePath('/billing/', '/Contracts/', '..')).toBe('/billing/api/v1/Contracts/%2E%2E');
    expect(collectionPath('/billing', 'v2/Contracts')).toBe('/billing/api/v1/v2/Contracts');
  });
});
