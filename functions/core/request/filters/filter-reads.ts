import { isRecord } from "../../jsonrpc/envelope.ts";
import { parseJsonOrUndefined } from "../../jsonrpc/json-raw.ts";
import type { InternalCall } from "../logs/logs-queries.ts";
import { type BlockRange, GET_LOGS } from "../logs/logs-range.ts";
import { type LogsRefusal, logsRefusalOf } from "../logs/logs-refusal.ts";
import { batchMembers, headersOfBatch, logsOfAnswer, type PlacedLog } from "./filter-answers.ts";
import { blockQueryParams, hex, type LogCriteria, rangeQueryParams } from "./filter-criteria.ts";
import type { Header } from "./filter-progress.ts";

/**
 * What a filter reads from the chain (docs/behaviour.md §14), each read an internal call
 * through the gateway's own pipeline, as a piece of a log query is: routing, retries, the
 * served head, the answer cache, and every check a log answer gets there. The reads of one
 * request share its upstream calls and its deadline.
 */

/** The gateway's own pipeline, as the filters use it. */
export interface FilterReadDeps {
  readonly clock: () => number;
  readonly deadline: number;
  /** Upstream calls the request's filters may make in all. */
  readonly budget: number;
  /** Upstream calls one read may make: its attempts, each perhaps with a check of its own. */
  readonly perRead: number;
  /** The most calls one internal request may hold (`max_batch`). */
  readonly maxBatch: number;
  /** Serves one request text through the pipeline as an internal call. */
  readonly handle: (text: string, internal: InternalCall) => Promise<{ readonly body: string }>;
  /** Providers whose answers the caller gets, in order of use: the reads' join them. */
  readonly used: string[];
}

export type LogsRead =
  | { readonly kind: "logs"; readonly logs: PlacedLog[] }
  | { readonly kind: "refused"; readonly refusal: LogsRefusal }
  | { readonly kind: "failed"; readonly detail: string; readonly code: number | null };

const call = (id: number, method: string, params: readonly unknown[]) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });

export class FilterReads {
  readonly #deps: FilterReadDeps;
  #spent = 0;
  /** The lowest block each provider was found without (logs-reach.ts), across these reads. */
  readonly #lacking = new Map<string, number>();

  constructor(deps: FilterReadDeps) {
    this.#deps = deps;
  }

  /** Upstream calls made so far. */
  get upstreamCalls(): number {
    return this.#spent;
  }

  /** The served head, as `eth_blockNumber` answers it (docs/behaviour.md §10); null if none. */
  async servedHead(): Promise<number | null> {
    const body = await this.#read(call(1, "eth_blockNumber", []));
    const result = body === null ? undefined : resultOf(body);
    return typeof result === "string" && /^0x[0-9a-f]{1,16}$/i.test(result)
      ? Number.parseInt(result, 16)
      : null;
  }

  /**
   * The headers of these blocks, in batches of at most `max_batch`: each number's header, or
   * null; null in all when no call or time was left to read them.
   */
  async headers(numbers: readonly number[]): Promise<Map<number, Header | null> | null> {
    const found = new Map<number, Header | null>();
    for (const chunk of chunks([...new Set(numbers)], this.#deps.maxBatch)) {
      const text = `[${chunk.map((number) => call(number, "eth_getBlockByNumber", [hex(number), false])).join(",")}]`;
      const body = await this.#read(text);
      if (body === null) return null;
      for (const [number, header] of headersOfBatch(body, chunk)) found.set(number, header);
    }
    return found;
  }

  /** The logs matching `criteria` in `range`, or why there are none to report. */
  async logs(criteria: LogCriteria, range: BlockRange): Promise<LogsRead> {
    const body = await this.#read(call(1, GET_LOGS, rangeQueryParams(criteria, range)));
    if (body === null) return this.#nothingLeft();
    const logs = logsOfAnswer(body, range, criteria);
    if (logs !== null) return { kind: "logs", logs };
    const refusal = logsRefusalOf(body);
    if (refusal !== null) return { kind: "refused", refusal };
    return { kind: "failed", ...errorOf(body) };
  }

  /**
   * The logs matching `criteria` in each block named by hash (one batch), for the logs of
   * blocks a reorg replaced: a block's logs, or null when the answer is not its logs.
   */
  async logsByHash(
    criteria: LogCriteria,
    hashes: readonly string[],
  ): Promise<Map<string, PlacedLog[] | null>> {
    const found = new Map<string, PlacedLog[] | null>(hashes.map((hash) => [hash, null]));
    for (const chunk of chunks(hashes, this.#deps.maxBatch)) {
      const text = `[${chunk.map((hash, id) => call(id, GET_LOGS, blockQueryParams(criteria, hash))).join(",")}]`;
      const body = await this.#read(text);
      if (body === null) return found;
      const members = batchMembers(body);
      chunk.forEach((hash, id) => {
        const member = members.get(id);
        const logs = member === undefined ? null : logsOfAnswer(member, null, criteria);
        // Logs of another block than the one asked for are not that block's.
        if (logs?.every((log) => log.blockHash.toLowerCase() === hash.toLowerCase())) {
          found.set(hash, logs);
        }
      });
    }
    return found;
  }

  #nothingLeft(): LogsRead {
    const late = this.#deps.clock() >= this.#deps.deadline;
    return {
      kind: "failed",
      detail: late
        ? "the request's deadline passed"
        : "no upstream calls were left for it (max_upstream_calls)",
      code: null,
    };
  }

  /** One internal request: its answer body, or null when no call or time is left for it. */
  async #read(text: string): Promise<string | null> {
    const deps = this.#deps;
    const budget = Math.min(deps.perRead, deps.budget - this.#spent);
    if (budget < 1 || deps.clock() >= deps.deadline) return null;
    const internal: InternalCall = { budget, lacking: this.#lacking };
    const response = await deps.handle(text, internal);
    this.#spent += internal.served?.upstreamCalls ?? 0;
    for (const provider of internal.served?.used ?? []) {
      if (!deps.used.includes(provider)) deps.used.push(provider);
    }
    return response.body;
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const step = Math.max(1, Math.floor(size));
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += step)
    out.push(items.slice(start, start + step));
  return out;
}

function resultOf(body: string): unknown {
  const parsed = parseJsonOrUndefined(body);
  return isRecord(parsed) ? parsed.result : undefined;
}

/** The error an answer carries, as a detail for the caller, and its code. */
function errorOf(body: string): { readonly detail: string; readonly code: number | null } {
  const parsed = parseJsonOrUndefined(body);
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (!isRecord(error)) return { detail: "the answer is not a list of logs", code: null };
  const code = typeof error.code === "number" && Number.isInteger(error.code) ? error.code : null;
  const message = typeof error.message === "string" ? error.message : "";
  return { detail: `${code ?? "no code"}: ${message.replace(/\s+/g, " ").slice(0, 200)}`, code };
}
