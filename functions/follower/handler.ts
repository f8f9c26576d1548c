import middy from "@middy/core";
import type { Context, ScheduledEvent } from "aws-lambda";
import { createSecretResolver } from "../adapters/config/secrets.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { DynamoAnswerStore } from "../adapters/store/answer-store.ts";
import { DynamoEventStore } from "../adapters/store/event-store.ts";
import { DynamoStatsStore } from "../adapters/store/stats-store.ts";
import { ApiGatewayConnectionPush } from "../adapters/subscriptions/connection-push.ts";
import { DynamoFollowerStore } from "../adapters/subscriptions/follower-store.ts";
import { DynamoSubscriptionStore } from "../adapters/subscriptions/subscription-store.ts";
import { createUpstream } from "../adapters/upstream/upstream.ts";
import { type FollowRunResult, runEndsAt } from "../core/follower/follow-run.ts";
import { reportFailedRun } from "../monitor/middlewares.ts";
import { createProxyRuntime } from "../proxy/runtime.ts";
import { createFollowerRuntime } from "./runtime.ts";

/**
 * The head follower's Lambda: wiring only. EventBridge starts it once a minute; each run
 * follows every network with subscriptions for a little over a minute (the next run takes
 * each network's lease over as this one gives it back).
 */
const store = stateStoreFromEnv(process.env);
const tables = { client: store.client, tableName: store.tableName };
const managementUrl = process.env.WEBSOCKET_MANAGEMENT_URL;
if (!managementUrl) throw new Error("environment variable WEBSOCKET_MANAGEMENT_URL is required");

const follower = createFollowerRuntime({
  proxy: createProxyRuntime({
    configSource: configSourceFromEnv(process.env),
    secrets: createSecretResolver(process.env),
    store,
    statsStore: new DynamoStatsStore(tables),
    eventStore: new DynamoEventStore(tables),
    sharedAnswers: new DynamoAnswerStore(tables),
    upstream: createUpstream(),
    serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-follower",
  }),
  subscriptions: new DynamoSubscriptionStore(tables),
  push: new ApiGatewayConnectionPush({ baseUrl: managementUrl }),
  store: new DynamoFollowerStore(tables),
});

export const handler = middy<ScheduledEvent, FollowRunResult, Error, Context>()
  .use(reportFailedRun<FollowRunResult>(follower.proxy.telemetry, "follower run failed"))
  .handler((_event, context) => {
    const until = runEndsAt(Date.now(), context.getRemainingTimeInMillis());
    return follower.run(context.awsRequestId, () => until);
  });
