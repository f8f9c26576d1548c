import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { ConfigSource, ConfigSourceEvent, LoadedConfig } from "../adapters/config-source.ts";
import type { SecretResolver } from "../adapters/secrets.ts";
import { createTelemetry, type FlushableTelemetry } from "../adapters/telemetry.ts";
import { Gateway } from "../core/gateway.ts";
import { buildModel, type GatewayModel } from "../core/network-model.ts";
import { resolveUrlTemplate, secretNamesOf } from "../core/placeholders.ts";
import type { StateStore, Upstream } from "../core/ports.ts";
import { makeScrubber } from "../core/redact.ts";
import { type RequestStats, recordOutcome, windowOf } from "../core/request-stats.ts";
import { StateCache } from "../core/state-cache.ts";
import { type NetworkStatus, networkStatus } from "../core/status.ts";
import { handleEvent } from "./api.ts";

export interface ProxyRuntimeOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  readonly store: StateStore;
  readonly upstream: Upstream;
  readonly clock?: () => number;
  readonly random?: () => number;
  /** Where EMF metric lines go (stdout by default). */
  readonly writeMetrics?: (line: string) => void;
  readonly serviceName?: string;
}

export interface ProxyRuntime {
  handle(
    event: APIGatewayProxyEventV2,
    remainingMs?: number,
  ): Promise<APIGatewayProxyStructuredResultV2>;
  readonly telemetry: FlushableTelemetry;
  /** The config and model in force (loads them on first use). */
  current(): Promise<{ loaded: LoadedConfig; model: GatewayModel }>;
}

const STATS_BUCKET_SECONDS = 10;
const STATS_WINDOW_SECONDS = 300;

/**
 * Wires config, secrets, state and upstreams into one gateway. The model is rebuilt only
 * when the config source hands out a new config object, and secrets are resolved then.
 */
export function createProxyRuntime(options: ProxyRuntimeOptions): ProxyRuntime {
  const clock = options.clock ?? Date.now;
  const random = options.random ?? Math.random;
  let scrubber: (text: string) => string = (text) => text;
  const scrub = (text: string) => scrubber(text);
  const telemetry = createTelemetry({
    // The alarms match metrics by their `service` dimension: the stack sets this variable.
    serviceName: options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-proxy",
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? "RpcGateway",
    scrub,
    clock,
    ...(options.writeMetrics ? { write: options.writeMetrics } : {}),
  });

  let active: { loaded: LoadedConfig; model: GatewayModel } | null = null;
  let building: Promise<{ loaded: LoadedConfig; model: GatewayModel }> | null = null;

  async function build(
    loaded: LoadedConfig,
  ): Promise<{ loaded: LoadedConfig; model: GatewayModel }> {
    const names = secretNamesOf(loaded.config);
    const values = await options.secrets.resolve(names);
    const model = buildModel(loaded.config, (template) => resolveUrlTemplate(template, values));
    const urls = [...model.networks.values()].flatMap((network) =>
      network.providers.map((p) => p.url),
    );
    scrubber = makeScrubber(urls, [...values.values()]);
    telemetry.log("info", "config in force", {
      source: loaded.source,
      networks: [...model.networks.keys()],
    });
    telemetry.count("config_loaded", { source: loaded.source.kind });
    return { loaded, model };
  }

  async function current(): Promise<{ loaded: LoadedConfig; model: GatewayModel }> {
    const loaded = await options.configSource.current();
    if (active !== null && active.loaded.config === loaded.config) {
      if (active.loaded !== loaded) active = { loaded, model: active.model };
      return active;
    }
    if (building === null) {
      building = build(loaded).then(
        (built) => {
          active = built;
          building = null;
          return built;
        },
        (error: unknown) => {
          building = null;
          // A new config whose secrets cannot be resolved must not replace a working one.
          if (active !== null) {
            telemetry.log("error", "new config not applied: secrets could not be resolved", {
              error: error instanceof Error ? error.message : String(error),
            });
            telemetry.count("config_rejected", { reason: "secrets" });
            return active;
          }
          throw error;
        },
      );
    }
    return building;
  }

  const stats = new Map<string, RequestStats>();
  const observedHeads = new Map<string, Map<string, number>>();

  const cache = new StateCache({
    store: options.store,
    clock,
    telemetry,
    ttlMs: (network) => active?.model.networks.get(network)?.settings.state_cache_ms ?? 1000,
  });

  const gateway = new Gateway({
    model: () => {
      if (active === null) throw new Error("the gateway model is used before the config loaded");
      return active.model;
    },
    upstream: options.upstream,
    store: options.store,
    cache,
    clock,
    random,
    telemetry,
    scrub,
    recordOutcome: (network, provider, ok, latencyMs) => {
      let networkStats = stats.get(network);
      if (!networkStats) {
        networkStats = {};
        stats.set(network, networkStats);
      }
      recordOutcome(networkStats, provider, ok, latencyMs, clock(), STATS_BUCKET_SECONDS);
    },
    observeBlock: (network, provider, block) => {
      let heads = observedHeads.get(network);
      if (!heads) {
        heads = new Map();
        observedHeads.set(network, heads);
      }
      if ((heads.get(provider) ?? 0) < block) heads.set(provider, block);
    },
  });

  async function status(network: string): Promise<NetworkStatus> {
    const { loaded, model } = await current();
    const spec = model.networks.get(network);
    if (!spec) throw new Error(`unknown network ${network}`);
    const state = await cache.get(network);
    const now = clock();
    return networkStatus({
      model,
      network: spec,
      state,
      now,
      configSource: loaded.source,
      stats: (provider) => ({
        window_seconds: STATS_WINDOW_SECONDS,
        ...windowOf(stats.get(network)?.[provider] ?? [], now, STATS_WINDOW_SECONDS),
      }),
      observedHeads: observedHeads.get(network) ?? new Map(),
    });
  }

  return {
    telemetry,
    current,
    async handle(event, remainingMs) {
      try {
        const { model } = await current();
        return await handleEvent(
          event,
          { gateway, model: () => model, status, clock },
          remainingMs,
        );
      } catch (error) {
        telemetry.log("error", "request failed inside the gateway", {
          error: error instanceof Error ? error.message : String(error),
        });
        return {
          statusCode: 500,
          headers: { "content-type": "application/json" },
          body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal gateway error"}}',
        };
      } finally {
        telemetry.flushIfDue();
      }
    },
  };
}

/** Logs and counts what the config source reports (rejections, outages, changes). */
export function configEventLogger(getTelemetry: () => FlushableTelemetry | undefined) {
  return (event: ConfigSourceEvent): void => {
    const telemetry = getTelemetry();
    if (!telemetry) return;
    switch (event.type) {
      case "config_changed":
        telemetry.log("info", "config source changed", { source: event.source });
        break;
      case "config_rejected":
        telemetry.log("error", "config rejected: the previous config stays in force", {
          location: event.location,
          problems: event.problems,
        });
        telemetry.count("config_rejected", { reason: "invalid" });
        break;
      case "config_source_error":
        telemetry.log("warn", "config source unreachable: the previous config stays in force", {
          location: event.location,
          error: event.error,
        });
        telemetry.count("config_rejected", { reason: "unreachable" });
        break;
    }
  };
}
