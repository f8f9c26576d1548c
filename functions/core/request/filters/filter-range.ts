import { serializedBytes } from "../../http/payload-limit.ts";
import { FILTER_POLL_REFUSALS } from "../../policies.ts";
import { type BlockRange, spanOf } from "../logs/logs-range.ts";
import type { LogsRefusal } from "../logs/logs-refusal.ts";
import type { PlacedLog } from "./filter-answers.ts";
import type { LogCriteria } from "./filter-criteria.ts";
import type { FilterReads } from "./filter-reads.ts";

/**
 * The logs of a filter's blocks (docs/behaviour.md §14), read in pieces no wider than a
 * provider in use takes: a poll reads one piece from its cursor (the rest waits for the next
 * poll), eth_getFilterLogs every piece of its range. A piece a provider refuses as too big is
 * read again smaller (the cap the provider stated, its hint, or half), a few times at most.
 */

export interface RangeLogs {
  /** The blocks read: from the range's start to the last block whose logs are in `logs`. */
  readonly range: BlockRange;
  readonly logs: readonly PlacedLog[];
  /** Bytes of the logs once JSON-escaped, as the caller's answer carries them. */
  readonly bytes: number;
  /** The piece size a refusal lowered the reads to, or null when none did. */
  readonly lowered: number | null;
}

export type RangeRead =
  | ({ readonly kind: "logs" } & RangeLogs)
  | {
      readonly kind: "failed";
      readonly piece: BlockRange;
      readonly detail: string;
      readonly code: number | null;
    }
  | { readonly kind: "too_large" };

export interface RangeOptions {
  /** The widest piece to read. */
  readonly pieceBlocks: number;
  /** The most bytes of logs the answer may carry. */
  readonly maxBytes: number;
  /** Every block of the range (eth_getFilterLogs), or the first piece only (a poll). */
  readonly whole: boolean;
}

export async function readRangeLogs(
  reads: FilterReads,
  criteria: LogCriteria,
  range: BlockRange,
  options: RangeOptions,
): Promise<RangeRead> {
  let size = Math.max(1, Math.floor(Math.min(options.pieceBlocks, spanOf(range))));
  let lowered: number | null = null;
  let refusals = 0;
  let from = range.from;
  const logs: PlacedLog[] = [];
  let bytes = 0;
  while (from <= range.to) {
    const piece = { from, to: Math.min(range.to, from + size - 1) };
    const read = await reads.logs(criteria, piece);
    if (read.kind === "failed")
      return { kind: "failed", piece, detail: read.detail, code: read.code };
    if (read.kind === "logs") {
      const pieceBytes = read.logs.reduce((sum, log) => sum + serializedBytes(log.text) + 1, 0);
      if (bytes + pieceBytes <= options.maxBytes) {
        logs.push(...read.logs);
        bytes += pieceBytes;
        from = piece.to + 1;
        if (!options.whole) break;
        continue;
      }
      if (options.whole) return { kind: "too_large" };
    }
    // Refused, or over the bytes the answer may carry: the same blocks, smaller.
    const smaller = read.kind === "refused" ? smallerPiece(piece, read.refusal) : halfOf(piece);
    if (smaller === null || ++refusals > FILTER_POLL_REFUSALS) {
      if (read.kind === "logs") return { kind: "too_large" };
      return { kind: "failed", piece, detail: read.refusal.detail, code: codeOf(read.refusal) };
    }
    size = smaller;
    lowered = size;
  }
  return { kind: "logs", range: { from: range.from, to: from - 1 }, logs, bytes, lowered };
}

/** The size to read a refused piece again at: the stated cap, the hint, or half; null at one block. */
function smallerPiece(piece: BlockRange, refusal: LogsRefusal): number | null {
  const span = spanOf(piece);
  if (span <= 1) return null;
  if (refusal.kind === "range" && refusal.limit !== null && refusal.limit < span)
    return refusal.limit;
  const hint = refusal.hint;
  if (hint !== null && hint.from === piece.from && hint.to < piece.to) return spanOf(hint);
  return halfOf(piece);
}

function halfOf(piece: BlockRange): number | null {
  const span = spanOf(piece);
  return span <= 1 ? null : Math.floor(span / 2);
}

/** A refusal's code, from its detail ("-32005: …"). */
function codeOf(refusal: LogsRefusal): number | null {
  const code = Number.parseInt(refusal.detail, 10);
  return Number.isInteger(code) ? code : null;
}
