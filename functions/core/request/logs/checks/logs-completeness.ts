import { isRecord } from "../../../jsonrpc/envelope.ts";
import type { BloomTest } from "./logs-bloom.ts";
import type { BlockHeader } from "./logs-headers.ts";

/**
 * The completeness rule for one log answer (docs/behaviour.md §12.12), pure: a list of logs
 * for blocks `from`..`to`, judged against the headers held for some of those blocks. A log
 * whose `blockHash` is not the hash of the header held at its height comes from another fork
 * or a stale backend; a block with no log in the answer whose `logsBloom` says the filter may
 * be in it is a bloom hit: the provider is missing data unless the block's receipts show the
 * bloom lied (the tie-break is the caller's: it needs upstream calls).
 */

/** What the rule needs of one returned log. */
export interface AnswerLog {
  readonly block: number;
  /** Lower case; null when the log named none. */
  readonly hash: string | null;
}

const QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;

/** The logs of a result list, or null when one of them is not a log the rule can read. */
export function answerLogs(result: readonly unknown[]): AnswerLog[] | null {
  const logs: AnswerLog[] = [];
  for (const log of result) {
    if (!isRecord(log) || typeof log.blockNumber !== "string" || !QUANTITY.test(log.blockNumber)) {
      return null;
    }
    const hash =
      typeof log.blockHash === "string" && HASH.test(log.blockHash)
        ? log.blockHash.toLowerCase()
        : null;
    logs.push({ block: Number.parseInt(log.blockNumber, 16), hash });
  }
  return logs;
}

export type Completeness =
  /** Nothing held contradicts the answer; `checked`: blocks whose bloom was read. */
  | { readonly kind: "complete"; readonly checked: number }
  /** A log names another block than the one held at its height. */
  | {
      readonly kind: "stale_log";
      readonly block: number;
      readonly hash: string | null;
      readonly expected: string;
    }
  /** Blocks without a log in the answer whose bloom holds the filter, newest first. */
  | {
      readonly kind: "bloom_hits";
      readonly blocks: readonly BlockHeader[];
      readonly checked: number;
    };

export interface CompletenessInput {
  readonly from: number;
  readonly to: number;
  readonly logs: readonly AnswerLog[];
  /** The header the answer is judged against at each height held (of the range or not). */
  readonly headers: ReadonlyMap<number, BlockHeader>;
  /** The filter against a bloom; null where the chain's blooms mean nothing (hashes only). */
  readonly bloom: BloomTest | null;
}

export function completenessOf(input: CompletenessInput): Completeness {
  const withLogs = new Set<number>();
  for (const log of input.logs) {
    withLogs.add(log.block);
    const header = input.headers.get(log.block);
    if (header !== undefined && log.hash !== header.hash) {
      return { kind: "stale_log", block: log.block, hash: log.hash, expected: header.hash };
    }
  }
  if (input.bloom === null) return { kind: "complete", checked: 0 };
  const hits: BlockHeader[] = [];
  let checked = 0;
  const heights = [...input.headers.keys()].sort((a, b) => b - a);
  for (const height of heights) {
    if (height < input.from || height > input.to || withLogs.has(height)) continue;
    const header = input.headers.get(height) as BlockHeader;
    const hit = input.bloom(header.logsBloom);
    if (hit === null) continue;
    checked++;
    if (hit) hits.push(header);
  }
  return hits.length === 0
    ? { kind: "complete", checked }
    : { kind: "bloom_hits", blocks: hits, checked };
}
