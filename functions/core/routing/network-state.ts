import type { ChainHead } from "../chain/chain-head.ts";
import type { QuorumReason } from "../chain/quorum.ts";
import { HEALTHY, type ProviderHealth } from "../health/health.ts";
import type { ProviderHistory } from "../history/bounds.ts";
import { QUORUM_STALE_INTERVALS } from "../policies.ts";

export type { QuorumReason };

export interface HeadInfo {
  readonly number: number;
  /** Block timestamp, seconds. */
  readonly timestamp: number;
}

/** The monitor's latest quorum verdict for a network. */
export interface QuorumSnapshot {
  readonly head: number | null;
  readonly headTimestamp: number | null;
  readonly members: readonly string[];
  readonly excluded: Readonly<Record<string, QuorumReason>>;
  /** Why an excluded provider's check failed, judged as live traffic would ("rate_limit: HTTP 429"). */
  readonly failures?: Readonly<Record<string, string>>;
  /** Each provider's head as last seen by the monitor. */
  readonly heads: Readonly<Record<string, HeadInfo>>;
  /** When the monitor computed it (ms). */
  readonly computedAt: number;
  /**
   * When the monitor asked for the heads it holds (ms); absent in a snapshot an older monitor
   * wrote. A member that hangs until `check_timeout_ms` delays `computedAt` by that much, so
   * the blocks made since the heads were read are counted from here.
   */
  readonly headsReadAt?: number;
}

/** When the snapshot's heads were read: the blocks the chain can have made since count from here. */
export function headsReadAt(quorum: QuorumSnapshot): number {
  return quorum.headsReadAt ?? quorum.computedAt;
}

/** Everything the proxy needs about a network's shared state: one DynamoDB Query. */
export interface NetworkState {
  readonly providers: ReadonlyMap<string, ProviderHealth>;
  /** provider → method → blacklisted until (ms). */
  readonly capabilities: ReadonlyMap<string, ReadonlyMap<string, number>>;
  readonly quorum: QuorumSnapshot | null;
  /** The monitor's last tick (ms), 0 when it never ran. */
  readonly monitorTickAt: number;
  /** Batch sizes providers were found to accept, by provider (learned, with an expiry). */
  readonly batchLimits: ReadonlyMap<string, LearnedLimit>;
  /** The most blocks one eth_getLogs may span, by provider (learned from its range errors, with an expiry). */
  readonly logsRanges: ReadonlyMap<string, LearnedLimit>;
  /** The chain position (latest, safe, finalized, served); null before the monitor's first. */
  readonly head: ChainHead | null;
  /** What each provider keeps of each resource, learned and probed (docs/behaviour.md §16). */
  readonly history: ReadonlyMap<string, ProviderHistory>;
}

/** A limit learned from a provider's errors, in force until `until` (ms). */
export interface LearnedLimit {
  readonly value: number;
  readonly until: number;
}

export const EMPTY_NETWORK_STATE: NetworkState = {
  providers: new Map(),
  capabilities: new Map(),
  quorum: null,
  monitorTickAt: 0,
  batchLimits: new Map(),
  logsRanges: new Map(),
  head: null,
  history: new Map(),
};

export function healthOf(state: NetworkState, provider: string): ProviderHealth {
  return state.providers.get(provider) ?? HEALTHY;
}

export function capabilityBlacklistedUntil(
  state: NetworkState,
  provider: string,
  method: string,
  now: number,
): number | null {
  const until = state.capabilities.get(provider)?.get(method);
  return until !== undefined && until > now ? until : null;
}

/**
 * A stalled monitor must not take the gateway down: when its snapshot is missing or older
 * than three check intervals, every provider counts as in quorum (docs/behaviour.md §3.6).
 */
export function quorumInForce(
  state: NetworkState,
  now: number,
  checkIntervalSeconds: number,
): boolean {
  const quorum = state.quorum;
  if (quorum === null) return false;
  return now - quorum.computedAt <= QUORUM_STALE_INTERVALS * checkIntervalSeconds * 1000;
}
