import {
  LOGS_RANGE_TOO_WIDE,
  LOGS_TOO_LARGE,
  LOGS_TOO_MANY,
} from "../../classify/classify-patterns.ts";
import { isRecord } from "../../jsonrpc/envelope.ts";
import type { BlockRange } from "./logs-range.ts";

/**
 * Whether an answer to eth_getLogs is a provider refusing the query as too big, and what it
 * says about the size it takes (docs/behaviour.md §12). Providers word it their own way:
 *
 * - `range`: the block span is over the provider's cap, whatever the logs ("exceed maximum
 *   block range: 5000", "eth_getLogs is limited to a 10,000 range", "block range is too wide").
 *   A number in the text is the cap; it is the provider's for every query, so it is learned;
 * - `results`: too many logs in the span ("query returned more than 10000 results", "query
 *   exceeds max results 20000"): a smaller span of the same blocks may pass; nothing is learned;
 * - `size`: the answer is too big in bytes ("Log response size exceeded", "Response is too
 *   big", the gateway's own `max_response_bytes` refusal): likewise.
 *
 * A hint ("Try with this block range [0x1, 0x2]", "retry with the range 1-2", Infura's
 * `data: {from, to}`) names a span starting where the query did that should pass.
 */

export type RefusalKind = "range" | "results" | "size";

export interface LogsRefusal {
  readonly kind: RefusalKind;
  /** The most blocks the provider takes, when the text says (range refusals only). */
  readonly limit: number | null;
  /** A smaller range the provider suggests, as it wrote it. */
  readonly hint: BlockRange | null;
  /** The error, code and message, for the gateway's own error if the query cannot be served. */
  readonly detail: string;
}

/** Where a range refusal states the cap, the number is group 1 (commas and a `K` allowed). */
const STATED_CAP: readonly RegExp[] = [
  /\bmax(?:imum)? block range:?\s*(\d[\d,]*k?)\b/i,
  /\bmaximum is set to (\d[\d,]*k?)\b/i,
  /\blimited to an? (\d[\d,]*k?) (?:blocks? )?range\b/i,
  /\bup to an? (\d[\d,]*k?) block range\b/i,
  /\branges? over (\d[\d,]*k?) blocks\b/i,
  /\bblock range (?:greater|larger|bigger) than (\d[\d,]*k?)\b/i,
  /\btoo (?:large|wide|big),? max(?:imum)? is (\d[\d,]*k?)\b/i,
  /\bmax(?:imum)? range:?\s*(\d[\d,]*k?)\b/i,
  /\b(?:less|fewer) than (\d[\d,]*k?) blocks\b/i,
];

const BRACKET_HINT = /\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]/i;
const RETRY_HINT = /\bretry with the range (0x[0-9a-f]+|\d+)\s*-\s*(0x[0-9a-f]+|\d+)\b/i;

/** The refusal an answer text carries, or null for any other answer (logs, other errors). */
export function logsRefusalOf(text: string): LogsRefusal | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (!isRecord(error)) return null;
  const message = typeof error.message === "string" ? error.message : "";
  const data = typeof error.data === "string" ? error.data : "";
  const words = `${message} ${data}`;
  const kind: RefusalKind | null = LOGS_TOO_LARGE.test(words)
    ? "size"
    : LOGS_TOO_MANY.test(words)
      ? "results"
      : LOGS_RANGE_TOO_WIDE.test(words)
        ? "range"
        : null;
  if (kind === null) return null;
  const code = typeof error.code === "number" ? error.code : "no code";
  return {
    kind,
    limit: kind === "range" ? statedCap(words) : null,
    hint: hintOf(words, error.data),
    detail: `${code}: ${message.replace(/\s+/g, " ").trim().slice(0, 200)}`,
  };
}

function statedCap(words: string): number | null {
  for (const pattern of STATED_CAP) {
    const written = pattern.exec(words)?.[1];
    if (written === undefined) continue;
    const thousands = /k$/i.test(written);
    const number = Number(written.replace(/[,k]/gi, "")) * (thousands ? 1000 : 1);
    if (Number.isSafeInteger(number) && number > 0) return number;
  }
  return null;
}

function hintOf(words: string, data: unknown): BlockRange | null {
  const written = BRACKET_HINT.exec(words) ?? RETRY_HINT.exec(words);
  if (written?.[1] !== undefined && written[2] !== undefined) {
    return rangeOrNull(blockNumber(written[1]), blockNumber(written[2]));
  }
  // Infura puts the suggestion in `data` as well: {"from": "0x…", "to": "0x…"}.
  if (isRecord(data) && typeof data.from === "string" && typeof data.to === "string") {
    return rangeOrNull(blockNumber(data.from), blockNumber(data.to));
  }
  return null;
}

function blockNumber(written: string): number | null {
  const number = /^0x/i.test(written) ? Number.parseInt(written.slice(2), 16) : Number(written);
  return Number.isSafeInteger(number) && number >= 0 ? number : null;
}

function rangeOrNull(from: number | null, to: number | null): BlockRange | null {
  return from !== null && to !== null && from <= to ? { from, to } : null;
}
