import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    setupFiles: ["test/support/scratch-cleanup.ts"],
    // One DynamoDB Local for the run, started by the first file that asks for it.
    globalSetup: ["test/support/dynamodb-local-broker.ts"],
    env: { NODE_NO_WARNINGS: "1" },
  },
});
