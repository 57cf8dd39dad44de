import { defineConfig } from 'vitest/config';

/**
 * Three groups, run one after another:
 * - unit: pure logic beside the code;
 * - integration: real Kafka, registry, PostgreSQL (test/global-setup.ts), files in parallel,
 *   each with its own topics, groups and schema;
 * - faults: tests that kill the loader's processes or stop a service of their own (a private
 *   broker or database), three files at a time, after everything else: most of their time is
 *   spent waiting out session and retry timeouts, not computing;
 * - shared-service faults: the one test that stops the shared stack's PostgreSQL, alone and
 *   last, so it never pulls the database from under another test.
 */
/** Stops the shared stack's PostgreSQL; every other fault test brings its own services or kills only the loader's processes. */
const SHARED_SERVICE_FAULTS = 'test/faults/sink-postgres-restart.test.ts';

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
          // Three files at once on two cores: with two, both cores were 45 % idle on average (the
          // tests wait on consumer-group joins, broker round trips and the stages' timers).
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          exclude: [SHARED_SERVICE_FAULTS],
          testTimeout: 420_000,
          hookTimeout: 180_000,
          // Mostly waiting (broker restarts, session timeouts): 45 % idle with two at once.
          maxWorkers: 3,
          sequence: { groupOrder: 2 },
        },
      },
      {
        test: {
          name: 'shared-service-faults',
          include: [SHARED_SERVICE_FAULTS],
          testTimeout: 420_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
