import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root (where package.json, schemas/ and migrations/ are), whether run from src/ or dist/. */
export const packageRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));
