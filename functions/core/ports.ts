import type { ProviderHealth } from "./health.ts";
import type { NetworkState } from "./network-state.ts";
import type { TransportFailure } from "./verdict.ts";

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
  /** Conditional write: succeeds only while the stored version is `expectedVersion`. */
  writeHealth(
    network: string,
    provider: string,
    expectedVersion: number,
    next: ProviderHealth,
  ): Promise<WriteOutcome>;
  /**
   * Publishes `block` as the served head at `at` (ms), keeping the previous publication: only
   * when it is higher than the newest and that one is at least `delayMs` old. False when not.
   */
  publishServed(network: string, block: number, at: number, delayMs: number): Promise<boolean>;
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
  /** Blacklists one method of one provider until `until` (ms); extends only. */
  blacklistCapability(
    network: string,
    provider: string,
    method: string,
    until: number,
  ): Promise<void>;
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
