import { type ChainHead, newerHead } from "../chain/chain-head.ts";
import { mergeHistories } from "../history/bounds.ts";
import { STATE_MAX_STALE_FACTOR, STATE_MAX_STALE_FLOOR_MS } from "../policies.ts";
import type { StateStore, Telemetry } from "../ports.ts";
import { EMPTY_NETWORK_STATE, type LearnedLimit, type NetworkState } from "./network-state.ts";

interface Entry {
  state: NetworkState;
  loadedAt: number;
  refreshing: Promise<NetworkState> | null;
  /** Counts this container's own updates, so a refresh that raced one can tell. */
  localChanges: number;
}

/** A copy of the chain position item read alone, strongly consistent. */
interface HeadEntry {
  head: ChainHead | null;
  /** When the read that gave `head` began (ms): every write that landed before is in it. */
  readFrom: number;
  refreshing: { readonly startedAt: number; readonly done: Promise<HeadEntry> } | null;
}

/**
 * A head copy is read again in the background once this share of `head_cache_ms` old, so a
 * container with steady traffic rarely has a request wait for the read.
 */
const HEAD_READ_AHEAD = 0.8;

/**
 * The state with the newer of its Query's chain position and a consistent copy of it, made
 * once per state and head copy: every request between two reads shares it.
 */
const withHeads = new WeakMap<NetworkState, { head: ChainHead | null; state: NetworkState }>();

function withHead(state: NetworkState, entry: HeadEntry | undefined): NetworkState {
  if (entry === undefined) return state;
  const made = withHeads.get(state);
  if (made !== undefined && made.head === entry.head) return made.state;
  const merged = { ...state, head: newerHead(state.head, entry.head) };
  withHeads.set(state, { head: entry.head, state: merged });
  return merged;
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
    history: mergeHistories(local.history, fresh.history),
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
  /**
   * How old a copy of the chain position may be when a request needs the served head
   * (`head_cache_ms` of the network).
   */
  readonly headTtlMs: (network: string) => number;
}

/**
 * The per-container view of shared state. A fresh copy is served from memory; an old one is
 * served while one refresh runs in the background (stale-while-revalidate), so the hot path
 * rarely waits on DynamoDB. When DynamoDB fails, the last copy stays in force (fail open);
 * with no copy at all, every provider counts as healthy.
 */
export class StateCache {
  readonly #entries = new Map<string, Entry>();
  readonly #heads = new Map<string, HeadEntry>();
  readonly #options: StateCacheOptions;

  constructor(options: StateCacheOptions) {
    this.#options = options;
  }

  /**
   * The network's state, its chain position the newer of the Query's and the last consistent
   * copy in hand; with `freshHead`, from a consistent read begun no more than `head_cache_ms`
   * ago, waiting for one if need be (the served head relies on it, docs/behaviour.md §10.2).
   */
  async get(
    network: string,
    options: { readonly freshHead?: boolean } = {},
  ): Promise<NetworkState> {
    return this.current(network, options);
  }

  /**
   * `get`, without a promise when memory has what the request needs (the hot path: a fresh
   * copy, and a head copy within `head_cache_ms`), so a request costs no turn of the event loop.
   */
  current(
    network: string,
    options: { readonly freshHead?: boolean } = {},
  ): NetworkState | Promise<NetworkState> {
    const state = this.#state(network);
    if (!options.freshHead) {
      return state instanceof Promise
        ? state.then((read) => withHead(read, this.#heads.get(network)))
        : withHead(state, this.#heads.get(network));
    }
    const head = this.#head(network, this.#options.headTtlMs(network));
    if (state instanceof Promise || head instanceof Promise) {
      return Promise.all([state, head]).then(([read, copy]) => withHead(read, copy));
    }
    return withHead(state, head);
  }

  #state(network: string): Promise<NetworkState> | NetworkState {
    const now = this.#options.clock();
    const entry = this.#entries.get(network);
    if (entry === undefined) return this.#refresh(network);
    const age = now - entry.loadedAt;
    const ttl = this.#options.ttlMs(network);
    // Past the TTL a request is served the old copy while it is re-read.
    if (age < ttl) return entry.state;
    const refreshing = entry.refreshing ?? this.#refresh(network);
    const maxStale =
      this.#options.maxStaleMs ?? Math.max(STATE_MAX_STALE_FACTOR * ttl, STATE_MAX_STALE_FLOOR_MS);
    if (age > maxStale) return refreshing;
    return entry.state;
  }

  /**
   * The head copy no older than `ttl`: the one in memory (read again in the background once
   * `HEAD_READ_AHEAD` of it old), a read in flight that began within it, or a new read.
   */
  #head(network: string, ttl: number): HeadEntry | Promise<HeadEntry> {
    const now = this.#options.clock();
    const entry = this.#heads.get(network);
    const age = entry === undefined ? Number.POSITIVE_INFINITY : now - entry.readFrom;
    const inFlight = entry?.refreshing ?? null;
    if (entry !== undefined && age < ttl) {
      if (age >= ttl * HEAD_READ_AHEAD && inFlight === null) void this.#readHead(network);
      return entry;
    }
    if (inFlight !== null && now - inFlight.startedAt < ttl) return inFlight.done;
    return this.#readHead(network);
  }

  #readHead(network: string): Promise<HeadEntry> {
    const startedAt = this.#options.clock();
    const done = this.#options.store.readHead(network).then(
      (head): HeadEntry => {
        const current = this.#heads.get(network);
        // Two reads in flight (a slow one overtaken): the one begun later is the newer.
        if (current !== undefined && current.readFrom > startedAt) return current;
        const read = { head, readFrom: startedAt, refreshing: null };
        this.#heads.set(network, read);
        return read;
      },
      (error: unknown): HeadEntry => {
        this.#options.telemetry.log("warn", "chain position unreadable: serving the last copy", {
          network,
          error: error instanceof Error ? error.message : String(error),
        });
        this.#options.telemetry.count("state_store_errors", { network });
        // As if read now, so a down store is tried again once per head_cache_ms (fail open).
        const kept = { head: this.#heads.get(network)?.head ?? null, readFrom: startedAt };
        const read = { ...kept, refreshing: null };
        this.#heads.set(network, read);
        return read;
      },
    );
    const existing = this.#heads.get(network);
    const refreshing = { startedAt, done };
    if (existing !== undefined) existing.refreshing = refreshing;
    else this.#heads.set(network, { head: null, readFrom: Number.NEGATIVE_INFINITY, refreshing });
    return done;
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
