import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/registry/registry.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';

/**
 * Several instances of a role start together and each registers the topics' schemas: the first
 * registration of a subject races with the others'. Every instance must get the one id (the
 * registry may refuse the losers with a conflict while the winner's write lands).
 */
describe('registering one schema from several processes at once', () => {
  it('gives every caller the same id, never an error', async () => {
    const schema = JSON.stringify({ type: 'record', name: 'Raced', fields: [{ name: 'a', type: 'string' }] });
    for (let round = 0; round < 5; round++) {
      const subject = `registry-race-${uniqueSuffix()}-value`;
      // One client per caller: a shared client would answer the others from its cache.
      const callers = Array.from({ length: 6 }, () => createRegistry(testConfig()));
      const ids = await Promise.all(callers.map((registry) => registry.register(subject, schema)));
      expect(new Set(ids).size).toBe(1);
    }
  });
});
