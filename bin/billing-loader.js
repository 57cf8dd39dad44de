#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm run build`, which `npm start`/`npm test` run for you).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(entry)) {
  console.error('billing-loader: not built yet; run `npm run build` (or `npm start`, which builds first)');
  process.exit(1);
}
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
