import { defineConfig } from 'vitest/config';

/**
 * Three groups, run one after another:
 * - unit: pure logic beside the code;
 * - integration: real Kafka, registry, PostgreSQL (test/global-setup.ts), files in parallel,
 *   each with its own topics, groups and schema;
 * - faults: tests that stop or kill shared services (broker, database), one file at a time and
 *   after everything else, so they never pull a service from under another test.
 */
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { test: { name: 'unit', include: ['src/**/*.test.ts'], sequence: { groupOrder: 0 } } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Two cores: two files at once keeps the broker busy without starving it.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          testTimeout: 420_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
