import { defineConfig } from 'vitest/config';

/**
 * `npm run soak` runs bench/soak/soak.run.ts through vitest only as a TypeScript runner (it reuses
 * the fault tests' TypeScript helpers). It is no test: `npm test` never runs it.
 */
export default defineConfig({
  test: {
    include: ['bench/soak/soak.run.ts'],
    testTimeout: 6 * 3600_000,
    hookTimeout: 600_000,
    fileParallelism: false,
  },
});
