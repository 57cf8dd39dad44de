import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createHealth } from './health.js';
import { registerReadinessMetrics } from './readiness-metrics.js';

/** The samples of one metric in the text format, without the HELP and TYPE lines. */
const samples = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));

describe('registerReadinessMetrics', () => {
  it('exports what /readyz would answer at scrape time: billing_loader_ready and one series per check', async () => {
    const health = createHealth();
    const registry = new Registry();
    registerReadinessMetrics(registry, health);
    let kafkaUp = true;
    health.addCheck('kafka', () => (kafkaUp ? Promise.resolve() : Promise.reject(new Error('down'))));
    health.addCheck('registry', () => Promise.reject(new Error('down')), { informational: true });
    expect(samples(await registry.metrics(), 'billing_loader_ready')).toEqual(['billing_loader_ready 1']);
    expect(samples(await registry.metrics(), 'billing_loader_readiness_check_ok')).toEqual([
      'billing_loader_readiness_check_ok{check="kafka",informational="false"} 1',
      'billing_loader_readiness_check_ok{check="registry",informational="true"} 0',
    ]);

    kafkaUp = false;
    health.setCondition('startup', 'starting');
    expect(samples(await registry.metrics(), 'billing_loader_ready')).toEqual(['billing_loader_ready 0']);
    expect(samples(await registry.metrics(), 'billing_loader_readiness_check_ok')).toContain('billing_loader_readiness_check_ok{check="startup",informational="false"} 0');

    // A condition that cleared leaves no series behind.
    kafkaUp = true;
    health.setCondition('startup', undefined);
    const text = await registry.metrics();
    expect(samples(text, 'billing_loader_ready')).toEqual(['billing_loader_ready 1']);
    expect(text).not.toContain('check="startup"');
  });
});
