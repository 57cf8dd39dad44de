#!/usr/bin/env node
// Makes `npm start` and `npm test` work on a clean clone with nothing run before them:
// installs the locked dependencies when node_modules is missing or older than the lock file or
// a patch in patches/ (npm ci's postinstall applies them to node_modules), and rebuilds dist/
// when any source file is newer than the last build. Plain Node, no dependencies.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const run = (cmd) => execSync(cmd, { cwd: root, stdio: 'inherit' });
const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : 0);

function newest(dir) {
  let max = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    max = Math.max(max, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return max;
}

const installed = join(root, 'node_modules', '.package-lock.json');
const patches = join(root, 'patches');
if (mtime(installed) < Math.max(mtime(join(root, 'package-lock.json')), existsSync(patches) ? newest(patches) : 0)) {
  console.error('bootstrap: installing dependencies (npm ci)');
  run('npm ci --no-audit --no-fund');
}
const stamp = join(root, 'dist', '.build-stamp');
if (mtime(stamp) < Math.max(newest(join(root, 'src')), mtime(join(root, 'tsconfig.json')))) {
  console.error('bootstrap: building (tsc)');
  run('npm run --silent build');
  run('node -e "require(\'fs\').writeFileSync(\'dist/.build-stamp\', \'\')"');
}
