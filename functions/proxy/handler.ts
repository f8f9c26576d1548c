import middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { configEventLogger } from "../adapters/config-events.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { createSecretResolver } from "../adapters/secrets.ts";
import { DynamoStatsStore } from "../adapters/stats-store.ts";
import { createUpstream } from "../adapters/upstream.ts";
import { createProxyRuntime, type ProxyRuntime } from "./runtime.ts";

/** The proxy Lambda: wiring only. Everything at module scope lives as long as the container. */
const store = stateStoreFromEnv(process.env);
let runtime: ProxyRuntime | undefined;
runtime = createProxyRuntime({
  configSource: configSourceFromEnv(
    process.env,
    configEventLogger(() => runtime?.telemetry),
  ),
  secrets: createSecretResolver(process.env),
  store,
  statsStore: new DynamoStatsStore({ client: store.client, tableName: store.tableName }),
  upstream: createUpstream(),
});
const proxy = runtime;

export const handler = middy<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  Context
>().handler((event, context) => proxy.handle(event, context.getRemainingTimeInMillis()));
