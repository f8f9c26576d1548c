import { configDefaults, defineConfig } from "vitest/config";

/**
 * Files whose assertions are about time (a head's lag, a deadline, a minute's burst, answers
 * within a block time, two nodes' blocks stamped the same second, a transaction mined at once,
 * thousands of calls or a few seconds of sleeps within the timeout, a synth within it): they run after the rest, one at a time, so no other file's load
 * stretches what they measure.
 */
const ALONE = [
  "test/e2e/chaos.test.ts",
  "test/e2e/head/served-head-freshness.test.ts",
  "test/e2e/head/served-head.test.ts",
  "test/e2e/head/reorgs.test.ts",
  "test/e2e/head/providers-behind.test.ts",
  "test/e2e/head/lying-quorum-member.test.ts",
  "test/e2e/http/cost-guards.test.ts",
  "test/e2e/http/deadlines.test.ts",
  "test/e2e/send/send-transaction.test.ts",
  "test/e2e/monitor/fork-check.test.ts",
  "test/e2e/monitor/quorum-capture.test.ts",
  "test/e2e/status/metrics.test.ts",
  "test/infra/http-api.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    setupFiles: ["test/support/scratch-cleanup.ts"],
    // One DynamoDB Local for the run, started by the first file that asks for it.
    globalSetup: ["test/support/dynamodb-local-broker.ts"],
    env: { NODE_NO_WARNINGS: "1" },
    projects: [
      {
        test: {
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...ALONE],
          // Most files wait on blocks, timers and child processes more than they compute: two at
          // a time keep two cores busy (one at a time, vitest's default here, left one idle).
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: "alone",
          include: ALONE,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
