import { setFlagsFromString } from 'node:v8';

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/** The default of HEAP_GROWTH_PERCENT, applied by bin/billing-loader.js before the CLI's modules load. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/**
 * Bounds how far V8 lets a process's heap outgrow its live data before a full collection: to
 * 1 + percent/100 times the live data (0 restores V8's own rule).
 *
 * Why: unless a heap size is given on the node command line, V8 allows the old generation to grow
 * up to 4x the live data between full collections. A loader component with 40 MB of live data
 * then holds 150 MB of heap, nearly all garbage, and passes 200 MB of RSS (measured in bench:e2e;
 * docs/ARCHITECTURE.md, "Memory"). A fixed factor bounds that garbage without capping the heap, so
 * a component whose live data grows (the enricher's heads) collects more often instead of running
 * out of memory. V8 reads the setting when a full collection sets the next limit, so unlike heap
 * sizes, which are fixed when the process starts, it takes effect when set at run time; a limit
 * set before then stands until the next full collection, which is why the executable applies the
 * default before loading anything else.
 *
 * `--heap-growing-percent` on the node command line wins over the configuration.
 */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some((arg) => FLAG.test(arg))) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
