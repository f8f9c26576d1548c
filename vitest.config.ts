import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most files wait on blocks, timers and child processes more than they compute: two at a
    // time keep two cores busy, where vitest's default here (cores − 1) ran one at a time.
    maxWorkers: 2,
    setupFiles: ["test/support/scratch-cleanup.ts"],
    // One DynamoDB Local for the run, started by the first file that asks for it.
    globalSetup: ["test/support/dynamodb-local-broker.ts"],
    env: { NODE_NO_WARNINGS: "1" },
  },
});
