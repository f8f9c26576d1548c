/**
 * The network's chain position, shared by every container through one DynamoDB item
 * (docs/behaviour.md §10): the quorum's `latest`, `safe` and `finalized` blocks as the monitor
 * saw them, and the highest block number any container has answered `eth_blockNumber` with
 * (`served`). Every number only moves forward.
 */

export interface BlockPosition {
  readonly number: number;
  readonly hash: string | null;
}

export interface ChainHead {
  readonly latest: BlockPosition;
  readonly safe: BlockPosition | null;
  readonly finalized: BlockPosition | null;
  /** The highest `eth_blockNumber` any container answered (0 before any). */
  readonly served: number;
  /** When a container last moved `served` (ms); 0 before any. */
  readonly servedAt: number;
  /** When the monitor last confirmed `latest` (ms). */
  readonly updatedAt: number;
  /** When the monitor last saw a block it had recorded replaced (a reorg), ms; 0 if never. */
  readonly reorgSeenAt: number;
}

/** What one monitor tick observed of the chain: the quorum's head and its finality. */
export interface ChainObservation {
  readonly latest: BlockPosition;
  readonly safe: BlockPosition | null;
  readonly finalized: BlockPosition | null;
  /** The quorum's block at the previous `latest` height now has another hash. */
  readonly reorged: boolean;
  readonly at: number;
}

function later(stored: BlockPosition | null, seen: BlockPosition | null): BlockPosition | null {
  if (seen === null) return stored;
  if (stored === null || seen.number > stored.number) return seen;
  // The same height seen again keeps the newest hash (a reorg at the head replaces it).
  return seen.number === stored.number ? seen : stored;
}

/**
 * The head after a tick: each number moves forward only; `served` is the containers' and
 * kept; a reorg stamps `reorgSeenAt`.
 */
export function advanceHead(stored: ChainHead | null, seen: ChainObservation): ChainHead {
  return {
    latest: later(stored?.latest ?? null, seen.latest) ?? seen.latest,
    safe: later(stored?.safe ?? null, seen.safe),
    finalized: later(stored?.finalized ?? null, seen.finalized),
    served: stored?.served ?? 0,
    servedAt: stored?.servedAt ?? 0,
    updatedAt: seen.at,
    reorgSeenAt: seen.reorged ? seen.at : (stored?.reorgSeenAt ?? 0),
  };
}

/**
 * The served head: the highest block the gateway has vouched for, from the shared item and
 * what this container itself answered. No `eth_blockNumber` answer goes below it.
 */
export function servedHead(head: ChainHead | null, servedHere: number): number {
  return Math.max(head?.latest.number ?? 0, head?.served ?? 0, servedHere);
}

/**
 * Whether the served head was confirmed within a block time (by the monitor, by this container
 * or through the shared item by another): then it answers `eth_blockNumber` by itself.
 */
export function headIsFresh(
  head: ChainHead | null,
  confirmedHere: number,
  now: number,
  blockTimeMs: number,
): boolean {
  const confirmed = Math.max(head?.updatedAt ?? 0, head?.servedAt ?? 0, confirmedHere);
  return now - confirmed < blockTimeMs;
}
