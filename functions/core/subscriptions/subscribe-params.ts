import { isRecord } from "../jsonrpc/envelope.ts";
import { ErrorCode } from "../jsonrpc/jsonrpc.ts";
import type { LogsFilter, SubscriptionKind, TopicFilter } from "./subscription-records.ts";

/**
 * What an `eth_subscribe` asks for (docs/behaviour.md "Subscriptions over WebSocket"), read as
 * geth reads it: `["newHeads"]` or `["logs", {address, topics}]`, plus our `resumeFrom` (the
 * last block the client saw). Unknown members are ignored, as geth ignores them; a block range
 * is refused rather than ignored, since a subscription only follows new blocks and a client
 * asking for history must not think it got it, and so is `resumeFrom` misspelt
 * (`resume_from`, `resumefrom`): ignored, it would start a fresh stream, a gap the client
 * never hears of.
 */

export interface SubscribeRequest {
  readonly kind: SubscriptionKind;
  /** What a `logs` subscription matches; null for `newHeads`. */
  readonly filter: LogsFilter | null;
  /** The last block the client saw, to resume after; null for a fresh stream. */
  readonly resumeFrom: number | null;
}

export interface ParamsError {
  readonly code: number;
  readonly message: string;
}

export type Read<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: ParamsError };

/** geth's code for an error of its own making ("subscription not found"). */
export const NODE_ERROR = -32000;

/** Topic positions nodes take (geth: "exceed max topics"). */
const MAX_TOPICS = 4;
/**
 * The largest filter a subscription keeps, as JSON: it is stored with the subscription and
 * matched against every log of every block; 32 KiB holds about 700 addresses.
 */
export const MAX_FILTER_BYTES = 32_768;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const TOPIC = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,12})$/;

const invalid = (argument: number, message: string): Read<never> => ({
  ok: false,
  error: { code: ErrorCode.invalidParams, message: `invalid argument ${argument}: ${message}` },
});

const SHAPES = 'use ["newHeads"] or ["logs", {"address": …, "topics": […]}]';

/** The subscription an `eth_subscribe` call's params describe, or the error to answer. */
export function readSubscribe(params: unknown): Read<SubscribeRequest> {
  if (!Array.isArray(params) || params.length === 0 || typeof params[0] !== "string") {
    return invalid(0, `eth_subscribe takes the kind of subscription first: ${SHAPES}`);
  }
  if (params.length > 2) return invalid(2, "too many arguments, want at most 2");
  const kind = params[0];
  const options: unknown = params[1];
  if (kind === "newHeads") {
    if (options === undefined || options === null) {
      return { ok: true, value: { kind, filter: null, resumeFrom: null } };
    }
    if (!isRecord(options)) return invalid(1, "newHeads takes no options but {resumeFrom}");
    const resumeFrom = resumeFromOf(options);
    if (!resumeFrom.ok) return resumeFrom;
    return { ok: true, value: { kind, filter: null, resumeFrom: resumeFrom.value } };
  }
  if (kind === "logs") {
    if (!isRecord(options)) {
      return invalid(1, 'logs takes a filter object, e.g. {"address": …, "topics": […]}');
    }
    const range = rangeRefusal(options);
    if (range !== null) return range;
    const filter = filterOf(options);
    if (!filter.ok) return filter;
    const resumeFrom = resumeFromOf(options);
    if (!resumeFrom.ok) return resumeFrom;
    return { ok: true, value: { kind, filter: filter.value, resumeFrom: resumeFrom.value } };
  }
  return {
    ok: false,
    error: {
      code: ErrorCode.methodNotFound,
      message: `"${kind.slice(0, 64)}" subscriptions are not served by this gateway: ${SHAPES}`,
    },
  };
}

/** The subscription id an `eth_unsubscribe` call names, or the error to answer. */
export function readUnsubscribe(params: unknown): Read<string> {
  if (!Array.isArray(params) || typeof params[0] !== "string") {
    return invalid(0, "eth_unsubscribe takes the subscription id eth_subscribe answered");
  }
  if (params.length > 1) return invalid(1, "too many arguments, want at most 1");
  return { ok: true, value: params[0] };
}

function resumeFromOf(options: Record<string, unknown>): Read<number | null> {
  const misspelt = Object.keys(options).find(
    (key) => key !== "resumeFrom" && key.toLowerCase().replace(/[\s_-]/g, "") === "resumefrom",
  );
  if (misspelt !== undefined) {
    return invalid(1, `unknown member "${misspelt.slice(0, 32)}": resuming takes resumeFrom`);
  }
  const value = options.resumeFrom;
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value === "string" && QUANTITY.test(value)) {
    return { ok: true, value: Number.parseInt(value.slice(2), 16) };
  }
  return invalid(1, "resumeFrom must be the last block number seen, in hex (0x…)");
}

/** A block range or hash, which a subscription cannot honour: it only follows new blocks. */
function rangeRefusal(options: Record<string, unknown>): Read<never> | null {
  const from = options.fromBlock;
  const to = options.toBlock;
  const ranged =
    (from !== undefined && from !== null && from !== "latest") ||
    (to !== undefined && to !== null && to !== "latest") ||
    (options.blockHash !== undefined && options.blockHash !== null);
  if (!ranged) return null;
  return invalid(
    1,
    "a logs subscription follows new blocks only: fromBlock, toBlock and blockHash are not taken; read past logs with eth_getLogs, or pass resumeFrom to resume after a block you saw",
  );
}

function filterOf(options: Record<string, unknown>): Read<LogsFilter> {
  const address = addressesOf(options.address);
  if (!address.ok) return address;
  const topics = topicsOf(options.topics);
  if (!topics.ok) return topics;
  const filter: LogsFilter = {
    ...(address.value === null ? {} : { address: address.value }),
    ...(topics.value === null ? {} : { topics: topics.value }),
  };
  const bytes = JSON.stringify(filter).length;
  if (bytes > MAX_FILTER_BYTES) {
    return invalid(
      1,
      `the filter's addresses and topics are ${bytes} bytes, over ${MAX_FILTER_BYTES}: subscribe several times with fewer`,
    );
  }
  return { ok: true, value: filter };
}

/** Addresses in lower case; null for any address (absent, null, or an empty list, as geth). */
function addressesOf(value: unknown): Read<readonly string[] | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  const list = typeof value === "string" ? [value] : value;
  if (
    !Array.isArray(list) ||
    !list.every((item) => typeof item === "string" && ADDRESS.test(item))
  ) {
    return invalid(1, "address must be an address (0x and 40 hex digits) or a list of them");
  }
  if (list.length === 0) return { ok: true, value: null };
  return { ok: true, value: [...new Set(list.map((item: string) => item.toLowerCase()))] };
}

/**
 * Topic positions in lower case; a position that matches any topic is null (null, an empty
 * list, or a list with null in it, as geth reads them). Null for no topics at all.
 */
function topicsOf(value: unknown): Read<readonly TopicFilter[] | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (!Array.isArray(value)) return invalid(1, "topics must be a list");
  if (value.length > MAX_TOPICS) {
    return { ok: false, error: { code: NODE_ERROR, message: "exceed max topics" } };
  }
  const topics: TopicFilter[] = [];
  for (const position of value) {
    if (position === null) {
      topics.push(null);
    } else if (typeof position === "string" && TOPIC.test(position)) {
      topics.push(position.toLowerCase());
    } else if (
      Array.isArray(position) &&
      position.every((topic) => topic === null || (typeof topic === "string" && TOPIC.test(topic)))
    ) {
      const any = position.length === 0 || position.includes(null);
      topics.push(any ? null : [...new Set(position.map((topic: string) => topic.toLowerCase()))]);
    } else {
      return invalid(
        1,
        "each topic must be null, a topic (0x and 64 hex digits) or a list of them",
      );
    }
  }
  // A null position still asks for a topic there (geth: a log with fewer topics never
  // matches), so only an empty list means no topics at all.
  return { ok: true, value: topics.length === 0 ? null : topics };
}
