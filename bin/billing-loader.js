#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm run build`, which `npm start`/`npm test` run for you).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// kafkajs 2.2.4 asks for negative timer delays; Node.js 24 and later run such a timer after 1 ms,
// as earlier lines did, but also print a plain-text TimeoutNegativeWarning on stderr, among the
// JSON log lines and after a command's one-line error (https://github.com/tulios/kafkajs/issues/1751).
// Only that warning is dropped; every other one is printed as usual.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'TimeoutNegativeWarning' || (warning instanceof Error && warning.name === 'TimeoutNegativeWarning')) return;
  return emitWarning.call(process, warning, ...rest);
};

const dist = (path) => fileURLToPath(new URL(`../dist/${path}`, import.meta.url));
if (!existsSync(dist('cli/main.js'))) {
  console.error('billing-loader: not built yet; run `npm run build` (or `npm start`, which builds first)');
  process.exit(1);
}
// Before the CLI's modules load: loading them runs full collections, and the heap limit each one
// sets stands until the next (src/heap-growth.ts). The configured value replaces it later.
const { applyHeapGrowth, DEFAULT_HEAP_GROWTH_PERCENT } = await import(dist('heap-growth.js'));
applyHeapGrowth(DEFAULT_HEAP_GROWTH_PERCENT);
const { main } = await import(dist('cli/main.js'));
const { endAfterReturn } = await import(dist('cli/process-end.js'));
// Once the command has returned, nothing it left open (a Kafka client call that never settles, a
// connection reopened during the stop) keeps the process up: src/cli/process-end.ts.
endAfterReturn(await main(process.argv.slice(2)));
