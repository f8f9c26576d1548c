import { isRecord } from "../../jsonrpc/envelope.ts";
import { blockRefOf } from "../../methods/block-ref.ts";

/**
 * The block range of an eth_getLogs call and the pieces it is cut into (docs/behaviour.md
 * §12). Pure arithmetic on block numbers, both ends included.
 */

export const GET_LOGS = "eth_getLogs";

/** Blocks `from` to `to`, both included. */
export interface BlockRange {
  readonly from: number;
  readonly to: number;
}

/** A log query the gateway can cut: both ends numbers (tags pinned), `from` not after `to`. */
export interface LogQuery extends BlockRange {
  /** The caller's filter object, as parsed: its other members go into every piece. */
  readonly filter: Readonly<Record<string, unknown>>;
  /** The caller's params, the filter first: any after it go into every piece too. */
  readonly params: readonly unknown[];
}

/** The blocks a range covers. */
export function spanOf(range: BlockRange): number {
  return range.to - range.from + 1;
}

/**
 * The range of an eth_getLogs call whose ends are numbers, or null: another method, a filter
 * by block hash, a tag left as written (`latest` unpinned, `pending`), or `from` after `to`
 * (nodes refuse it; the caller gets their answer).
 */
export function logQueryOf(method: string, params: unknown): LogQuery | null {
  if (method !== GET_LOGS || !Array.isArray(params)) return null;
  const ref = blockRefOf(method, params);
  if (ref?.kind !== "range") return null;
  const from = pointNumber(ref.from);
  const to = pointNumber(ref.to);
  const filter: unknown = params[0];
  if (from === null || to === null || from > to || !isRecord(filter)) return null;
  return { from, to, filter, params };
}

const HEX_DIGITS = /^0x[0-9a-f]+$/i;

/**
 * The `toBlock` of an eth_getLogs call written in hex but not readable as a block number (over
 * 16 digits, or past 2^53), or null. No chain is that high, but a node that clamps would
 * answer it with the logs up to its own head, and such a call is not a log query the gateway
 * can check.
 */
export function unreadableToBlock(method: string, params: unknown): string | null {
  if (method !== GET_LOGS || !Array.isArray(params) || !isRecord(params[0])) return null;
  const to = params[0].toBlock;
  if (typeof to !== "string" || !HEX_DIGITS.test(to)) return null;
  const readable = to.length <= 18 && Number.isSafeInteger(Number.parseInt(to.slice(2), 16));
  return readable ? null : to;
}

function pointNumber(
  point: { kind: "number"; number: number } | { kind: "tag"; tag: string },
): number | null {
  if (point.kind === "number") return point.number;
  return point.tag === "earliest" ? 0 : null;
}

/**
 * How many pieces `alignedPieces(range, size)` makes, counted without making them: a range of
 * 2^53 blocks must not become a list.
 */
export function piecesNeeded(range: BlockRange, size: number): number {
  const step = Math.max(1, Math.floor(size));
  return Math.floor(range.to / step) - Math.floor(range.from / step) + 1;
}

/**
 * The range cut at multiples of `size`: every piece but the first and last starts at a
 * multiple of `size` and spans exactly `size` blocks, so the same blocks always make the same
 * pieces (a finalized piece is then a repeatable, cacheable call).
 */
export function alignedPieces(range: BlockRange, size: number): BlockRange[] {
  const step = Math.max(1, Math.floor(size));
  const pieces: BlockRange[] = [];
  let from = range.from;
  while (from <= range.to) {
    const to = Math.min(range.to, (Math.floor(from / step) + 1) * step - 1);
    pieces.push({ from, to });
    from = to + 1;
  }
  return pieces;
}

/**
 * A refused piece in two at its middle (an aligned piece makes aligned halves); a lone block
 * cannot be cut (null).
 */
export function halves(range: BlockRange): [BlockRange, BlockRange] | null {
  const span = spanOf(range);
  if (span < 2) return null;
  const middle = range.from + Math.floor(span / 2);
  return [
    { from: range.from, to: middle - 1 },
    { from: middle, to: range.to },
  ];
}

/** `0x`-hex, as nodes write block numbers. */
export function quantity(block: number): string {
  return `0x${block.toString(16)}`;
}

/** "0x10-0x1f": a range as an error message names it. */
export function rangeText(range: BlockRange): string {
  return `${quantity(range.from)}-${quantity(range.to)}`;
}

/** The JSON-RPC text of one piece: the caller's params, the filter with the piece's ends. */
export function pieceCall(query: LogQuery, piece: BlockRange, id: number): string {
  const filter = { ...query.filter, fromBlock: quantity(piece.from), toBlock: quantity(piece.to) };
  const params = query.params.map((param, index) => (index === 0 ? filter : param));
  return JSON.stringify({ jsonrpc: "2.0", id, method: GET_LOGS, params });
}
