import { createSecretResolver } from "../adapters/config/secrets.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { DynamoAnswerStore } from "../adapters/store/answer-store.ts";
import { DynamoEventStore } from "../adapters/store/event-store.ts";
import { DynamoFilterStore } from "../adapters/store/filter-store.ts";
import { DynamoStatsStore } from "../adapters/store/stats-store.ts";
import { DynamoTransactionLedger } from "../adapters/store/transaction-ledger.ts";
import { DynamoUsageStore } from "../adapters/store/usage-store.ts";
import { createUpstream } from "../adapters/upstream/upstream.ts";
import { createProxyRuntime, type ProxyRuntime, type ProxyRuntimeOptions } from "./runtime.ts";

/**
 * The proxy runtime a Lambda's environment describes (`adapters/environment.ts`): the config
 * source, secrets, every DynamoDB store on the one table, and the upstream client. The Lambda
 * entry point builds it as it is; the bench's stage timings add an observer.
 */
export function proxyRuntimeFromEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  extra: Pick<ProxyRuntimeOptions, "stageObserver"> = {},
): ProxyRuntime {
  const store = stateStoreFromEnv(env);
  const tables = { client: store.client, tableName: store.tableName };
  return createProxyRuntime({
    configSource: configSourceFromEnv(env),
    secrets: createSecretResolver(env),
    store,
    statsStore: new DynamoStatsStore(tables),
    usageStore: new DynamoUsageStore(tables),
    eventStore: new DynamoEventStore(tables),
    ledger: new DynamoTransactionLedger(tables),
    sharedAnswers: new DynamoAnswerStore(tables),
    filterStore: new DynamoFilterStore(tables),
    upstream: createUpstream(),
    ...extra,
  });
}
