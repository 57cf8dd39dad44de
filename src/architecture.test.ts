import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = dirname(fileURLToPath(import.meta.url));

/** The pipeline's stages: each talks to the others only through Kafka, in the formats of src/wire/. */
const STAGES = ['ingress', 'enricher', 'sink', 'backfill'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

// Static imports and re-exports (also `import type`), side-effect imports and dynamic import().
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;

/** The files under src/ that a file imports, as paths relative to src/ (packages are left out). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)]
    .map((m) => m[1] as string)
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(srcDir, resolve(dirname(file), s)).split('\\').join('/'));
}

/** The top folder under src/ of a path relative to src/ (undefined for a file directly in src/). */
const areaOf = (path: string): string | undefined => (path.includes('/') ? path.split('/')[0] : undefined);

const edges = sourceFiles(srcDir).flatMap((file) => {
  const from = relative(srcDir, file).split('\\').join('/');
  return importsOf(file).map((to) => ({ from, to }));
});

describe('architecture', () => {
  it('reads the imports of the source tree', () => {
    // Guards the checks below against a regex that matches nothing.
    expect(edges.some((e) => e.from === 'pipeline.ts' && e.to === 'enricher/enricher.js')).toBe(true);
    expect(edges.length).toBeGreaterThan(200);
  });

  it('no stage imports another stage', () => {
    const crossing = edges.filter(({ from, to }) => {
      const a = areaOf(from);
      const b = areaOf(to);
      return a !== undefined && b !== undefined && a !== b && STAGES.includes(a) && STAGES.includes(b);
    });
    expect(crossing.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it('the shared layers (wire formats, Kafka plumbing) import no stage', () => {
    // A test beside a wire format may check it against the stage that writes it (webhook-record.test.ts parses bodies as the ingress does).
    const upward = edges.filter(({ from, to }) => !from.endsWith('.test.ts') && ['wire', 'kafka'].includes(areaOf(from) ?? '') && STAGES.includes(areaOf(to) ?? ''));
    expect(upward.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it('production code outside src/stack/ and src/cli/ does not import the local stack', () => {
    const intoStack = edges.filter(({ from, to }) => {
      const a = areaOf(from);
      if (a === 'stack' || a === 'cli' || from.endsWith('.test.ts')) return false;
      return areaOf(to) === 'stack';
    });
    expect(intoStack.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });
});
