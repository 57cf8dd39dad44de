import { describe, expect, it } from 'vitest';
import type { Logger } from './log.js';
import { readinessReporter } from './ops-server.js';

function recordingLogger(): { log: Logger; lines: [string, string, Record<string, unknown> | undefined][] } {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  const log: Logger = {
    debug: (msg, fields) => void lines.push(['debug', msg, fields]),
    info: (msg, fields) => void lines.push(['info', msg, fields]),
    warn: (msg, fields) => void lines.push(['warn', msg, fields]),
    error: (msg, fields) => void lines.push(['error', msg, fields]),
    child: () => log,
  };
  return { log, lines };
}

describe('readinessReporter', () => {
  it('logs the reasons the public /readyz leaves out, once per change', () => {
    const { log, lines } = recordingLogger();
    const report = readinessReporter(log);
    const down = { ready: false, checks: { 'ingress.kafka': { ok: false, reason: 'connect ECONNREFUSED 10.0.0.7:9092' }, 'ingress.schema-registry': { ok: true } } };
    report(down);
    report(down);
    report({ ready: true, checks: { 'ingress.kafka': { ok: true } } });
    report({ ready: true, checks: { 'ingress.kafka': { ok: true } } });
    expect(lines).toEqual([
      ['warn', 'not ready', { failing: { 'ingress.kafka': 'connect ECONNREFUSED 10.0.0.7:9092' } }],
      ['info', 'ready', undefined],
    ]);
  });
});
