import { DynamoAnswerStore } from "../adapters/answer-store.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { createSecretResolver } from "../adapters/secrets.ts";
import { DynamoStatsStore } from "../adapters/stats-store.ts";
import { createUpstream } from "../adapters/upstream.ts";
import { DynamoUsageStore } from "../adapters/usage-store.ts";
import { createProxyHandler } from "./lambda.ts";
import { createProxyRuntime } from "./runtime.ts";

/** The proxy Lambda: wiring only. Everything at module scope lives as long as the container. */
const store = stateStoreFromEnv(process.env);

export const handler = createProxyHandler(
  createProxyRuntime({
    configSource: configSourceFromEnv(process.env),
    secrets: createSecretResolver(process.env),
    store,
    statsStore: new DynamoStatsStore({ client: store.client, tableName: store.tableName }),
    usageStore: new DynamoUsageStore({ client: store.client, tableName: store.tableName }),
    sharedAnswers: new DynamoAnswerStore({ client: store.client, tableName: store.tableName }),
    upstream: createUpstream(),
  }),
);
