import { createConfigSource } from "../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../functions/adapters/config/secrets.ts";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import { DynamoStatsStore } from "../../functions/adapters/store/stats-store.ts";
import { createUpstream } from "../../functions/adapters/upstream/upstream.ts";
import { createMonitorRuntime } from "../../functions/monitor/runtime.ts";
import type { LocalStack } from "../../local/stack.ts";

/** The real monitor over a local stack's config and table, ticked when a test says so. */
export interface StackMonitor {
  /** One tick: the quorum of every network (each provider asked for its head), then probes. */
  tick(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A monitor for `stack` that never ticks on its own, so a test decides when the quorum
 * snapshot is taken (for example before it turns faults on) under the test's own clock.
 */
export function stackMonitor(
  stack: LocalStack,
  options: { clock: () => number; env?: Readonly<Record<string, string | undefined>> },
): StackMonitor {
  const upstream = createUpstream();
  const tables = { client: stack.store.client, tableName: stack.store.tableName };
  const runtime = createMonitorRuntime({
    configSource: createConfigSource({
      kind: "file",
      path: stack.configPath,
      clock: options.clock,
    }),
    secrets: envSecretResolver(options.env ?? process.env),
    store: stack.store,
    monitorStore: new DynamoMonitorStore(tables),
    statsStore: new DynamoStatsStore(tables),
    upstream,
    clock: options.clock,
    writeMetrics: () => undefined,
  });
  return {
    tick: () => runtime.monitor.tick(),
    close: () => upstream.close(),
  };
}
