import type { ChainHead } from "../chain/chain-head.ts";
import type { CheckMemory } from "../chain/quorum.ts";
import type { RequestStats } from "../health/request-stats.ts";
import type { QuorumSnapshot } from "../routing/network-state.ts";

/**
 * What the monitor needs from storage beyond the proxy's StateStore. The DynamoDB adapters
 * (`adapters/store/monitor-store.ts`, `adapters/store/stats-store.ts`) implement these.
 */

export interface MonitorStore {
  readCheckMemory(network: string): Promise<Record<string, CheckMemory>>;
  /** False when a newer memory is stored (an overlapping run ticked later). */
  writeCheckMemory(
    network: string,
    memory: Readonly<Record<string, CheckMemory>>,
    computedAt: number,
  ): Promise<boolean>;
  /** False when a newer snapshot is stored. */
  writeQuorum(network: string, snapshot: QuorumSnapshot): Promise<boolean>;
  writeHeartbeat(network: string, at: number): Promise<void>;
  /**
   * Writes the chain position the monitor saw; `served` stays the containers', except when the
   * position `reset` (then the served head written is the reset's).
   */
  writeHead(network: string, head: ChainHead, reset?: boolean): Promise<void>;
  /** Running probes' lease expiries (ms) by provider. */
  readProbeLeases(network: string): Promise<Map<string, number>>;
  /** Conditional: no probe in flight and the provider's health still at `expectedVersion`. */
  acquireProbeLease(
    network: string,
    provider: string,
    expectedVersion: number,
    now: number,
    until: number,
  ): Promise<boolean>;
  releaseProbeLease(network: string, provider: string, until: number): Promise<void>;
  /**
   * Lets the health items of providers not in `configured` expire at `expiresAt` (ms), and
   * keeps those of configured ones.
   */
  tidyProviderItems(
    network: string,
    configured: readonly string[],
    expiresAt: number,
  ): Promise<void>;
}

export interface StatsReader {
  /** Every provider's request-stat buckets that start within the last `windowSeconds`. */
  read(network: string, now: number, windowSeconds: number): Promise<RequestStats>;
}
