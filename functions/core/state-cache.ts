import { EMPTY_NETWORK_STATE, type LearnedLimit, type NetworkState } from "./network-state.ts";
import { STATE_MAX_STALE_FACTOR, STATE_MAX_STALE_FLOOR_MS } from "./policies.ts";
import type { StateStore, Telemetry } from "./ports.ts";

interface Entry {
  state: NetworkState;
  loadedAt: number;
  refreshing: Promise<NetworkState> | null;
  /** Counts this container's own updates, so a refresh that raced one can tell. */
  localChanges: number;
}

/**
 * A read that started before this container's own update may land after it: it must not undo
 * it. Per provider the higher `version` wins, per method blacklist the later expiry, per learned
 * limit the smaller value.
 */
function keepNewer(local: NetworkState, fresh: NetworkState): NetworkState {
  const providers = new Map(fresh.providers);
  for (const [name, health] of local.providers) {
    const stored = providers.get(name);
    if (stored === undefined || stored.version < health.version) providers.set(name, health);
  }
  const capabilities = new Map(fresh.capabilities);
  for (const [name, methods] of local.capabilities) {
    const merged = new Map(capabilities.get(name) ?? []);
    for (const [method, until] of methods) {
      if ((merged.get(method) ?? 0) < until) merged.set(method, until);
    }
    capabilities.set(name, merged);
  }
  return {
    ...fresh,
    providers,
    capabilities,
    batchLimits: smallerLimits(local.batchLimits, fresh.batchLimits),
    logsRanges: smallerLimits(local.logsRanges, fresh.logsRanges),
  };
}

/** Learned limits only ever shrink until they expire: per provider the smaller one wins. */
function smallerLimits(
  local: ReadonlyMap<string, LearnedLimit>,
  fresh: ReadonlyMap<string, LearnedLimit>,
): Map<string, LearnedLimit> {
  const merged = new Map(fresh);
  for (const [name, limit] of local) {
    const stored = merged.get(name);
    if (stored === undefined || stored.value > limit.value) merged.set(name, limit);
  }
  return merged;
}

export interface StateCacheOptions {
  readonly store: StateStore;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /** How long a read stays fresh (state_cache_ms of the network). */
  readonly ttlMs: (network: string) => number;
  /** Past this age a read waits for the refresh instead of serving the old copy. */
  readonly maxStaleMs?: number;
}

/**
 * The per-container view of shared state. A fresh copy is served from memory; an old one is
 * served while one refresh runs in the background (stale-while-revalidate), so the hot path
 * rarely waits on DynamoDB. When DynamoDB fails, the last copy stays in force (fail open);
 * with no copy at all, every provider counts as healthy.
 */
export class StateCache {
  readonly #entries = new Map<string, Entry>();
  readonly #options: StateCacheOptions;

  constructor(options: StateCacheOptions) {
    this.#options = options;
  }

  /**
   * The network's state; with `maxAgeMs`, a copy no older than that, waiting for a refresh if
   * need be (the served head relies on it).
   */
  async get(network: string, maxAgeMs?: number): Promise<NetworkState> {
    const now = this.#options.clock();
    const entry = this.#entries.get(network);
    if (entry === undefined) return this.#refresh(network);
    const age = now - entry.loadedAt;
    const ttl = this.#options.ttlMs(network);
    if (age < ttl) return entry.state;
    if (maxAgeMs !== undefined && age > maxAgeMs) return entry.refreshing ?? this.#refresh(network);
    const refreshing = entry.refreshing ?? this.#refresh(network);
    const maxStale =
      this.#options.maxStaleMs ?? Math.max(STATE_MAX_STALE_FACTOR * ttl, STATE_MAX_STALE_FLOOR_MS);
    if (age > maxStale) return refreshing;
    return entry.state;
  }

  /** Applies this container's own write at once, before the next read shows it. */
  update(network: string, change: (state: NetworkState) => NetworkState): void {
    const entry = this.#entries.get(network);
    if (!entry) return;
    entry.state = change(entry.state);
    entry.localChanges++;
  }

  #refresh(network: string): Promise<NetworkState> {
    const existing = this.#entries.get(network);
    if (existing?.refreshing) return existing.refreshing;
    const changesBefore = existing?.localChanges ?? 0;
    const refreshing = this.#options.store.readNetwork(network).then(
      (fresh) => {
        const current = this.#entries.get(network);
        const raced = current !== undefined && current.localChanges !== changesBefore;
        const state = raced ? keepNewer(current.state, fresh) : fresh;
        this.#entries.set(network, {
          state,
          loadedAt: this.#options.clock(),
          refreshing: null,
          localChanges: current?.localChanges ?? 0,
        });
        return state;
      },
      (error: unknown) => {
        const kept = this.#entries.get(network);
        this.#options.telemetry.log("warn", "state store unreachable: serving cached state", {
          network,
          error: error instanceof Error ? error.message : String(error),
          cached: kept !== undefined && kept.state !== EMPTY_NETWORK_STATE,
        });
        this.#options.telemetry.count("state_store_errors", { network });
        const state = kept?.state ?? EMPTY_NETWORK_STATE;
        // Served as if fresh for one TTL, so a down store is retried about once per TTL.
        this.#entries.set(network, {
          state,
          loadedAt: this.#options.clock(),
          refreshing: null,
          localChanges: kept?.localChanges ?? 0,
        });
        return state;
      },
    );
    if (existing) existing.refreshing = refreshing;
    else
      this.#entries.set(network, {
        state: EMPTY_NETWORK_STATE,
        loadedAt: Number.NEGATIVE_INFINITY,
        refreshing,
        localChanges: 0,
      });
    return refreshing;
  }
}
