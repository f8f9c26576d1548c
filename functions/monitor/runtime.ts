import type { ConfigSource } from "../adapters/config-source.ts";
import { createModelSource } from "../adapters/model-source.ts";
import type { SecretResolver } from "../adapters/secrets.ts";
import { createTelemetry, type FlushableTelemetry } from "../adapters/telemetry.ts";
import type { GatewayModel } from "../core/network-model.ts";
import type { StateStore, Upstream } from "../core/ports.ts";
import { createMonitor, type Monitor } from "./monitor.ts";
import type { MonitorStore, StatsReader } from "./monitor-ports.ts";

/**
 * Wires config, secrets, state and upstreams into a monitor, as `proxy/runtime.ts` does for
 * the gateway: the model is rebuilt (and secrets resolved) only when the config source hands
 * out a new config object; a provider whose secret does not resolve is left out.
 */

export interface MonitorRuntimeOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  readonly store: Pick<StateStore, "readNetwork" | "writeHealth">;
  readonly monitorStore: MonitorStore;
  readonly statsStore: StatsReader;
  readonly upstream: Upstream;
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

export function createMonitorRuntime(options: MonitorRuntimeOptions): MonitorRuntime {
  const clock = options.clock ?? Date.now;
  let scrubber: (text: string) => string = (text) => text;
  const scrub = (text: string) => scrubber(text);
  const telemetry = createTelemetry({
    serviceName:
      options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-monitor",
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? "RpcGateway",
    scrub,
    clock,
    ...(options.writeMetrics ? { write: options.writeMetrics } : {}),
  });

  const models = createModelSource({
    configSource: options.configSource,
    secrets: options.secrets,
    telemetry,
    clock,
    onChange: (inForce) => {
      scrubber = inForce.scrub;
      telemetry.log("info", "config in force", {
        source: inForce.loaded.source,
        networks: [...inForce.model.networks.keys()],
      });
    },
  });
  const model = async (): Promise<GatewayModel> => (await models.current()).model;

  const monitor = createMonitor({
    model,
    store: options.store,
    monitorStore: options.monitorStore,
    statsStore: options.statsStore,
    upstream: options.upstream,
    clock,
    telemetry,
    scrub,
  });

  return {
    telemetry,
    model,
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
