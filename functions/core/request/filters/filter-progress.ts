import type { BlockRange } from "../logs/logs-range.ts";
import type { FilterEnd, LogCriteria } from "./filter-criteria.ts";

/**
 * A filter's progress along the chain (docs/behaviour.md §14), pure arithmetic: the blocks a
 * poll covers, the blocks it remembers to notice a reorg, and where a reorg sends it back.
 */

/** A block a filter reported on, as it was then: its hash, and how many logs it gave. */
export interface SeenBlock {
  readonly number: number;
  readonly hash: string;
  readonly logs: number;
}

/** A filter as the gateway keeps it. */
export interface FilterRecord {
  readonly id: string;
  readonly kind: "logs" | "blocks";
  /** What a log filter matches, and its end; null for a block filter (it follows `latest`). */
  readonly logs: { readonly criteria: LogCriteria; readonly to: FilterEnd } | null;
  /** The first block of the filter's range (eth_getFilterLogs starts there). */
  readonly first: number;
  /** The next block to report: every block before it was reported once. */
  readonly cursor: number;
  /** Blocks reported that may still be replaced, oldest first (at most `FILTER_SEEN_BLOCKS`). */
  readonly seen: readonly SeenBlock[];
  /** The most blocks one poll covers, once a provider refused more; null: not lowered. */
  readonly span: number | null;
  /** Moves by one with every poll that moved the filter on; writes are conditional on it. */
  readonly version: number;
  /** When the filter expires unless polled (ms). */
  readonly expiresAt: number;
  /**
   * The chain position's last reset when the filter was installed (`resetAt`, ms; 0: none): a
   * chain restarted since then is another chain, on which the filter does not exist.
   */
  readonly chainResetAt: number;
}

/** What a poll writes back, conditional on the version it read. */
export interface FilterAdvance {
  readonly cursor: number;
  readonly seen: readonly SeenBlock[];
  readonly span: number | null;
  readonly expiresAt: number;
}

/** A block header, as far as a filter needs it. */
export interface Header {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
}

/**
 * The blocks a poll covers: from the cursor to `last` (the filter's end now), at most
 * `maxBlocks` of them; null when there is nothing new (the cursor past `last`, or no end yet).
 */
export function pollRange(
  cursor: number,
  last: number | null,
  maxBlocks: number,
): BlockRange | null {
  if (last === null || cursor > last) return null;
  return { from: cursor, to: Math.min(last, cursor + Math.max(1, Math.floor(maxBlocks)) - 1) };
}

/**
 * The blocks to remember after a poll: those remembered before, then the new ones (both
 * oldest first); only blocks above the finalized one (they cannot be replaced short of a
 * finality break), and at most `limit`, the newest.
 */
export function keepSeen(
  before: readonly SeenBlock[],
  added: readonly SeenBlock[],
  finalized: number | null,
  limit: number,
): SeenBlock[] {
  // A block reported again after a reorg replaces what was remembered of its height.
  const firstAdded = added[0]?.number ?? Number.POSITIVE_INFINITY;
  const kept = [...before.filter((block) => block.number < firstAdded), ...added].filter(
    (block) => finalized === null || block.number > finalized,
  );
  return kept.slice(Math.max(0, kept.length - limit));
}

/** Where a filter goes back to after a reorg, and the blocks it reported that were replaced. */
export interface ForkPoint {
  /** The first block to report again: the one after the newest remembered block still canonical. */
  readonly resumeAt: number;
  /** Remembered blocks whose hash the chain no longer has, oldest first. */
  readonly replaced: readonly SeenBlock[];
  /** Whether the reorg may reach below the oldest remembered block (its hash was replaced too). */
  readonly deeperThanKnown: boolean;
}

/**
 * The fork point from the remembered blocks and the chain's hashes at their heights now
 * (`canonical`: null when the chain has no block there). Null when every remembered block
 * is still canonical (no reorg reached them).
 */
export function forkPoint(
  seen: readonly SeenBlock[],
  canonical: (number: number) => string | null,
): ForkPoint | null {
  const replaced: SeenBlock[] = [];
  for (let index = seen.length - 1; index >= 0; index--) {
    const block = seen[index] as SeenBlock;
    if (sameHash(canonical(block.number), block.hash)) {
      return replaced.length === 0
        ? null
        : { resumeAt: block.number + 1, replaced: replaced.reverse(), deeperThanKnown: false };
    }
    replaced.push(block);
  }
  const oldest = seen[0];
  if (oldest === undefined) return null;
  return { resumeAt: oldest.number, replaced: replaced.reverse(), deeperThanKnown: true };
}

/**
 * Whether headers of consecutive blocks (oldest first) form one chain, each naming the one
 * before as its parent, the first naming `parent` when given: headers from two branches (a
 * reorg between two reads, two providers on different forks) do not.
 */
export function oneChain(headers: readonly Header[], parent: string | null): boolean {
  let previous = parent;
  let number: number | null = null;
  for (const header of headers) {
    if (number !== null && header.number !== number + 1) return false;
    if (previous !== null && !sameHash(header.parentHash, previous)) return false;
    previous = header.hash;
    number = header.number;
  }
  return true;
}

export function sameHash(a: string | null | undefined, b: string | null | undefined): boolean {
  return typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();
}
