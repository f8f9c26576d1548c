import { isRecord } from "../jsonrpc/envelope.ts";
import { parseJsonOrUndefined } from "../jsonrpc/json-raw.ts";
import { batchMembers, headerOf } from "../request/filters/filter-answers.ts";
import type { LogsFilter } from "../subscriptions/subscription-records.ts";
import { type BlockLog, blockLogsOf, blockLogsParams } from "./delivery/block-logs.ts";
import { headerText, hexNumber } from "./delivery/notifications.ts";

/**
 * What the follower reads from the chain, each read a request through the gateway's own
 * pipeline (`Gateway.handleRpc`, as a caller's request is served): routing, failover, the
 * served head (a block above it is answered `null`, so the follower never runs ahead of what
 * `eth_blockNumber` answers), and every check a log answer gets (docs/behaviour.md §12.12).
 */

/** A block as the follower delivers it: its place in the chain and its `newHeads` header. */
export interface ChainBlock {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
  readonly header: string;
}

export type LogsAnswer =
  | { readonly ok: true; readonly logs: readonly BlockLog[] }
  | { readonly ok: false; readonly detail: string };

/** Serves one JSON-RPC request text through the pipeline; the answer's body. */
export type Handle = (body: string, remainingMs: number) => Promise<{ readonly body: string }>;

/** The least time left (before the run ends) a read is begun with. */
export const MIN_READ_MS = 1_500;

const call = (id: number, method: string, params: readonly unknown[]) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });

export interface ChainReadsDeps {
  readonly handle: Handle;
  /** The served head, as `eth_blockNumber` answers it but never from a provider (`Gateway.servedHead`). */
  readonly servedHead: () => Promise<number | null>;
  readonly maxBatch: number;
  /** The time left before the run ends (a read's deadline is within it). */
  readonly remainingMs: () => number;
}

export class ChainReads {
  readonly #handle: Handle;
  readonly #servedHead: () => Promise<number | null>;
  readonly #maxBatch: number;
  readonly #remainingMs: () => number;

  constructor(deps: ChainReadsDeps) {
    this.#handle = deps.handle;
    this.#servedHead = deps.servedHead;
    this.#maxBatch = Math.max(1, deps.maxBatch);
    this.#remainingMs = deps.remainingMs;
  }

  /**
   * The served head; null while there is none, or when no time is left. Never a provider's
   * number: asked of the pipeline, a look when nothing was published for a block time would
   * go to a provider, once per look.
   */
  async servedHead(): Promise<number | null> {
    if (this.#remainingMs() < MIN_READ_MS) return null;
    return this.#servedHead();
  }

  /**
   * The blocks at these numbers, in batches of at most `max_batch`: each number's block, or
   * null (not there yet, an error, an answer that is not that block); null in all when a
   * read got no answer at all.
   */
  async blocks(numbers: readonly number[]): Promise<Map<number, ChainBlock | null> | null> {
    const found = new Map<number, ChainBlock | null>(numbers.map((number) => [number, null]));
    for (let start = 0; start < numbers.length; start += this.#maxBatch) {
      const chunk = numbers.slice(start, start + this.#maxBatch);
      const text = `[${chunk.map((number) => call(number, "eth_getBlockByNumber", [hexNumber(number), false])).join(",")}]`;
      const body = await this.#read(text);
      if (body === null) return null;
      for (const [id, member] of batchMembers(body)) {
        if (!found.has(id)) continue;
        const parsed = parseJsonOrUndefined(member);
        const block = chainBlockOf(isRecord(parsed) ? parsed.result : undefined);
        if (block !== null && block.number === id) found.set(id, block);
      }
    }
    return found;
  }

  /** The block's logs that any of `filters` may select (one eth_getLogs by its hash). */
  async blockLogs(hash: string, filters: readonly LogsFilter[]): Promise<LogsAnswer> {
    const body = await this.#read(call(1, "eth_getLogs", blockLogsParams(hash, filters)));
    if (body === null) return { ok: false, detail: "no time was left to ask" };
    const logs = blockLogsOf(body, hash);
    if (logs !== null) return { ok: true, logs };
    return { ok: false, detail: failureOf(body) };
  }

  async #read(text: string): Promise<string | null> {
    const remainingMs = this.#remainingMs();
    // The pipeline keeps a second of it for itself (its deadline margin): less is no read.
    if (remainingMs < MIN_READ_MS) return null;
    return (await this.#handle(text, remainingMs)).body;
  }
}

function chainBlockOf(result: unknown): ChainBlock | null {
  if (!isRecord(result)) return null;
  const block = headerOf(result);
  return block === null ? null : { ...block, header: headerText(result) };
}

/** What an answer that is not a list of the block's logs says, briefly, for the error. */
function failureOf(body: string): string {
  const parsed = parseJsonOrUndefined(body);
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (!isRecord(error)) return "the answer was not the block's logs";
  const message = typeof error.message === "string" ? error.message : "";
  return `${String(error.code)}: ${message.replace(/\s+/g, " ").slice(0, 200)}`;
}
