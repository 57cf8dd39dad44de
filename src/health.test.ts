import { describe, expect, it } from 'vitest';
import { createHealth } from './health.js';

describe('createHealth', () => {
  it('reports a failing informational check in the reasons without making the process not ready', async () => {
    const health = createHealth();
    health.addCheck('kafka', async () => {});
    health.addCheck('registry', () => Promise.reject(new Error('connect ECONNREFUSED')), { informational: true });
    expect(await health.readiness()).toEqual({ ready: true, checks: { kafka: { ok: true }, registry: { ok: false, reason: 'connect ECONNREFUSED', informational: true } } });
  });

  it('is not ready when a required check fails, informational ones or not', async () => {
    const health = createHealth();
    health.addCheck('kafka', () => Promise.reject(new Error('down')));
    health.addCheck('registry', async () => {}, { informational: true });
    expect((await health.readiness()).ready).toBe(false);
  });
});
