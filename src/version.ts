import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

/**
 * The loader's version, from its package.json: what `--version` prints, every log line's
 * `version` field and the `billing_loader_build_info` metric carry, so "which build is running?"
 * has an answer wherever one looks.
 */
export const VERSION: string = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
