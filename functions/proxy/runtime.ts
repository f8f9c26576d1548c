import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ConfigInForce, createConfigInForce } from "../adapters/config/config-in-force.ts";
import type { ConfigSource } from "../adapters/config/config-source.ts";
import type { ModelInForce } from "../adapters/config/model-source.ts";
import type { SecretResolver } from "../adapters/config/secrets.ts";
import { EventRecorder } from "../adapters/store/event-recorder.ts";
import type { EventStore } from "../adapters/store/event-store.ts";
import { createStatsFlusher, type DynamoStatsStore } from "../adapters/store/stats-store.ts";
import { createKeyLimiter, type DynamoUsageStore } from "../adapters/store/usage-store.ts";
import type { FlushableTelemetry } from "../adapters/telemetry.ts";
import { hedgeTimer, wait } from "../adapters/wait.ts";
import { type RequestStats, recordOutcome, windowOf } from "../core/health/request-stats.ts";
import { HISTORY_WINDOW_SECONDS, historyOf } from "../core/health/stats-history.ts";
import { DEFAULT_CORS_ORIGINS } from "../core/http/cors.ts";
import { KeyUsage } from "../core/http/key-usage.ts";
import { matchRoute, type Route } from "../core/http/routes.ts";
import { STATS_BUCKET_SECONDS, STATS_WINDOW_SECONDS } from "../core/policies.ts";
import type {
  FilterStore,
  SharedAnswerStore,
  StateStore,
  TransactionLedger,
  Upstream,
} from "../core/ports.ts";
import { ContainerState } from "../core/request/container-state.ts";
import { Gateway, type GatewayDeps } from "../core/request/gateway.ts";
import type { StageObserver } from "../core/request/gateway-deps.ts";
import { StateCache } from "../core/routing/state-cache.ts";
import { EVENTS_SHOWN, eventRetentionSeconds, type StoredEvent } from "../core/status/events.ts";
import { ANY_NETWORK, GuardCounts } from "../core/status/guards.ts";
import { networkStatus } from "../core/status/status.ts";
import { type ApiDeps, handleEvent } from "./api.ts";
import { type StatusPageNetwork, statusPage } from "./status-page.ts";

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
  /**
   * Where API keys' per-minute counts add up across containers (`requests_per_minute`).
   * Without it, each container counts alone.
   */
  readonly usageStore?: Pick<DynamoUsageStore, "add">;
  /**
   * Where blacklists, capability blacklists and force-rotations are recorded, and the status
   * reads events from. Without it, there are no events.
   */
  readonly eventStore?: EventStore;
  /** Where sent transactions' outcomes are shared across containers; without it, none. */
  readonly ledger?: TransactionLedger;
  /** The answer cache's shared tier (immutable answers); without it, each container's memory only. */
  readonly sharedAnswers?: SharedAnswerStore;
  /** Where the filters the gateway serves live, for every container; without it, on providers. */
  readonly filterStore?: FilterStore;
  readonly clock?: () => number;
  readonly random?: () => number;
  /** Where EMF metric lines go (stdout by default). */
  readonly writeMetrics?: (line: string) => void;
  readonly serviceName?: string;
  /** Told what each stage of each request took (the bench's `stages` part); absent: none. */
  readonly stageObserver?: StageObserver;
}

export interface ProxyRuntime {
  /** Serves one API Gateway event; may throw (the handler's middlewares answer then). */
  handle(
    event: APIGatewayProxyEventV2,
    remainingMs?: number,
  ): Promise<APIGatewayProxyStructuredResultV2>;
  readonly telemetry: FlushableTelemetry;
  /** The config and model in force (loads them on first use). */
  current(): Promise<ModelInForce>;
  /** Writes the request stats and metrics gathered since the last flush, when due. */
  flushIfDue(): Promise<void>;
  /** The origins browsers may call from, under the config in force. */
  corsOrigins(): readonly string[];
  /** Resolves once the events recorded so far are written (tests, shutdown). */
  eventsSettled(): Promise<void>;
  /** The gateway every surface shares: the socket's calls go through it too. */
  readonly gateway: Gateway;
  /**
   * Admits one request of the API key named `caller` (checked when its socket connected)
   * under the config in force, as HTTP admits one: null when admitted, else the refusal.
   */
  admitCaller(network: string, caller: string): Promise<CallerRefusal | null>;
}

/** Why a known caller's request is refused: its key was removed, or is over its limit. */
export interface CallerRefusal {
  readonly reason: "unknown_key" | "requests_per_minute";
  readonly message: string;
}

/**
 * The proxy's composition root, used by the Lambda handler and the local stack alike: config,
 * secrets, shared state, stats and upstreams wired into one gateway and its HTTP surface.
 */
export function createProxyRuntime(options: ProxyRuntimeOptions): ProxyRuntime {
  const clock = options.clock ?? Date.now;
  const config: ConfigInForce = createConfigInForce({
    configSource: options.configSource,
    secrets: options.secrets,
    serviceName: options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "rpc-gateway-proxy",
    clock,
    ...(options.writeMetrics ? { writeMetrics: options.writeMetrics } : {}),
  });
  const { telemetry } = config;
  let inForce: ModelInForce | null = null;

  const stats = requestStats(options.statsStore, clock, telemetry);
  const guards = new GuardCounts(telemetry);
  const keyUsage = new KeyUsage(clock);
  const keyLimiter = options.usageStore
    ? createKeyLimiter({
        usage: keyUsage,
        store: options.usageStore,
        clock,
        onError: (key, error) =>
          telemetry.log("warn", "API key usage not counted across containers: counting alone", {
            key,
            error: error instanceof Error ? error.message : String(error),
          }),
      })
    : null;
  const events =
    options.eventStore &&
    new EventRecorder({
      store: options.eventStore,
      clock,
      retentionSeconds: (network) => {
        if (inForce === null) throw new Error("an event before the config loaded");
        return eventRetentionSeconds(inForce.model, network);
      },
      onError: (network, error) => {
        telemetry.log("warn", "event not recorded", {
          network,
          error: error instanceof Error ? error.message : String(error),
        });
        telemetry.count("state_store_errors", { network });
      },
    });
  const cache = new StateCache({
    store: options.store,
    clock,
    telemetry,
    ttlMs: (network) => inForce?.model.networks.get(network)?.settings.state_cache_ms ?? 1000,
    headTtlMs: (network) => inForce?.model.networks.get(network)?.settings.head_cache_ms ?? 250,
  });
  const gatewayDeps: GatewayDeps = {
    model: () => {
      if (inForce === null) throw new Error("the gateway model is used before the config loaded");
      return inForce.model;
    },
    upstream: options.upstream,
    store: options.store,
    cache,
    clock,
    random: options.random ?? Math.random,
    wait,
    hedgeTimer,
    telemetry,
    scrub: config.scrub,
    scrubAnswer: config.scrubAnswer,
    ...(options.ledger ? { ledger: options.ledger } : {}),
    recordOutcome: stats.record,
    ...(events ? { events } : {}),
    ...(options.sharedAnswers ? { sharedAnswers: options.sharedAnswers } : {}),
    ...(options.filterStore ? { filters: options.filterStore } : {}),
    ...(options.stageObserver ? { stageObserver: options.stageObserver } : {}),
    guards,
  };
  /** What this container knows across requests: the gateway feeds it, the status reads it. */
  const container = new ContainerState(gatewayDeps);
  const gateway = new Gateway(gatewayDeps, container);

  /**
   * At cold start the config load and the state read of the requested network would otherwise
   * be two round trips one after the other: the read needs only the network's name, and the
   * request finds it in flight (or in memory) in the state cache. Only the container's first
   * request reads early, so a name the config turns out not to have costs one wasted read per
   * container, even while no config can load.
   */
  let readEarly = false;
  function readStateWhileConfigLoads(route: Route): void {
    if (readEarly) return;
    readEarly = true;
    const network = "network" in route ? route.network : null;
    // The cache logs and counts a failed read, and answers with what it has.
    if (network !== null) void cache.get(network);
  }

  /** The newest events the status shows; without them (DynamoDB down) the status still answers. */
  async function recentEvents(network: string): Promise<StoredEvent[]> {
    if (events === undefined) return [];
    return events.newest(network, EVENTS_SHOWN).catch((error: unknown) => {
      telemetry.log("warn", "events not read for the status", {
        network,
        error: error instanceof Error ? error.message : String(error),
      });
      return [];
    });
  }

  /** A network's status; for the page, with each provider's last hour of traffic. */
  async function status(network: string, withHistory: boolean): Promise<StatusPageNetwork> {
    const { loaded, model } = await config.current();
    const spec = model.networks.get(network);
    if (!spec) throw new Error(`unknown network ${network}`);
    // The chain position as every request that depends on it sees it (§10.2).
    const state = await cache.get(network, { freshHead: true });
    const now = clock();
    const [window, recent] = await Promise.all([
      // One read serves both: the status window is the last minutes of the hour.
      stats.read(network, now, withHistory ? HISTORY_WINDOW_SECONDS : STATS_WINDOW_SECONDS),
      recentEvents(network),
    ]);
    const demoted = container.demoted(spec);
    const context = {
      network: spec,
      state,
      now,
      checkIntervalSeconds: model.checkIntervalSeconds,
      demoted,
    };
    const networkView = networkStatus({
      model,
      network: spec,
      state,
      now,
      configSource: loaded.source,
      demoted,
      stats: (provider) => ({
        window_seconds: STATS_WINDOW_SECONDS,
        ...windowOf(window[provider] ?? [], now, STATS_WINDOW_SECONDS),
      }),
      observedHeads: container.observedHeads(spec, context),
      reachable: container.reachable(spec, context),
      events: recent,
      cacheClasses: container.answerCache(network).classes,
      guards: guards.counts(network),
      logChecks: container.logCheckCounts(network),
      consensus: container.consensus.counts(network),
    });
    const history = new Map(
      withHistory
        ? spec.providers.map((provider) => [
            provider.name,
            historyOf(window[provider.name] ?? [], now),
          ])
        : [],
    );
    return { status: networkView, history };
  }

  /** The HTTP surface's parts, made once: every request reads the model in force. */
  const api: ApiDeps = {
    gateway,
    model: () => {
      if (inForce === null) throw new Error("a request is routed before the config loaded");
      return inForce.model;
    },
    admitKey: async (key) => keyLimiter?.admit(key) ?? keyUsage.admitAlone(key),
    guards,
    status: async (network) => (await status(network, false)).status,
    statusPage: async (networks) => {
      const views = await Promise.all(networks.map((network) => status(network, true)));
      return statusPage(views, clock());
    },
  };

  return {
    telemetry,
    // The model in force from here on (the socket serves calls without `handle`).
    current: async () => {
      inForce = await config.current();
      return inForce;
    },
    async handle(event, remainingMs) {
      // The deadline counts from here: loading config and state spend the caller's time too.
      const startedAt = clock();
      // The route is matched once, here: the early state read and the HTTP surface share it.
      const route = matchRoute(event.requestContext?.http?.method ?? "GET", event.rawPath ?? "/");
      if (inForce === null) readStateWhileConfigLoads(route);
      inForce = await config.current();
      return handleEvent(event, route, api, { startedAt, remainingMs });
    },
    corsOrigins: () => inForce?.model.corsOrigins ?? DEFAULT_CORS_ORIGINS,
    async flushIfDue() {
      await stats.flushIfDue();
      telemetry.flushIfDue();
    },
    eventsSettled: async () => events?.settled(),
    gateway,
    async admitCaller(network, caller) {
      inForce = await config.current();
      const { model } = inForce;
      if (model.apiKeys.length === 0) return null;
      const key = model.apiKeys.find((entry) => entry.name === caller);
      if (key === undefined) {
        return {
          reason: "unknown_key",
          message: `the API key this connection was opened with is no longer accepted: reconnect with a valid key`,
        };
      }
      const limit = key.requestsPerMinute;
      if (limit === null) return null;
      const admitted = await (keyLimiter?.admit({ name: key.name, requestsPerMinute: limit }) ??
        keyUsage.admitAlone({ name: key.name, requestsPerMinute: limit }));
      if (admitted) return null;
      guards.refused(model.networks.has(network) ? network : ANY_NETWORK, "requests_per_minute");
      return {
        reason: "requests_per_minute",
        message: `API key "${key.name}" is over its requests_per_minute (${limit}): slow down`,
      };
    },
  };
}

interface RequestStatsSink {
  record(network: string, provider: string, ok: boolean, latencyMs: number): void;
  read(network: string, now: number, windowSeconds: number): Promise<RequestStats>;
  flushIfDue(): Promise<void>;
}

/**
 * Request stats: added up across containers in DynamoDB when a stats store is given (flushed
 * at most every few seconds, never per request), else kept in this container's memory.
 */
function requestStats(
  statsStore: DynamoStatsStore | undefined,
  clock: () => number,
  telemetry: FlushableTelemetry,
): RequestStatsSink {
  if (statsStore === undefined) {
    const local = new Map<string, RequestStats>();
    return {
      record(network, provider, ok, latencyMs) {
        let networkStats = local.get(network);
        if (!networkStats) {
          networkStats = {};
          local.set(network, networkStats);
        }
        recordOutcome(networkStats, provider, ok, latencyMs, clock(), STATS_BUCKET_SECONDS);
      },
      read: async (network) => local.get(network) ?? {},
      flushIfDue: async () => undefined,
    };
  }
  const flusher = createStatsFlusher({
    statsStore,
    clock,
    onError: (network, error) =>
      telemetry.log("warn", "request stats not flushed", {
        network,
        error: error instanceof Error ? error.message : String(error),
      }),
  });
  return {
    record: (network, provider, ok, latencyMs) => flusher.record(network, provider, ok, latencyMs),
    read: (network, now, windowSeconds) =>
      statsStore.read(network, now, windowSeconds).catch(() => ({}) as RequestStats),
    flushIfDue: () => flusher.flushIfDue(),
  };
}
