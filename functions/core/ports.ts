import type { ChainHead } from "./chain/chain-head.ts";
import type { TransportFailure } from "./classify/verdict.ts";
import type { ProviderHealth } from "./health/health.ts";
import type { HistoryProbe, LearnedBound } from "./history/bounds.ts";
import type { HistoryResource } from "./history/resources.ts";
import type { FilterAdvance, FilterRecord } from "./request/filters/filter-progress.ts";
import type { NetworkState } from "./routing/network-state.ts";
import type {
  ConnectionRecord,
  ConnectOutcome,
  PushOutcome,
  SubscribeOutcome,
  SubscriptionBounds,
  SubscriptionRecord,
} from "./subscriptions/subscription-records.ts";

/**
 * What the gateway needs from the world. Adapters implement these; tests may pass real
 * adapters against local servers. Keeping them here keeps core free of I/O imports.
 */

export type UpstreamResult =
  | {
      readonly ok: true;
      readonly status: number;
      readonly body: string;
      readonly elapsedMs: number;
      /** The `Retry-After` header, as sent. */
      readonly retryAfter?: string;
    }
  | { readonly ok: false; readonly failure: TransportFailure; readonly elapsedMs: number }
  | {
      readonly ok: false;
      readonly tooLarge: true;
      readonly limit: number;
      readonly elapsedMs: number;
    };

export interface UpstreamRequest {
  readonly url: string;
  readonly body: string;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  /**
   * Ends the attempt early (a hedged read that lost, a caller gone). The attempt then resolves
   * as a connection failure; the caller knows from its own signal that it asked for this.
   */
  readonly signal?: AbortSignal;
  /**
   * Safe to send twice (reads). Only then is a request re-sent, once, when a reused keep-alive
   * socket turns out to be dead before any answer. Default false: a transaction is never sent
   * twice behind the caller's back.
   */
  readonly idempotent?: boolean;
}

export interface Upstream {
  send(request: UpstreamRequest): Promise<UpstreamResult>;
}

export type WriteOutcome =
  | { readonly written: true }
  | { readonly written: false; readonly current: ProviderHealth };

export interface StateStore {
  /** A network's whole shared state (one Query). */
  readNetwork(network: string): Promise<NetworkState>;
  /**
   * The chain position item alone, strongly consistent: every write that returned before the
   * read began is in it. Null before the monitor's first.
   */
  readHead(network: string): Promise<ChainHead | null>;
  /** Conditional write: succeeds only while the stored version is `expectedVersion`. */
  writeHealth(
    network: string,
    provider: string,
    expectedVersion: number,
    next: ProviderHealth,
  ): Promise<WriteOutcome>;
  /**
   * Publishes `block` as the served head at `at` (ms), keeping the previous publication: only
   * when it is higher than the newest, that one is at least `delayMs` old, and the chain
   * position has not reset since the one the publisher read (`resetAt`, 0 for never). False
   * when not.
   */
  publishServed(
    network: string,
    block: number,
    at: number,
    delayMs: number,
    resetAt: number,
  ): Promise<boolean>;
  /**
   * Records that `provider` takes batches of at most `size` calls until `until` (ms); a smaller
   * size replaces a larger one, and any size replaces an expired one.
   */
  recordBatchLimit(network: string, provider: string, size: number, until: number): Promise<void>;
  /**
   * Records that one eth_getLogs on `provider` may span at most `blocks` blocks until `until`
   * (ms); a smaller span replaces a larger one, and any span replaces an expired one.
   */
  recordLogsRange(network: string, provider: string, blocks: number, until: number): Promise<void>;
  /**
   * Records that `provider` keeps `resource` from `bound.from` on (it refused `bound.refusedAt`)
   * until `bound.until` (ms): a later `from` replaces an earlier one, and any replaces an expired
   * one, so a bound only tightens while in force (docs/behaviour.md §16.3).
   */
  recordHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    bound: LearnedBound,
  ): Promise<void>;
  /**
   * Forgets the learned bound of `provider` for `resource` if it leaves out `block`, which the
   * provider has just served: its own answer proves the bound wrong (or gone).
   */
  forgetHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    block: number,
  ): Promise<void>;
  /** The monitor's probe of one provider's history, replacing the previous one. */
  recordHistoryProbe(network: string, provider: string, probe: HistoryProbe): Promise<void>;
  /** Blacklists one method of one provider until `until` (ms); extends only. */
  blacklistCapability(
    network: string,
    provider: string,
    method: string,
    until: number,
  ): Promise<void>;
}

/**
 * Waits `ms`, or less when `signal` aborts (then resolves all the same). The core's only timer,
 * injected like the clock so the core stays free of I/O.
 */
export type Wait = (ms: number, signal?: AbortSignal) => Promise<void>;

/** What the transaction ledger knows of one transaction hash. */
export type LedgerEntry =
  /** A container is sending it now (since `at`, ms). */
  | { readonly status: "sending"; readonly at: number }
  /** A provider accepted it: the answer is its hash. */
  | { readonly status: "accepted" }
  /** The last send was refused: the answer it got (kept for operators; a resend is sent again). */
  | { readonly status: "refused"; readonly answer: string };

/**
 * One record per transaction hash, shared by every container (docs/behaviour.md §4.12), so a
 * client that sends the same transaction again, through any container, gets the first
 * sender's outcome.
 */
export interface TransactionLedger {
  /** Claims the hash for this sender; the existing entry when another claimed it first. */
  claim(network: string, hash: string, at: number): Promise<LedgerEntry | null>;
  /** Records how the send ended. */
  settle(network: string, hash: string, outcome: LedgerEntry): Promise<void>;
}

/**
 * The shared tier of the answer cache (docs/behaviour.md §11): immutable answers only, by
 * network and key, for every container. A read never waits long: a slow store is a miss.
 */
export interface SharedAnswerStore {
  /** The answers stored under `keys` that have not expired; a key not found is absent. */
  read(network: string, keys: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /**
   * Keeps an answer until `expiresAt` (ms). False when it was not kept: over `maxBytes`
   * compressed (`cache_shared_item_bytes`), or too large for the store at all.
   */
  write(
    network: string,
    key: string,
    text: string,
    expiresAt: number,
    maxBytes: number,
  ): Promise<boolean>;
}

/** A filter to install: everything but its id and version, which the store gives it. */
export type NewFilter = Omit<FilterRecord, "id" | "version">;

/**
 * Filters the gateway holds (docs/behaviour.md §14), shared by every container: kept per
 * network and owner (the API key, or everyone without keys), at most `max` live per owner,
 * each expiring at its `expiresAt` unless a poll moves it. Moves are conditional on the
 * version read, so two containers polling one filter at once never both report its blocks.
 */
export interface FilterStore {
  /** Installs a filter; its id (`filter-id.ts`), or null when the owner holds `max` live ones. */
  install(
    network: string,
    owner: string,
    filter: NewFilter,
    max: number,
    now: number,
  ): Promise<string | null>;
  /** The owner's filter with this id, or null when there is none or it expired by `now`. */
  read(network: string, owner: string, id: string, now: number): Promise<FilterRecord | null>;
  /** Moves the filter on while its version is `version`; false when another poll moved it first. */
  advance(
    network: string,
    owner: string,
    id: string,
    version: number,
    next: FilterAdvance,
  ): Promise<boolean>;
  /** Removes the filter; false when the owner had no such filter live at `now`. */
  uninstall(network: string, owner: string, id: string, now: number): Promise<boolean>;
}

/**
 * WebSocket connections and their subscriptions (docs/behaviour.md "Subscriptions over
 * WebSocket"), shared by every container: the socket Lambda writes them, the head follower
 * reads them and moves each subscription on. Bounds hold across containers; what a lost
 * `$disconnect` leaves behind expires with the connection.
 */
export interface SubscriptionStore {
  /** Keeps a connection; "over_key" when its caller holds `maxPerKey` live ones already. */
  connect(
    network: string,
    connection: ConnectionRecord,
    maxPerKey: number,
  ): Promise<ConnectOutcome>;
  /** The live connection with this id, or null (never connected, gone, or expired). */
  connection(network: string, connectionId: string): Promise<ConnectionRecord | null>;
  /** Forgets a connection and every subscription it holds. */
  disconnect(network: string, connectionId: string): Promise<void>;
  /** Keeps a subscription of a live connection, within the bounds. */
  subscribe(
    network: string,
    subscription: SubscriptionRecord,
    bounds: SubscriptionBounds,
  ): Promise<SubscribeOutcome>;
  /** Removes one subscription of this connection; false when it holds no such subscription. */
  unsubscribe(network: string, connectionId: string, subscriptionId: string): Promise<boolean>;
  /** The network's live subscriptions (the follower's read, once per block). */
  list(network: string): Promise<readonly SubscriptionRecord[]>;
  /**
   * Moves a subscription that is not live from `nextBlock = expected` to `next`, and makes it
   * live when `live`; false when it is not at `expected` (another run moved it), is live, or is
   * gone. Two follower runs never both deliver a block. Idempotent: a move found already made
   * (at `next`, live as asked: an earlier attempt whose answer was lost, retried) is true.
   */
  advance(
    network: string,
    subscriptionId: string,
    expected: number,
    next: number,
    live?: boolean,
  ): Promise<boolean>;
  /**
   * Those of `networks` (the configured ones) that hold at least one subscription, one cheap
   * read each: the follower runs only for them.
   */
  networksWithSubscribers(networks: readonly string[]): Promise<readonly string[]>;
}

/** Pushes to WebSocket connections (API Gateway's management API; locally, the emulator's). */
export interface ConnectionPush {
  /** Sends one message to one connection. */
  post(network: string, connectionId: string, data: string): Promise<PushOutcome>;
  /** Closes a connection (locally with close code 1011 and `reason`). */
  close(network: string, connectionId: string, reason: string): Promise<void>;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Telemetry {
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
  /** Whether lines of `level` are written, so costly fields are built only then (absent: all are). */
  enabled?(level: LogLevel): boolean;
  /** A count metric with dimensions (never URLs: provider names only). */
  count(name: string, dimensions: Record<string, string>, value?: number): void;
  /** A measurement (ms, seconds, or a plain number). */
  measure(
    name: string,
    dimensions: Record<string, string>,
    value: number,
    unit: "Milliseconds" | "Seconds" | "Count",
  ): void;
}

/** A wait that may be called off: `done` then never resolves. */
export interface HedgeWait {
  readonly done: Promise<void>;
  cancel(): void;
}

/**
 * Starts a wait of `ms`. The real one (`hedgeTimer` in adapters/wait.ts) is a plain timer, not
 * an AbortSignal: one is started for every hedgeable read, and an AbortController with its
 * abort event costs several times a timer's set and clear. Tests pass a timer they fire.
 */
export type HedgeTimer = (ms: number) => HedgeWait;
