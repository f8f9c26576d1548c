import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { ConfigSource } from "../adapters/config-source.ts";
import { createModelSource, type ModelInForce } from "../adapters/model-source.ts";
import type { SecretResolver } from "../adapters/secrets.ts";
import {
  createStatsFlusher,
  type DynamoStatsStore,
  STATS_BUCKET_SECONDS,
} from "../adapters/stats-store.ts";
import { createTelemetry, type FlushableTelemetry } from "../adapters/telemetry.ts";
import { Gateway } from "../core/gateway.ts";
import type { StateStore, Upstream } from "../core/ports.ts";
import { type RequestStats, recordOutcome, windowOf } from "../core/request-stats.ts";
import { StateCache } from "../core/state-cache.ts";
import { type NetworkStatus, networkStatus } from "../core/status.ts";
import { handleEvent } from "./api.ts";

export interface ProxyRuntimeOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  readonly store: StateStore;
  readonly upstream: Upstream;
  /**
   * Where request stats from every container add up (failing often, status `stats`). Without
   * it, stats stay in this container's memory.
   */
  readonly statsStore?: DynamoStatsStore;
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
  current(): Promise<ModelInForce>;
}

const STATS_WINDOW_SECONDS = 300;

/**
 * Wires config, secrets, state and upstreams into one gateway. The model is rebuilt only
 * when the config source hands out a new config object, and secrets are resolved then.
 */
export function createProxyRuntime(options: ProxyRuntimeOptions): ProxyRuntime {
  const clock = options.clock ?? Date.now;
  const random = options.random ?? Math.random;
  let active: ModelInForce | null = null;
  const scrub = (text: string) => (active ? active.scrub(text) : text);
  const telemetry = createTelemetry({
    // The alarms match metrics by their `service` dimension: the stack sets this variable.
    serviceName: options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-proxy",
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
      active = inForce;
      telemetry.log("info", "config in force", {
        source: inForce.loaded.source,
        networks: [...inForce.model.networks.keys()],
      });
      telemetry.count("config_loaded", { source: inForce.loaded.source.kind });
    },
  });
  const current = () => models.current();

  const localStats = new Map<string, RequestStats>();
  const statsStore = options.statsStore;
  const statsFlusher = statsStore
    ? createStatsFlusher({
        statsStore,
        clock,
        onError: (network, error) =>
          telemetry.log("warn", "request stats not flushed", {
            network,
            error: error instanceof Error ? error.message : String(error),
          }),
      })
    : null;
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
    scrubAnswer: (text) => (active ? active.scrubAnswer(text) : text),
    recordOutcome: (network, provider, ok, latencyMs) => {
      if (statsFlusher) {
        statsFlusher.record(network, provider, ok, latencyMs);
        return;
      }
      let networkStats = localStats.get(network);
      if (!networkStats) {
        networkStats = {};
        localStats.set(network, networkStats);
      }
      recordOutcome(networkStats, provider, ok, latencyMs, clock(), STATS_BUCKET_SECONDS);
    },
    highestObservedBlock: (network) => {
      const heads = observedHeads.get(network);
      return heads === undefined || heads.size === 0 ? null : Math.max(...heads.values());
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
    const stats = statsStore
      ? await statsStore.read(network, now, STATS_WINDOW_SECONDS).catch(() => ({}) as RequestStats)
      : (localStats.get(network) ?? {});
    return networkStatus({
      model,
      network: spec,
      state,
      now,
      configSource: loaded.source,
      stats: (provider) => ({
        window_seconds: STATS_WINDOW_SECONDS,
        ...windowOf(stats[provider] ?? [], now, STATS_WINDOW_SECONDS),
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
        await statsFlusher?.flushIfDue();
        telemetry.flushIfDue();
      }
    },
  };
}
