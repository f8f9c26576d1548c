import { isRecord } from "../../jsonrpc/envelope.ts";
import { ErrorCode } from "../../jsonrpc/jsonrpc.ts";
import type { BlockRange } from "../logs/logs-range.ts";

/**
 * What an `eth_newFilter` asks for (docs/behaviour.md §14): the logs' addresses and topics,
 * and where its blocks begin and end. An end written `latest`, `safe` or `finalized` moves
 * with the chain, as the tag does in every other call: it is read at each poll, never fixed
 * at install. Params are checked as nodes check them, with node-shaped errors, so a filter
 * that could never be served is refused at install rather than failing at every poll.
 */

/** A tag a filter's end follows as the chain moves. */
export type MovingTag = "latest" | "safe" | "finalized";

export type FilterEnd =
  | { readonly kind: "number"; readonly number: number }
  | { readonly kind: "tag"; readonly tag: MovingTag };

/** One topic position: any (null), one topic, or any of several (null among them: any). */
export type TopicPosition = string | null | readonly (string | null)[];

/** The logs a filter matches, as eth_getLogs takes them. */
export interface LogCriteria {
  readonly address: string | readonly string[] | null;
  readonly topics: readonly TopicPosition[] | null;
}

export interface LogFilterSpec {
  readonly criteria: LogCriteria;
  readonly from: FilterEnd;
  readonly to: FilterEnd;
}

/** A refusal, as the node's JSON-RPC error. */
export interface FilterError {
  readonly code: number;
  readonly message: string;
}

/** The code geth gives its own errors ("filter not found", "invalid from and to block …"). */
export const NODE_ERROR = -32000;

/** Topic positions nodes take (geth: "exceed max topics"). */
const MAX_TOPICS = 4;
/**
 * The largest criteria a filter keeps, as JSON: a stored filter must fit a DynamoDB item
 * (400 KB) beside its cursor; 64 KiB holds about 1,400 addresses.
 */
export const MAX_CRITERIA_BYTES = 65_536;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const TOPIC = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x[0-9a-fA-F]{1,16}$/;
const LATEST: FilterEnd = { kind: "tag", tag: "latest" };

export type Read<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: FilterError };

const invalid = (message: string): Read<never> => ({
  ok: false,
  error: { code: ErrorCode.invalidParams, message: `invalid argument 0: ${message}` },
});

/** The filter an `eth_newFilter` call's params describe, or the error a node would give. */
export function readLogFilter(params: unknown): Read<LogFilterSpec> {
  const given: unknown = Array.isArray(params) ? params[0] : undefined;
  if (!isRecord(given)) return invalid("eth_newFilter takes a filter object");
  if (given.blockHash !== undefined && given.blockHash !== null) {
    return invalid(
      "a filter installed with eth_newFilter names blocks by fromBlock and toBlock, not blockHash: use eth_getLogs for one block",
    );
  }
  const from = filterEnd(given.fromBlock, "fromBlock");
  if (!from.ok) return from;
  const to = filterEnd(given.toBlock, "toBlock");
  if (!to.ok) return to;
  const address = addressOf(given.address);
  if (!address.ok) return address;
  const topics = topicsOf(given.topics);
  if (!topics.ok) return topics;
  if (!endsAgree(from.value, to.value)) {
    return {
      ok: false,
      error: { code: NODE_ERROR, message: "invalid from and to block combination" },
    };
  }
  const criteria: LogCriteria = { address: address.value, topics: topics.value };
  if (JSON.stringify(criteria).length > MAX_CRITERIA_BYTES) {
    return invalid(
      `the filter's addresses and topics are over ${MAX_CRITERIA_BYTES} bytes: install several filters`,
    );
  }
  return { ok: true, value: { criteria, from: from.value, to: to.value } };
}

/**
 * geth's rule: a number to a number not before it, a number to a tag, or `latest` to
 * `latest`; so `latest` to a number is refused. A `safe` or `finalized` start is a number once
 * installed (it is checked against a numbered end then); to a tag it moves like `latest`.
 */
function endsAgree(from: FilterEnd, to: FilterEnd): boolean {
  if (to.kind === "tag") return true;
  return from.kind === "number" ? to.number >= from.number : from.tag !== "latest";
}

function filterEnd(value: unknown, name: string): Read<FilterEnd> {
  if (value === undefined || value === null || value === "latest")
    return { ok: true, value: LATEST };
  if (value === "earliest") return { ok: true, value: { kind: "number", number: 0 } };
  if (value === "safe" || value === "finalized")
    return { ok: true, value: { kind: "tag", tag: value } };
  if (value === "pending") {
    return { ok: false, error: { code: NODE_ERROR, message: "pending logs are not supported" } };
  }
  if (typeof value === "string" && QUANTITY.test(value)) {
    const number = Number.parseInt(value.slice(2), 16);
    if (Number.isSafeInteger(number)) return { ok: true, value: { kind: "number", number } };
  }
  return invalid(
    `${name} must be a block number in hex (0x…, under 2^53) or latest, safe, finalized or earliest`,
  );
}

function addressOf(value: unknown): Read<LogCriteria["address"]> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value === "string" && ADDRESS.test(value)) return { ok: true, value };
  if (
    Array.isArray(value) &&
    value.every((item) => typeof item === "string" && ADDRESS.test(item))
  ) {
    return { ok: true, value: value as string[] };
  }
  return invalid("address must be an address (0x and 40 hex digits) or a list of them");
}

function topicsOf(value: unknown): Read<LogCriteria["topics"]> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (!Array.isArray(value)) return invalid("topics must be a list");
  if (value.length > MAX_TOPICS) {
    return { ok: false, error: { code: NODE_ERROR, message: "exceed max topics" } };
  }
  const topics: TopicPosition[] = [];
  for (const position of value) {
    if (position === null || (typeof position === "string" && TOPIC.test(position))) {
      topics.push(position);
    } else if (
      Array.isArray(position) &&
      position.every((topic) => topic === null || (typeof topic === "string" && TOPIC.test(topic)))
    ) {
      topics.push(position as (string | null)[]);
    } else {
      return invalid("each topic must be null, a topic (0x and 64 hex digits) or a list of them");
    }
  }
  return { ok: true, value: topics };
}

/** Where the chain stands for a filter: the served head, and the safe and finalized blocks. */
export interface ChainPositions {
  readonly head: number;
  readonly safe: number | null;
  readonly finalized: number | null;
}

/** The number a tag names now (at most the head), or null when the chain position has none. */
function tagNumber(tag: MovingTag, at: ChainPositions): number | null {
  const number = tag === "latest" ? at.head : tag === "safe" ? at.safe : at.finalized;
  return number === null ? null : Math.min(number, at.head);
}

/**
 * The first block a new filter reports: a number as written; `latest`, the block after the
 * head at install (the logs of blocks to come, as geth reports them); `safe` or `finalized`,
 * the block the tag names at install. Null when the chain position names no such block yet.
 */
export function firstBlock(from: FilterEnd, at: ChainPositions): number | null {
  if (from.kind === "number") return from.number;
  if (from.tag === "latest") return at.head + 1;
  return tagNumber(from.tag, at);
}

/**
 * The last block a filter may report now: its `toBlock` if a number (never past the head),
 * else the block its tag names now. Null when that tag names no block yet.
 */
export function lastBlockNow(to: FilterEnd, at: ChainPositions): number | null {
  if (to.kind === "number") return Math.min(to.number, at.head);
  return tagNumber(to.tag, at);
}

/** eth_getLogs params for the criteria over `range`. */
export function rangeQueryParams(criteria: LogCriteria, range: BlockRange): unknown[] {
  return [{ ...criteriaMembers(criteria), fromBlock: hex(range.from), toBlock: hex(range.to) }];
}

/** eth_getLogs params for the criteria in the block with `hash`. */
export function blockQueryParams(criteria: LogCriteria, hash: string): unknown[] {
  return [{ ...criteriaMembers(criteria), blockHash: hash }];
}

function criteriaMembers(criteria: LogCriteria): Record<string, unknown> {
  return {
    ...(criteria.address === null ? {} : { address: criteria.address }),
    ...(criteria.topics === null ? {} : { topics: criteria.topics }),
  };
}

export function hex(number: number): string {
  return `0x${number.toString(16)}`;
}
