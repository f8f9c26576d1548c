import { isRecord } from "../../jsonrpc/envelope.ts";
import {
  arrayElementSpans,
  memberValueSpan,
  parseJsonOrUndefined,
} from "../../jsonrpc/json-raw.ts";
import type { BlockRange } from "../logs/logs-range.ts";
import type { LogCriteria } from "./filter-criteria.ts";
import type { Header } from "./filter-progress.ts";

/**
 * What a filter reads from the answers to its own calls (docs/behaviour.md §14): the logs of
 * an eth_getLogs answer, each with the provider's text, and block headers from a batch of
 * eth_getBlockByNumber. Anything else (an error, a `null`, a log without its place) is no
 * answer, and the poll reports nothing rather than guess.
 */

/** One log as a provider wrote it, with its place in the chain. */
export interface PlacedLog {
  readonly block: number;
  readonly index: number;
  readonly blockHash: string;
  readonly text: string;
}

const QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;

/**
 * The logs of an eth_getLogs answer that match `criteria`, inside `range` (when given), in
 * chain order, each (block, log index) once; null when the answer is not a list of logs. A log
 * a provider sent from outside the range, or that the criteria do not match, is not the
 * filter's: it is left out, not reported.
 */
export function logsOfAnswer(
  text: string,
  range: BlockRange | null,
  criteria: LogCriteria,
): PlacedLog[] | null {
  const span = memberValueSpan(text, "result");
  if (span === null) return null;
  const result = text.slice(span.start, span.end);
  if (!result.startsWith("[")) return null;
  const logs: PlacedLog[] = [];
  for (const element of arrayElementSpans(result)) {
    const logText = result.slice(element.start, element.end);
    const log = parseJsonOrUndefined(logText);
    if (!isRecord(log)) return null;
    const { blockNumber, logIndex, blockHash } = log;
    if (typeof blockNumber !== "string" || !QUANTITY.test(blockNumber)) return null;
    if (typeof logIndex !== "string" || !QUANTITY.test(logIndex)) return null;
    if (typeof blockHash !== "string" || !HASH.test(blockHash)) return null;
    const block = Number.parseInt(blockNumber, 16);
    if (range !== null && (block < range.from || block > range.to)) continue;
    if (!matches(log, criteria)) continue;
    logs.push({ block, index: Number.parseInt(logIndex, 16), blockHash, text: logText });
  }
  logs.sort((a, b) => a.block - b.block || a.index - b.index);
  return logs.filter(
    (log, at) => at === 0 || log.block !== logs[at - 1]?.block || log.index !== logs[at - 1]?.index,
  );
}

/** Whether a log is one the criteria select: its address among theirs, each topic position met. */
export function matches(log: Readonly<Record<string, unknown>>, criteria: LogCriteria): boolean {
  const same = (a: unknown, b: string) =>
    typeof a === "string" && a.toLowerCase() === b.toLowerCase();
  const { address, topics } = criteria;
  if (address !== null) {
    const wanted = typeof address === "string" ? [address] : address;
    if (wanted.length > 0 && !wanted.some((one) => same(log.address, one))) return false;
  }
  if (topics === null) return true;
  const logged = Array.isArray(log.topics) ? log.topics : [];
  // geth's rule: more topic positions than the log has topics is no match, nulls included.
  if (topics.length > logged.length) return false;
  return topics.every((position, index) => {
    if (position === null) return true;
    const options = typeof position === "string" ? [position] : position;
    // A null among the options, or none at all, is any topic (geth).
    if (options.length === 0 || options.includes(null)) return true;
    return options.some((one) => one !== null && same(logged[index], one));
  });
}

/** The log's text as a node reports a log of a replaced block: `removed: true`. */
export function removedLogText(log: PlacedLog): string {
  const parsed = parseJsonOrUndefined(log.text);
  return JSON.stringify({ ...(isRecord(parsed) ? parsed : {}), removed: true });
}

/**
 * The headers in a batch answer to eth_getBlockByNumber calls whose ids are the block
 * numbers asked for: each number's header, or null when its member is missing, an error, a
 * `null` (no such block) or another block than the one asked for.
 */
export function headersOfBatch(
  body: string,
  numbers: readonly number[],
): Map<number, Header | null> {
  const found = new Map<number, Header | null>(numbers.map((number) => [number, null]));
  const parsed = parseJsonOrUndefined(body);
  for (const member of Array.isArray(parsed) ? parsed : [parsed]) {
    if (!isRecord(member) || typeof member.id !== "number" || !found.has(member.id)) continue;
    const header = headerOf(member.result);
    if (header !== null && header.number === member.id) found.set(member.id, header);
  }
  return found;
}

/** A block's number, hash and parent, when its answer shows them well-formed; else null. */
export function headerOf(block: unknown): Header | null {
  if (!isRecord(block)) return null;
  const { number, hash, parentHash } = block;
  if (typeof number !== "string" || !QUANTITY.test(number)) return null;
  if (typeof hash !== "string" || !HASH.test(hash)) return null;
  if (typeof parentHash !== "string" || !HASH.test(parentHash)) return null;
  return {
    number: Number.parseInt(number, 16),
    hash: hash.toLowerCase(),
    parentHash: parentHash.toLowerCase(),
  };
}

/** The members of a batch answer by id (the calls' ids are their positions). */
export function batchMembers(body: string): Map<number, string> {
  const members = new Map<number, string>();
  for (const element of arrayElementSpans(body)) {
    const text = body.slice(element.start, element.end);
    const id = parseJsonOrUndefined(idText(text));
    if (typeof id === "number") members.set(id, text);
  }
  return members;
}

function idText(member: string): string {
  const span = memberValueSpan(member, "id");
  return span === null ? "null" : member.slice(span.start, span.end);
}
