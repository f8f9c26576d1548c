import { createConfigInForce } from "../adapters/config/config-in-force.ts";
import type { ConfigSource } from "../adapters/config/config-source.ts";
import type { SecretResolver } from "../adapters/config/secrets.ts";
import { EventRecorder } from "../adapters/store/event-recorder.ts";
import type { EventStore } from "../adapters/store/event-store.ts";
import type { FlushableTelemetry } from "../adapters/telemetry.ts";
import type { GatewayModel } from "../core/config/network-model.ts";
import { createMonitor, type Monitor, type MonitorStateStore } from "../core/monitor/monitor.ts";
import type { MonitorStore, StatsReader } from "../core/monitor/monitor-ports.ts";
import type { Upstream } from "../core/ports.ts";
import { eventRetentionSeconds } from "../core/status/events.ts";

export interface MonitorRuntimeOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  readonly store: MonitorStateStore;
  readonly monitorStore: MonitorStore;
  readonly statsStore: StatsReader;
  readonly upstream: Upstream;
  /** Where probes, quorum changes, head stalls and config changes are recorded. */
  readonly eventStore?: EventStore;
  readonly clock?: () => number;
  /** Where EMF metric lines go (stdout by default). */
  readonly writeMetrics?: (line: string) => void;
  readonly serviceName?: string;
}

export interface MonitorRuntime {
  /** Ticks with the config in force; metrics are written at the end of each tick. */
  readonly monitor: Monitor;
  readonly telemetry: FlushableTelemetry;
  /** The model in force (loads it on first use, re-checks the config source each call). */
  model(): Promise<GatewayModel>;
}

/**
 * The monitor's composition root, used by the Lambda handler and the local stack alike: the
 * config in force (shared wiring with the proxy), state, stats and upstreams into a monitor.
 */
export function createMonitorRuntime(options: MonitorRuntimeOptions): MonitorRuntime {
  const clock = options.clock ?? Date.now;
  const config = createConfigInForce({
    configSource: options.configSource,
    secrets: options.secrets,
    serviceName:
      options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-monitor",
    clock,
    ...(options.writeMetrics ? { writeMetrics: options.writeMetrics } : {}),
  });
  const { telemetry } = config;
  let model: GatewayModel | null = null;
  const events =
    options.eventStore &&
    new EventRecorder({
      store: options.eventStore,
      clock,
      retentionSeconds: (network) => {
        if (model === null) throw new Error("an event before the config loaded");
        return eventRetentionSeconds(model, network);
      },
      onError: (network, error) => {
        telemetry.log("warn", "event not recorded", {
          network,
          error: error instanceof Error ? error.message : String(error),
        });
        telemetry.count("state_store_errors", { network });
      },
    });
  const monitor = createMonitor({
    model: async () => {
      model = await config.model();
      return model;
    },
    store: options.store,
    monitorStore: options.monitorStore,
    statsStore: options.statsStore,
    upstream: options.upstream,
    clock,
    telemetry,
    scrub: config.scrub,
    ...(events ? { events } : {}),
    configInForce: async () => (await config.current()).loaded,
  });

  return {
    telemetry,
    model: () => config.model(),
    monitor: {
      async tick() {
        try {
          await monitor.tick();
        } finally {
          telemetry.flush();
        }
      },
    },
  };
}
