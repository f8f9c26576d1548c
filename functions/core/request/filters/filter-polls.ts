import { FILTER_SEEN_BLOCKS } from "../../policies.ts";
import { type BlockRange, quantity } from "../logs/logs-range.ts";
import { type PlacedLog, removedLogText } from "./filter-answers.ts";
import { type ChainPositions, type LogCriteria, lastBlockNow } from "./filter-criteria.ts";
import {
  type FilterAdvance,
  type FilterRecord,
  type ForkPoint,
  forkPoint,
  type Header,
  keepSeen,
  oneChain,
  pollRange,
  type SeenBlock,
  sameHash,
} from "./filter-progress.ts";
import { type RangeLogs, readRangeLogs } from "./filter-range.ts";
import type { FilterReads } from "./filter-reads.ts";

/**
 * One poll of a filter the gateway holds (docs/behaviour.md §14): the changes since its cursor
 * up to where the chain stands, each block's once; and, when a block it reported was replaced
 * (a reorg), the replaced logs marked `removed: true` (when a provider still has them) and
 * the new branch's from the fork point. A poll whose reads disagree (headers of two branches,
 * logs of another block than the header's) reports nothing and moves nothing: the next poll
 * reads again.
 */

export interface PollContext {
  readonly reads: FilterReads;
  readonly at: ChainPositions;
  /** The widest piece of a log filter's range one poll reads. */
  readonly pieceBlocks: number;
  /** The most blocks a block filter's poll reports. */
  readonly blocksPerPoll: number;
  /** The most bytes of logs the answer may carry. */
  readonly maxBytes: number;
}

export type PollOutcome =
  | {
      readonly kind: "changes";
      /** The changes, as JSON texts: logs, or block hashes as strings. */
      readonly items: readonly string[];
      /** What the filter moves to; null when nothing moved. */
      readonly advance: Omit<FilterAdvance, "expiresAt"> | null;
      /** The reorg this poll reported, for the operator's log line. */
      readonly reorg?: { readonly fork: ForkPoint; readonly unavailable: number };
    }
  | { readonly kind: "error"; readonly message: string; readonly code: number | null };

const NOTHING: PollOutcome = { kind: "changes", items: [], advance: null };

const unreadable = (what: string): PollOutcome => ({
  kind: "error",
  code: null,
  message: `${what} could not be read: nothing was reported and the filter did not move; poll again`,
});

export function pollFilter(record: FilterRecord, context: PollContext): Promise<PollOutcome> {
  return record.logs === null
    ? pollBlocks(record, context)
    : pollLogs(record, record.logs.criteria, context);
}

/** Blocks of the filter that may still be replaced, and must be read to tell. */
function replaceable(record: FilterRecord, at: ChainPositions): SeenBlock | null {
  const tip = record.seen.at(-1) ?? null;
  return tip !== null && (at.finalized === null || tip.number > at.finalized) ? tip : null;
}

async function pollLogs(
  record: FilterRecord,
  criteria: LogCriteria,
  context: PollContext,
): Promise<PollOutcome> {
  const { reads, at } = context;
  const last = lastBlockNow(record.logs?.to ?? { kind: "tag", tag: "latest" }, at);
  const tip = replaceable(record, at);
  const range = pollRange(
    record.cursor,
    last,
    Math.min(record.span ?? Infinity, context.pieceBlocks),
  );
  const read =
    range === null
      ? null
      : await readRangeLogs(reads, criteria, range, {
          pieceBlocks: context.pieceBlocks,
          maxBytes: context.maxBytes,
          whole: false,
        });
  if (read !== null && read.kind !== "logs") return readFailure(read);
  const verify = blocksToVerify(read, at.finalized);
  const headers = await reads.headers([...(tip === null ? [] : [tip.number]), ...verify]);
  if (headers === null) return unreadable("the headers of the filter's blocks");
  if (tip !== null && !sameHash(headers.get(tip.number)?.hash, tip.hash)) {
    // Not shown at all: providers behind, or the chain shorter for a moment. Not a reorg yet.
    if (headers.get(tip.number) === null) return NOTHING;
    return pollLogsAfterReorg(record, criteria, context, last);
  }
  if (read === null) return NOTHING;
  const seen = verifiedBlocks(read, verify, headers);
  if (seen === null) return NOTHING;
  return {
    kind: "changes",
    items: read.logs.map((log) => log.text),
    advance: {
      cursor: read.range.to + 1,
      seen: keepSeen(withLogs(record.seen), seen, at.finalized, FILTER_SEEN_BLOCKS),
      span: read.lowered ?? record.span,
    },
  };
}

/**
 * A reorg replaced the newest block the filter reported: back to the fork point, the
 * replaced blocks' logs reported again as removed (read by their old hashes, when a provider
 * still has exactly as many as were reported), then the new branch's logs from there.
 */
async function pollLogsAfterReorg(
  record: FilterRecord,
  criteria: LogCriteria,
  context: PollContext,
  last: number | null,
): Promise<PollOutcome> {
  const { reads, at } = context;
  const fork = await findForkPoint(record, reads);
  if (fork === null) return NOTHING;
  if (fork === "unreadable") return unreadable("the headers of the filter's recent blocks");
  const withLogs = fork.replaced.filter((block) => block.logs > 0);
  const old = await reads.logsByHash(
    criteria,
    withLogs.map((block) => block.hash),
  );
  const removed: string[] = [];
  let unavailable = 0;
  for (const block of withLogs) {
    const logs = old.get(block.hash) ?? null;
    if (logs === null || logs.length !== block.logs) unavailable += block.logs;
    else removed.push(...logs.map(removedLogText));
  }
  const kept = record.seen.filter((block) => block.number < fork.resumeAt);
  const range = pollRange(
    fork.resumeAt,
    last,
    Math.min(record.span ?? Infinity, context.pieceBlocks),
  );
  const read =
    range === null
      ? null
      : await readRangeLogs(reads, criteria, range, {
          pieceBlocks: context.pieceBlocks,
          maxBytes: context.maxBytes,
          whole: false,
        });
  if (read !== null && read.kind !== "logs") return readFailure(read);
  const verify = blocksToVerify(read, at.finalized);
  const headers = await reads.headers(verify);
  if (headers === null) return unreadable("the headers of the new branch");
  const seen = read === null ? [] : verifiedBlocks(read, verify, headers);
  if (seen === null) return NOTHING;
  return {
    kind: "changes",
    items: [...removed, ...(read?.logs ?? []).map((log) => log.text)],
    advance: {
      cursor: read === null ? fork.resumeAt : read.range.to + 1,
      seen: keepSeen(kept, seen, at.finalized, FILTER_SEEN_BLOCKS),
      span: read?.lowered ?? record.span,
    },
    reorg: { fork, unavailable },
  };
}

/**
 * What a log filter keeps of the blocks it remembered once a poll read further: the blocks
 * with logs, not the ends of earlier polls. The fork point found without them may be lower,
 * but the blocks between hold none of the filter's logs, so nothing is reported twice; the
 * item stays small for a filter whose logs are rare.
 */
function withLogs(seen: readonly SeenBlock[]): SeenBlock[] {
  return seen.filter((block) => block.logs > 0);
}

/**
 * The blocks whose headers a poll reads to check its logs: the last block read, and each
 * block with logs (the newest first, as many as are remembered), all above the finalized one.
 */
function blocksToVerify(read: RangeLogs | null, finalized: number | null): number[] {
  if (read === null) return [];
  const replaceableBlock = (number: number) => finalized === null || number > finalized;
  const withLogs = [...new Set(read.logs.map((log) => log.block))].filter(replaceableBlock);
  const last = replaceableBlock(read.range.to) ? [read.range.to] : [];
  return [...new Set([...last, ...withLogs.reverse()])].slice(0, FILTER_SEEN_BLOCKS + 1);
}

/**
 * The blocks to remember from a poll's logs, once every header read shows the block and
 * names the hash its logs name; null when one does not (a reorg between the reads, or logs
 * from a provider on another branch).
 */
function verifiedBlocks(
  read: RangeLogs,
  verify: readonly number[],
  headers: ReadonlyMap<number, Header | null>,
): SeenBlock[] | null {
  const byBlock = new Map<number, PlacedLog[]>();
  for (const log of read.logs) byBlock.set(log.block, [...(byBlock.get(log.block) ?? []), log]);
  const seen: SeenBlock[] = [];
  for (const number of [...verify].sort((a, b) => a - b)) {
    const header = headers.get(number) ?? null;
    if (header === null) return null;
    const logs = byBlock.get(number) ?? [];
    if (!logs.every((log) => sameHash(log.blockHash, header.hash))) return null;
    seen.push({ number, hash: header.hash, logs: logs.length });
  }
  return seen;
}

async function pollBlocks(record: FilterRecord, context: PollContext): Promise<PollOutcome> {
  const { reads, at } = context;
  const tip = replaceable(record, at);
  const range = pollRange(record.cursor, at.head, context.blocksPerPoll);
  // The newest block reported is checked by its own header when nothing is new, else by the
  // parent the next block names.
  const numbers = range === null ? (tip === null ? [] : [tip.number]) : blockNumbers(range);
  const headers = await reads.headers(numbers);
  if (headers === null) return unreadable("the filter's block headers");
  let from = record.cursor;
  let chain = numbers.map((number) => headers.get(number) ?? null);
  const tipNow = range === null ? headers.get(tip?.number ?? -1)?.hash : chain[0]?.parentHash;
  let fork: ForkPoint | undefined;
  if (tip !== null && tipNow !== undefined && !sameHash(tipNow, tip.hash)) {
    const found = await findForkPoint(record, reads);
    if (found === null) return NOTHING;
    if (found === "unreadable") return unreadable("the headers of the filter's recent blocks");
    fork = found;
    from = found.resumeAt;
    const again = pollRange(from, at.head, context.blocksPerPoll);
    const renumbered = again === null ? [] : blockNumbers(again);
    const reread = await reads.headers(renumbered);
    if (reread === null) return unreadable("the new branch's block headers");
    chain = renumbered.map((number) => reread.get(number) ?? null);
  } else if (range === null) {
    return NOTHING;
  }
  if (chain.some((header) => header === null)) return NOTHING;
  const headersRead = chain as Header[];
  if (!oneChain(headersRead, hashAt(record, from - 1))) return NOTHING;
  const kept = record.seen.filter((block) => block.number < from);
  return {
    kind: "changes",
    items: headersRead.map((header) => JSON.stringify(header.hash)),
    advance: {
      cursor: from + headersRead.length,
      seen: keepSeen(
        kept,
        headersRead.map((header) => ({ number: header.number, hash: header.hash, logs: 0 })),
        at.finalized,
        FILTER_SEEN_BLOCKS,
      ),
      span: null,
    },
    ...(fork === undefined ? {} : { reorg: { fork, unavailable: 0 } }),
  };
}

/** Where the chain forks from what the filter reported, reading every remembered block's header. */
async function findForkPoint(
  record: FilterRecord,
  reads: FilterReads,
): Promise<ForkPoint | null | "unreadable"> {
  const headers = await reads.headers(record.seen.map((block) => block.number));
  if (headers === null) return "unreadable";
  return forkPoint(record.seen, (number) => headers.get(number)?.hash ?? null);
}

/** The hash the filter remembers for a block, or null when it remembers none. */
function hashAt(record: FilterRecord, number: number): string | null {
  return record.seen.find((block) => block.number === number)?.hash ?? null;
}

function blockNumbers(range: BlockRange): number[] {
  return Array.from({ length: range.to - range.from + 1 }, (_, index) => range.from + index);
}

function readFailure(
  read: Exclude<Awaited<ReturnType<typeof readRangeLogs>>, { kind: "logs" }>,
): PollOutcome {
  if (read.kind === "too_large") {
    return {
      kind: "error",
      code: -32005,
      message:
        "the logs of the filter's next block are more than this gateway can return in one answer: nothing was reported; narrow the filter's addresses or topics",
    };
  }
  return {
    kind: "error",
    code: read.code,
    message: `blocks ${quantity(read.piece.from)}-${quantity(read.piece.to)} of the filter were not served (${read.detail}): nothing was reported and the filter did not move; poll again`,
  };
}
