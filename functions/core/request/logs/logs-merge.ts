import { isRecord } from "../../jsonrpc/envelope.ts";
import { arrayElementSpans, memberValueSpan } from "../../jsonrpc/json-raw.ts";
import type { BlockRange } from "./logs-range.ts";

/**
 * The logs of the pieces of one query, put back together (docs/behaviour.md §12): in block
 * order, then log index; only logs inside the piece that returned them (a log a provider sent
 * from outside its piece belongs to another piece); each (block, log index) once. Every log
 * keeps the provider's text byte for byte.
 */

/** One log as a provider wrote it, with where it sits in the chain. */
interface PlacedLog {
  readonly block: number;
  readonly index: number;
  readonly text: string;
}

/** The logs one piece returned, ready to merge. */
export interface PieceLogs {
  readonly range: BlockRange;
  readonly logs: readonly PlacedLog[];
  /** Bytes of the logs' text, and once JSON-escaped as Lambda carries the answer. */
  readonly bytes: number;
  readonly escapedBytes: number;
}

const QUANTITY = /^0x[0-9a-f]{1,16}$/i;

/**
 * The logs of an answer to one piece, or null when the answer is not a list of logs (an
 * error, a `null`, a log without a block number or log index).
 */
export function pieceLogsOf(text: string, range: BlockRange): PieceLogs | null {
  const resultSpan = memberValueSpan(text, "result");
  if (resultSpan === null) return null;
  const resultText = text.slice(resultSpan.start, resultSpan.end);
  if (!resultText.startsWith("[")) return null;
  const logs: PlacedLog[] = [];
  let bytes = 0;
  let escapedBytes = 0;
  for (const span of arrayElementSpans(resultText)) {
    const logText = resultText.slice(span.start, span.end);
    const place = placeOf(logText);
    if (place === null) return null;
    if (place.block < range.from || place.block > range.to) continue;
    logs.push({ ...place, text: logText });
    bytes += Buffer.byteLength(logText, "utf8") + 1;
    escapedBytes += escapedLength(logText) + 1;
  }
  return { range, logs, bytes, escapedBytes };
}

function placeOf(logText: string): { block: number; index: number } | null {
  let log: unknown;
  try {
    log = JSON.parse(logText);
  } catch {
    return null;
  }
  if (!isRecord(log)) return null;
  const { blockNumber, logIndex } = log;
  if (typeof blockNumber !== "string" || !QUANTITY.test(blockNumber)) return null;
  if (typeof logIndex !== "string" || !QUANTITY.test(logIndex)) return null;
  return { block: Number.parseInt(blockNumber, 16), index: Number.parseInt(logIndex, 16) };
}

/** UTF-8 bytes once JSON-escaped: every `"` and `\` takes one more, control characters five. */
function escapedLength(text: string): number {
  let extra = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22 || code === 0x5c) extra++;
    else if (code < 0x20) extra += 5;
  }
  return Buffer.byteLength(text, "utf8") + extra;
}

/** The merged answer (id `null`: the caller's is put in later), logs in chain order. */
export function mergedAnswer(pieces: readonly PieceLogs[]): string {
  const all = pieces
    .flatMap((piece) => piece.logs)
    .sort((a, b) => a.block - b.block || a.index - b.index);
  const texts: string[] = [];
  let previous: PlacedLog | null = null;
  for (const log of all) {
    if (previous !== null && previous.block === log.block && previous.index === log.index) continue;
    texts.push(log.text);
    previous = log;
  }
  return `{"jsonrpc":"2.0","id":null,"result":[${texts.join(",")}]}`;
}
