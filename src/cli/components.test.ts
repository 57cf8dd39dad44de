import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { STARTING_CONDITION, composeComponents, startOrStop } from './components.js';

const config = loadConfig({ KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL: 'postgres://u@h/d', LOG_LEVEL: 'error' });

describe('startOrStop', () => {
  it('keeps the process not ready until every stage has started', async () => {
    const c = composeComponents(config, { service: 'test', clientId: 'test' });
    let finish = () => {};
    const started = startOrStop(c, () => new Promise<void>((resolve) => (finish = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    const during = await c.health.readiness();
    expect(during.ready).toBe(false);
    expect(during.checks[STARTING_CONDITION]?.ok).toBe(false);
    finish();
    await started;
    const after = await c.health.readiness();
    expect(after.checks[STARTING_CONDITION]).toBeUndefined();
    expect(after.ready).toBe(true);
  });

  it('stops what had started when the start fails, and stays not ready', async () => {
    const c = composeComponents(config, { service: 'test', clientId: 'test' });
    let stopped = false;
    await expect(
      startOrStop(c, async () => {
        c.onStop(async () => void (stopped = true));
        throw new Error('broker unreachable');
      }),
    ).rejects.toThrow('broker unreachable');
    expect(stopped).toBe(true);
    expect((await c.health.readiness()).ready).toBe(false);
  });
});

describe('startOrStop deadline', () => {
  it('turns a start that never ends into a failed start, stopping what had started', async () => {
    const c = composeComponents(config, { service: 'test', clientId: 'test' });
    let stopped = false;
    const hung = startOrStop(
      c,
      async () => {
        c.onStop(async () => void (stopped = true));
        await new Promise(() => undefined);
      },
      50,
    );
    await expect(hung).rejects.toThrow(/not started within/);
    expect(stopped).toBe(true);
    expect((await c.health.readiness()).ready).toBe(false);
  });
});
