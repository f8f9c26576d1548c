import { isRecord } from "../jsonrpc/envelope.ts";
import { parseJsonOrUndefined } from "../jsonrpc/json-raw.ts";
import type { PlacedLog } from "../request/filters/filter-answers.ts";
import type { ChainBlock, ChainReads } from "./chain-reads.ts";
import { type RecentBlock, sameBlock } from "./cursor.ts";
import type { BlockLog } from "./delivery/block-logs.ts";

/**
 * A reorg, as the follower meets it (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower): a new block whose parent is not the block delivered last. The blocks it
 * replaced are found among those remembered, newest first; their logs, as they were sent,
 * go again with `removed: true` (oldest block first, as geth sends them), then the new
 * branch's headers and logs from the fork point.
 */

export type ForkFinding =
  /** The chain shows no block at the newest remembered height (its providers are behind): wait. */
  | { readonly kind: "unseen" }
  /** The newest remembered block is still the chain's: the new block came from another branch; wait. */
  | { readonly kind: "none" }
  /**
   * `replaced` (oldest first) are no longer the chain's; the new branch starts after `fork`.
   * `deeper`: even the oldest remembered block was replaced, so the reorg may reach below it.
   */
  | {
      readonly kind: "fork";
      readonly fork: number;
      readonly replaced: readonly RecentBlock[];
      readonly deeper: boolean;
    };

/** The fork point from the remembered blocks and the chain's blocks at their heights now. */
export function findFork(
  recent: readonly RecentBlock[],
  canonical: ReadonlyMap<number, ChainBlock | null>,
): ForkFinding {
  const tip = recent.at(-1);
  if (tip === undefined) return { kind: "none" };
  if (canonical.get(tip.number) == null) return { kind: "unseen" };
  for (let index = recent.length - 1; index >= 0; index--) {
    const block = recent[index] as RecentBlock;
    if (sameBlock(canonical.get(block.number)?.hash, block.key)) {
      if (index === recent.length - 1) return { kind: "none" };
      return { kind: "fork", fork: block.number, replaced: recent.slice(index + 1), deeper: false };
    }
  }
  const oldest = recent[0] as RecentBlock;
  return { kind: "fork", fork: oldest.number - 1, replaced: recent, deeper: true };
}

/** Remembered blocks read first to find a reorg's fork point (all of them when it is deeper). */
const SHALLOW_REORG_BLOCKS = 8;

/**
 * The fork point, reading the chain at the remembered heights through the pipeline: the
 * newest few first (most reorgs are a block or two deep), all of them when those were all
 * replaced. Null when they could not be read.
 */
export async function readFork(
  reads: ChainReads,
  recent: readonly RecentBlock[],
): Promise<ForkFinding | null> {
  const read = async (remembered: readonly RecentBlock[]) => {
    const found = await reads.blocks(remembered.map((block) => block.number));
    return found === null ? null : findFork(remembered, found);
  };
  const newest = recent.slice(-SHALLOW_REORG_BLOCKS);
  const finding = await read(newest);
  if (finding?.kind === "fork" && finding.deeper && newest.length < recent.length) {
    return read(recent);
  }
  return finding;
}

/** Logs kept as texts, read back as the matching rule takes them (a text that is not a log is left out). */
export function keptLogs(texts: readonly string[]): BlockLog[] {
  const logs: BlockLog[] = [];
  for (const text of texts) {
    const fields = parseJsonOrUndefined(text);
    if (!isRecord(fields)) continue;
    const { blockNumber, logIndex, blockHash } = fields;
    if (typeof blockNumber !== "string" || typeof logIndex !== "string") continue;
    if (typeof blockHash !== "string") continue;
    const placed: PlacedLog = {
      block: Number.parseInt(blockNumber, 16),
      index: Number.parseInt(logIndex, 16),
      blockHash,
      text,
    };
    logs.push({ ...placed, fields });
  }
  return logs;
}
