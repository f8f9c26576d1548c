import type { Network } from "../config/network-model.ts";
import type { ProviderHealth } from "../health/health.ts";
import { recentMinority, sitsOut } from "../health/minority.ts";
import { type ConsensusCounts, NO_CONSENSUS_COUNTS } from "../request/consensus/consensus-book.ts";

/**
 * A provider's part in read consensus, as the status route shows it (docs/behaviour.md §17.5):
 * this container's counts, and from the shared health the times in the minority within the
 * window and the end of a sit-out.
 */
export interface ConsensusStatus extends ConsensusCounts {
  /** Times in the minority within `minority_window_seconds`, across every container. */
  readonly minority_recent: number;
  /** Left out of consensus routing until then; null when it is not. */
  readonly sit_out_until: string | null;
}

/** Null on a network without consensus. */
export function consensusStatus(
  network: Network,
  health: ProviderHealth,
  counts: ConsensusCounts | undefined,
  now: number,
): ConsensusStatus | null {
  const settings = network.consensus;
  if (settings === null) return null;
  const record = health.consensus;
  return {
    ...(counts ?? NO_CONSENSUS_COUNTS),
    minority_recent: recentMinority(record, now, settings.minority_window_seconds * 1000),
    sit_out_until:
      record !== undefined && sitsOut(record, now)
        ? new Date(record.sitOutUntil).toISOString()
        : null,
  };
}
