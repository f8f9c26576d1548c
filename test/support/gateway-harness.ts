import { hedgeTimer, wait } from "../../functions/adapters/wait.ts";
import { type ConfigInput, configSchema } from "../../functions/core/config/config-schema.ts";
import {
  buildModel,
  type GatewayModel,
  type Network,
} from "../../functions/core/config/network-model.ts";
import type { Telemetry, Upstream } from "../../functions/core/ports.ts";
import { Gateway, type GatewayDeps } from "../../functions/core/request/gateway.ts";
import { StateCache } from "../../functions/core/routing/state-cache.ts";
import { GuardCounts } from "../../functions/core/status/guards.ts";
import { MemoryStateStore } from "./memory-state-store.ts";
import { ScriptedUpstream } from "./scripted-upstream.ts";

/**
 * The request pipeline on in-memory parts, for table-driven tests: one network `net` built
 * from `providers` (and any overrides), the in-memory state store behind a state cache, a test
 * clock, and an upstream that moves the clock by each answer's latency (a scripted one unless
 * the test brings its own). Nothing sleeps.
 */

export type HarnessProviders = ConfigInput["networks"][string]["providers"];
/** Keys of a network beside its chain id and providers. */
export type HarnessNetwork = Partial<ConfigInput["networks"][string]>;

export interface GatewayHarnessOptions<U extends Upstream> {
  readonly providers: HarnessProviders;
  /** Keys of the network `net` beside its chain id (1) and providers. */
  readonly network?: HarnessNetwork;
  /** Top-level config keys. */
  readonly config?: Omit<Partial<ConfigInput>, "networks">;
  /** The clock's start, ms. */
  readonly now: number;
  /**
   * How long a state copy stays fresh (1 s), how stale one may be served (the default), and how
   * old a copy of the chain position may be when a request needs the served head (the
   * network's `head_cache_ms`).
   */
  readonly stateCache?: {
    readonly ttlMs: number;
    readonly maxStaleMs?: number;
    readonly headTtlMs?: number;
  };
  /** The upstream, given what moves the clock on; a `ScriptedUpstream` by default. */
  readonly upstream?: (advance: (ms: number) => void) => U;
  /**
   * Any other of the gateway's dependencies (telemetry silent, random 0.5 by default), or a
   * function making them from the harness's clock and store.
   */
  readonly deps?:
    | Partial<GatewayDeps>
    | ((parts: { clock: () => number; store: MemoryStateStore }) => Partial<GatewayDeps>);
}

export interface GatewayHarness<U extends Upstream> {
  readonly gateway: Gateway;
  readonly store: MemoryStateStore;
  readonly upstream: U;
  readonly cache: StateCache;
  readonly clock: () => number;
  readonly advance: (ms: number) => void;
  readonly model: GatewayModel;
  readonly network: Network;
  /** A POST body to `net`, answered as the handler would get it. */
  readonly rpc: (body: string) => ReturnType<Gateway["handleRpc"]>;
}

/**
 * A quorum of every provider, each seen at `head` with that block's `timestamp` (seconds), as
 * a monitor tick at `computedAt` would write it.
 */
export function everyoneInQuorum(
  store: MemoryStateStore,
  providers: HarnessProviders,
  seen: { readonly head: number; readonly timestamp: number; readonly computedAt: number },
): void {
  const names = providers.map((provider) => provider.name ?? provider.url);
  const at = { number: seen.head, timestamp: seen.timestamp };
  store.setQuorum("net", {
    head: seen.head,
    headTimestamp: seen.timestamp,
    members: names,
    excluded: {},
    heads: Object.fromEntries(names.map((name) => [name, at])),
    computedAt: seen.computedAt,
  });
}

const SILENT: Telemetry = {
  log: () => undefined,
  count: () => undefined,
  measure: () => undefined,
};

export function gatewayHarness<U extends Upstream = ScriptedUpstream>(
  options: GatewayHarnessOptions<U>,
): GatewayHarness<U> {
  let now = options.now;
  const clock = () => now;
  const advance = (ms: number) => {
    now += ms;
  };
  const store = new MemoryStateStore(clock);
  const upstream = options.upstream
    ? options.upstream(advance)
    : (new ScriptedUpstream(advance) as unknown as U);
  const deps =
    typeof options.deps === "function" ? options.deps({ clock, store }) : (options.deps ?? {});
  const telemetry = deps.telemetry ?? SILENT;
  const { ttlMs = 1000, maxStaleMs, headTtlMs } = options.stateCache ?? {};
  const config = configSchema.parse({
    ...options.config,
    networks: { net: { chain_id: 1, providers: options.providers, ...options.network } },
  });
  const model = buildModel(config, (url) => url);
  const cache = new StateCache({
    store,
    clock,
    telemetry,
    ttlMs: () => ttlMs,
    headTtlMs: () => headTtlMs ?? model.networks.get("net")?.settings.head_cache_ms ?? 250,
    ...(maxStaleMs === undefined ? {} : { maxStaleMs }),
  });
  const gateway = new Gateway({
    model: () => model,
    upstream,
    store,
    cache,
    clock,
    random: () => 0.5,
    wait,
    hedgeTimer,
    scrub: (text) => text,
    scrubAnswer: (text) => text,
    ...deps,
    telemetry,
    guards: deps.guards ?? new GuardCounts(telemetry),
  });
  const network = model.networks.get("net");
  if (network === undefined) throw new Error("the harness's network is missing");
  return {
    gateway,
    store,
    upstream,
    cache,
    clock,
    advance,
    model,
    network,
    rpc: (body: string) => gateway.handleRpc("net", body),
  };
}
