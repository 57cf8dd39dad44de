#!/usr/bin/env node
// `npm run soak [-- --minutes N] [-- --seed N]`: the soak (bench/soak/soak.run.ts), run through
// vitest as a TypeScript runner. Default 30 minutes of steady webhooks with a fault every minute.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, seed: { type: 'string', default: String(Date.now() % 100000) }, help: { type: 'boolean', default: false } } });
if (values.help) {
  console.log('usage: npm run soak -- [--minutes N (default 30)] [--seed N]\nStarts a private Kafka, PostgreSQL and schema registry, the sandbox, and ingress, enricher and sink as separate\nprocesses; strikes a random fault every minute; then compares the warehouse with the sandbox\'s truth.');
  process.exit(0);
}
if (!/^\d+(\.\d+)?$/.test(values.minutes) || Number(values.minutes) <= 0) {
  console.error('soak: --minutes: expected a positive number');
  process.exit(2);
}
const root = fileURLToPath(new URL('../..', import.meta.url));
const child = spawn('npx', ['vitest', 'run', '--config', 'bench/soak/vitest.config.ts'], { cwd: root, stdio: 'inherit', env: { ...process.env, SOAK_MINUTES: values.minutes, SOAK_SEED: values.seed } });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
