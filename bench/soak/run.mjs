#!/usr/bin/env node
// `npm run soak [-- --minutes N] [--seed N] [--watchdog-stall-ms MS] [--watchdog-liveness-ms MS]`: the soak (bench/soak/soak.run.ts), run through
// vitest as a TypeScript runner. Default 30 minutes of steady webhooks with a fault every minute.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, seed: { type: 'string', default: String(Date.now() % 100000) }, 'watchdog-stall-ms': { type: 'string', default: '90000' }, 'watchdog-liveness-ms': { type: 'string', default: '60000' }, faults: { type: 'string', default: 'broker-restart,postgres-restart,registry-restart,sigkill,api-5xx-burst,api-429-storm' }, help: { type: 'boolean', default: false } } });
if (values.help) {
  console.log('usage: npm run soak -- [--minutes N (default 30)] [--seed N] [--watchdog-stall-ms MS (90000)] [--watchdog-liveness-ms MS (60000)]\n  [--faults broker-restart,postgres-restart,registry-restart,sigkill,api-5xx-burst,api-429-storm (the default: all)]\nStarts a private Kafka, PostgreSQL and schema registry, the sandbox, and ingress, enricher and sink as separate\nprocesses; strikes a random fault every minute; then compares the warehouse with the sandbox\'s truth.');
  process.exit(0);
}
if (!/^\d+(\.\d+)?$/.test(values.minutes) || Number(values.minutes) <= 0) {
  console.error('soak: --minutes: expected a positive number');
  process.exit(2);
}
for (const flag of ['watchdog-stall-ms', 'watchdog-liveness-ms']) {
  if (!/^\d+$/.test(values[flag])) {
    console.error(`soak: --${flag}: expected milliseconds`);
    process.exit(2);
  }
}
const root = fileURLToPath(new URL('../..', import.meta.url));
const child = spawn('npx', ['vitest', 'run', '--config', 'bench/soak/vitest.config.ts'], { cwd: root, stdio: 'inherit', env: { ...process.env, SOAK_MINUTES: values.minutes, SOAK_SEED: values.seed, SOAK_WATCHDOG_STALL_MS: values['watchdog-stall-ms'], SOAK_WATCHDOG_LIVENESS_MS: values['watchdog-liveness-ms'], SOAK_FAULTS: values.faults } });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
