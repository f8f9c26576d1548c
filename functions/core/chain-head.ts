/**
 * The network's chain position, shared by every container through one DynamoDB item
 * (docs/behaviour.md §10): the quorum's `latest`, `safe` and `finalized` blocks as the monitor
 * saw them, and the served head: the `eth_blockNumber` the gateway vouches for.
 *
 * The served head is published (by the monitor's tick, or by a container that asked a
 * provider) at most once per `delay`, keeping the value before it, and every container answers
 * with the highest value published at least `delay` ago. Containers' copies of the item are
 * younger than `delay`, so they all know that value and agree on it: a client moving between
 * containers never sees `eth_blockNumber` go back, for the price of a head `delay` behind.
 */

import { SERVED_HEAD_WRITE_MARGIN_MS } from "./policies.ts";

export interface BlockPosition {
  readonly number: number;
  readonly hash: string | null;
}

/** One publication of the served head. */
export interface Publication {
  readonly block: number;
  /** When it was published (ms). */
  readonly at: number;
}

export interface ChainHead {
  readonly latest: BlockPosition;
  readonly safe: BlockPosition | null;
  readonly finalized: BlockPosition | null;
  /** The newest publication of the served head, and the one before it; null before any. */
  readonly served: Publication | null;
  readonly previousServed: Publication | null;
  /** When the monitor last confirmed `latest` (ms). */
  readonly updatedAt: number;
  /** When the monitor last saw a block it had recorded replaced (a reorg), ms; 0 if never. */
  readonly reorgSeenAt: number;
  /**
   * When the monitor last saw the block it had recorded as `finalized` replaced, ms; 0 (or
   * absent) if never. Answers kept as immutable before it are not trusted after it.
   */
  readonly finalityBrokenAt?: number;
}

/** What one monitor tick observed of the chain: the quorum's head and its finality. */
export interface ChainObservation {
  readonly latest: BlockPosition;
  readonly safe: BlockPosition | null;
  readonly finalized: BlockPosition | null;
  /** The quorum's block at the previous `latest` height now has another hash. */
  readonly reorged: boolean;
  /** The quorum's block at the previous `finalized` height now has another hash. */
  readonly finalityBroken?: boolean;
  readonly at: number;
}

function later(stored: BlockPosition | null, seen: BlockPosition | null): BlockPosition | null {
  if (seen === null) return stored;
  if (stored === null || seen.number > stored.number) return seen;
  // The same height seen again keeps the newest hash (a reorg at the head replaces it).
  return seen.number === stored.number ? seen : stored;
}

/**
 * The head after a tick: each number moves forward only; the served head's publications are
 * kept (they are published on their own); a reorg stamps `reorgSeenAt`.
 */
export function advanceHead(stored: ChainHead | null, seen: ChainObservation): ChainHead {
  // Finality broken: the recorded safe and finalized blocks are gone, so the ones seen now
  // replace them even when lower.
  const broken = seen.finalityBroken === true;
  const latest = later(stored?.latest ?? null, seen.latest) ?? seen.latest;
  // A block above the head cannot be safe or finalized: such an answer (a lying or broken
  // member) is not taken, and one recorded before is dropped rather than kept forward-only.
  const settled = (position: BlockPosition | null) =>
    position !== null && position.number <= latest.number ? position : null;
  const safe = settled(seen.safe);
  const finalized = settled(seen.finalized);
  return {
    latest,
    safe: broken ? safe : later(settled(stored?.safe ?? null), safe),
    finalized: broken ? finalized : later(settled(stored?.finalized ?? null), finalized),
    served: stored?.served ?? null,
    previousServed: stored?.previousServed ?? null,
    updatedAt: seen.at,
    reorgSeenAt: seen.reorged || broken ? seen.at : (stored?.reorgSeenAt ?? 0),
    finalityBrokenAt: broken ? seen.at : (stored?.finalityBrokenAt ?? 0),
  };
}

/**
 * The served head at `now`: the highest publication made at least `delayMs` ago, or null when
 * none is that old yet. Publications are at least `delayMs` apart, so the one before the newest
 * is old enough whenever the newest is not.
 */
export function servedHeadAt(head: ChainHead | null, now: number, delayMs: number): number | null {
  const cutoff = now - delayMs;
  const newest = head?.served ?? null;
  if (newest !== null && newest.at <= cutoff) return newest.block;
  const before = head?.previousServed ?? null;
  return before !== null && before.at <= cutoff ? before.block : null;
}

/**
 * The highest block known to exist: the monitor's latest, or a higher one some container
 * published (answers about blocks up to it can be kept, docs/behaviour.md §11).
 */
export function highestKnownBlock(head: ChainHead | null): number {
  return Math.max(head?.latest.number ?? 0, head?.served?.block ?? 0);
}

/**
 * The publication delay: twice the age a container's copy of the shared state may reach
 * (`state_cache_ms`), plus the time a write takes to be read back, so every container's copy
 * holds every publication old enough to answer with.
 */
export function publicationDelayMs(stateCacheMs: number): number {
  return 2 * stateCacheMs + SERVED_HEAD_WRITE_MARGIN_MS;
}

/** Whether the served head was published within a block time: no provider need be asked. */
export function servedRecently(head: ChainHead | null, now: number, blockTimeMs: number): boolean {
  const newest = head?.served ?? null;
  return newest !== null && now - newest.at < blockTimeMs;
}

/** How far a provider's head may run ahead of the quorum's: a quorum lags its fastest members. */
const REACHABLE_MARGIN_BLOCKS = 8;

/**
 * The highest block the chain can have reached by `now`: the monitor's latest plus one block
 * per block time since it confirmed it, plus a margin for providers ahead of the quorum. A
 * provider's number above it is not the chain's; null while the monitor wrote no position.
 */
export function reachableHead(
  head: ChainHead | null,
  now: number,
  blockTimeMs: number,
): number | null {
  if (head === null) return null;
  const progress = Math.ceil(Math.max(0, now - head.updatedAt) / blockTimeMs);
  return head.latest.number + progress + REACHABLE_MARGIN_BLOCKS;
}

/** May `block` be published at `now`? Only higher than the newest, and `delayMs` after it. */
export function mayPublish(
  head: ChainHead | null,
  block: number,
  now: number,
  delayMs: number,
): boolean {
  const newest = head?.served ?? null;
  return newest === null || (block > newest.block && newest.at <= now - delayMs);
}
