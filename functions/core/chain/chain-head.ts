/**
 * The network's chain position, shared by every container through one DynamoDB item
 * (docs/behaviour.md §10): the quorum's `latest`, `safe` and `finalized` blocks as the monitor
 * saw them, and the served head: the `eth_blockNumber` the gateway vouches for.
 *
 * The served head is published (by the monitor's tick, or by a container that saw a quorum
 * member show a higher head) at most once per `delay`, keeping the value before it, and every
 * container answers with the highest value published at least `delay` ago. Each container
 * reads the item with a strongly consistent read at most `head_cache_ms` before it uses it,
 * and `delay` is that plus the time a write may take to land, so they all know that value and
 * agree on it: a client moving between containers never sees `eth_blockNumber` go back.
 *
 * A chain that restarted under the same chain id, or whose finality broke, resets the
 * position (`resetAt`): that reset is the one step back, and the answer cache's keys move on.
 */

import { CHAIN_RESTART_CHECKS, SERVED_HEAD_WRITE_MARGIN_MS } from "../policies.ts";

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
  /**
   * When the position last reset to what the quorum showed (a chain restarted under the same
   * chain id, or a confirmed finality break), ms; 0 (or absent) if never. A publication is
   * taken only beside the reset it was made after.
   */
  readonly resetAt?: number;
  /** Checks in a row whose quorum showed a live head far below `latest` (a restart). */
  readonly belowChecks?: number;
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
  /** The quorum shows a live head far below the recorded `latest` (`restartSeen`). */
  readonly restartSeen?: boolean;
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
 * kept (they are published on their own); a reorg stamps `reorgSeenAt`. A confirmed finality
 * break, or a restart seen for `CHAIN_RESTART_CHECKS` checks in a row, resets the position
 * instead (`resetHead`).
 */
export function advanceHead(stored: ChainHead | null, seen: ChainObservation): ChainHead {
  const belowChecks = seen.restartSeen === true ? (stored?.belowChecks ?? 0) + 1 : 0;
  if (seen.finalityBroken === true || belowChecks >= CHAIN_RESTART_CHECKS) {
    return resetHead(stored, seen);
  }
  const latest = later(stored?.latest ?? null, seen.latest) ?? seen.latest;
  const safe = settledAt(latest, seen.safe);
  const finalized = settledAt(latest, seen.finalized);
  return {
    latest,
    safe: later(settledAt(latest, stored?.safe ?? null), safe),
    finalized: later(settledAt(latest, stored?.finalized ?? null), finalized),
    served: stored?.served ?? null,
    previousServed: stored?.previousServed ?? null,
    updatedAt: seen.at,
    reorgSeenAt: seen.reorged ? seen.at : (stored?.reorgSeenAt ?? 0),
    finalityBrokenAt: stored?.finalityBrokenAt ?? 0,
    resetAt: stored?.resetAt ?? 0,
    belowChecks,
  };
}

/**
 * A block above the head cannot be safe or finalized: such an answer (a lying or broken
 * member) is not taken, and one recorded before is dropped rather than kept forward-only.
 */
function settledAt(latest: BlockPosition, position: BlockPosition | null): BlockPosition | null {
  return position !== null && position.number <= latest.number ? position : null;
}

/**
 * The position as the quorum shows it now, even where lower: latest, safe and finalized as
 * seen, and the served head down to the latest seen when it was above (kept when it was not:
 * the quorum shows that block). A reset publication counts as old enough at once (`at` 0), so
 * every container that reads it serves it; `resetAt` moves the answer cache's keys on.
 */
function resetHead(stored: ChainHead | null, seen: ChainObservation): ChainHead {
  const served = stored?.served ?? null;
  const keepServed = served !== null && served.block <= seen.latest.number;
  return {
    latest: seen.latest,
    safe: settledAt(seen.latest, seen.safe),
    finalized: settledAt(seen.latest, seen.finalized),
    served: keepServed ? served : { block: seen.latest.number, at: 0 },
    previousServed: keepServed ? (stored?.previousServed ?? null) : null,
    updatedAt: seen.at,
    reorgSeenAt: seen.at,
    finalityBrokenAt: seen.finalityBroken === true ? seen.at : (stored?.finalityBrokenAt ?? 0),
    resetAt: seen.at,
    belowChecks: 0,
  };
}

/** Whether `head` is a reset made after `stored` (the tick that made it reset the position). */
export function resetSince(stored: ChainHead | null, head: ChainHead): boolean {
  return (head.resetAt ?? 0) > (stored?.resetAt ?? 0);
}

/**
 * The answer cache's generation: answers are keyed by it, so none kept before a finality break
 * or a reset of the chain position is found after it (docs/behaviour.md §11.6).
 */
export function cacheGeneration(head: ChainHead | null): number {
  return Math.max(head?.finalityBrokenAt ?? 0, head?.resetAt ?? 0);
}

/**
 * The newer of two copies of the head item (a consistent read and the state Query's, read at
 * different times): the later reset wins whole; within one, the monitor's fields from the copy
 * it wrote later, the publications from the copy with the later one. Every field of either
 * only moves forward between resets, so the merge is never older than either copy.
 */
export function newerHead(a: ChainHead | null, b: ChainHead | null): ChainHead | null {
  if (a === null || b === null) return a ?? b;
  const resetA = a.resetAt ?? 0;
  const resetB = b.resetAt ?? 0;
  if (resetA !== resetB) return resetA > resetB ? a : b;
  const monitor = a.updatedAt >= b.updatedAt ? a : b;
  const publications = (a.served?.at ?? -1) >= (b.served?.at ?? -1) ? a : b;
  if (monitor === publications) return monitor;
  return {
    ...monitor,
    served: publications.served,
    previousServed: publications.previousServed,
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
 * The publication delay: the age a container's copy of the head item may reach
 * (`head_cache_ms`, read strongly consistent), plus the time a publication's write may take to
 * land, so every container's copy holds every publication old enough to answer with.
 */
export function publicationDelayMs(headCacheMs: number): number {
  return headCacheMs + SERVED_HEAD_WRITE_MARGIN_MS;
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
