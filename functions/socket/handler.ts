import { createSecretResolver } from "../adapters/config/secrets.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { DynamoAnswerStore } from "../adapters/store/answer-store.ts";
import { DynamoEventStore } from "../adapters/store/event-store.ts";
import { DynamoFilterStore } from "../adapters/store/filter-store.ts";
import { DynamoStatsStore } from "../adapters/store/stats-store.ts";
import { DynamoTransactionLedger } from "../adapters/store/transaction-ledger.ts";
import { DynamoUsageStore } from "../adapters/store/usage-store.ts";
import { DynamoSubscriptionStore } from "../adapters/subscriptions/subscription-store.ts";
import { createUpstream } from "../adapters/upstream/upstream.ts";
import { createProxyRuntime } from "../proxy/runtime.ts";
import { createSocketHandler } from "./lambda.ts";
import { createSocketRuntime } from "./runtime.ts";

/** The socket Lambda: wiring only. Everything at module scope lives as long as the container. */
const store = stateStoreFromEnv(process.env);
const tables = { client: store.client, tableName: store.tableName };

export const handler = createSocketHandler(
  createSocketRuntime({
    proxy: createProxyRuntime({
      configSource: configSourceFromEnv(process.env),
      secrets: createSecretResolver(process.env),
      store,
      statsStore: new DynamoStatsStore(tables),
      usageStore: new DynamoUsageStore(tables),
      eventStore: new DynamoEventStore(tables),
      ledger: new DynamoTransactionLedger(tables),
      sharedAnswers: new DynamoAnswerStore(tables),
      filterStore: new DynamoFilterStore(tables),
      upstream: createUpstream(),
      serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-socket",
    }),
    store: new DynamoSubscriptionStore(tables),
  }),
);
