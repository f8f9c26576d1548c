import { setTimeout as sleep } from "node:timers/promises";
import middy from "@middy/core";
import type { Context, ScheduledEvent } from "aws-lambda";
import { createSecretResolver } from "../adapters/config/secrets.ts";
import { configSourceFromEnv, stateStoreFromEnv } from "../adapters/environment.ts";
import { DynamoEventStore } from "../adapters/store/event-store.ts";
import { DynamoMonitorStore } from "../adapters/store/monitor-store.ts";
import { DynamoStatsStore } from "../adapters/store/stats-store.ts";
import { createUpstream } from "../adapters/upstream/upstream.ts";
import { type MonitorLoopResult, runScheduled } from "../core/monitor/loop.ts";
import { reportFailedRun } from "./middlewares.ts";
import { createMonitorRuntime } from "./runtime.ts";

/** The monitor Lambda: wiring only. Started once a minute; ticks until the next start. */
const store = stateStoreFromEnv(process.env);
const tables = { client: store.client, tableName: store.tableName };
const monitorStore = new DynamoMonitorStore(tables);
const monitor = createMonitorRuntime({
  configSource: configSourceFromEnv(process.env),
  secrets: createSecretResolver(process.env),
  store,
  monitorStore,
  statsStore: new DynamoStatsStore(tables),
  eventStore: new DynamoEventStore(tables),
  upstream: createUpstream(),
});

export const handler = middy<ScheduledEvent, MonitorLoopResult, Error, Context>()
  .use(reportFailedRun(monitor.telemetry))
  .handler((_event, context) =>
    runScheduled({
      monitor: monitor.monitor,
      model: monitor.model,
      leaseStore: monitorStore,
      holder: context.awsRequestId,
      remainingMs: context.getRemainingTimeInMillis(),
      clock: Date.now,
      sleep: (ms) => sleep(ms),
    }),
  );
