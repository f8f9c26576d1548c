import type { Network } from "../../config/network-model.ts";
import { LAMBDA_RESPONSE_LIMIT_BYTES, serializedBytes } from "../../http/payload-limit.ts";
import { ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import {
  FILTER_BLOCKS_PER_POLL,
  FILTER_CALLS_PER_REQUEST,
  FILTER_EXTEND_AFTER_FRACTION,
  FILTER_POLL_MAX_BLOCKS,
} from "../../policies.ts";
import type { FilterStore, NewFilter, Telemetry } from "../../ports.ts";
import { logsRangeOf } from "../../routing/learned-limits.ts";
import { type SelectionContext, whyNotCandidate } from "../../routing/selection.ts";
import type { GuardCounts } from "../../status/guards.ts";
import type { InternalCall } from "../logs/logs-queries.ts";
import { GET_LOGS, quantity } from "../logs/logs-range.ts";
import type { OpenCall } from "../vocabulary.ts";
import {
  type ChainPositions,
  firstBlock,
  lastBlockNow,
  NODE_ERROR,
  readLogFilter,
} from "./filter-criteria.ts";
import { gatewayFilterId } from "./filter-id.ts";
import { type PollOutcome, pollFilter } from "./filter-polls.ts";
import type { FilterRecord } from "./filter-progress.ts";
import { readRangeLogs } from "./filter-range.ts";
import { FilterReads } from "./filter-reads.ts";

/**
 * Filters served by the gateway itself (docs/behaviour.md §14): `eth_newFilter` and
 * `eth_newBlockFilter` install a filter in the shared store, and the calls naming one of its
 * ids (`eth_getFilterChanges`, `eth_getFilterLogs`, `eth_uninstallFilter`) are answered from
 * the gateway's own reads of the chain, so a filter outlives any provider and any container.
 * Every other filter call (`eth_newPendingTransactionFilter`, a provider's id) goes upstream.
 */

export interface FilterRequest {
  readonly network: Network;
  readonly context: SelectionContext;
  /** The API key's name; filters are kept per key, and for everyone alike without keys. */
  readonly caller: string | undefined;
  readonly deadline: number;
  /** Upstream calls the request's filters may make in all. */
  readonly budget: number;
  /** Providers whose answers the caller gets, in order of use. */
  readonly used: string[];
  readonly deps: {
    /** Where filters are kept; without it, every filter call goes upstream as before. */
    readonly filters?: FilterStore;
    readonly clock: () => number;
    readonly telemetry: Telemetry;
    readonly scrub: (text: string) => string;
    /** Where the calls over `FILTER_CALLS_PER_REQUEST` are counted. */
    readonly guards: GuardCounts;
  };
  /** Serves one request text through the pipeline as an internal call. */
  readonly handle: (text: string, internal: InternalCall) => Promise<{ readonly body: string }>;
}

/** The owner of filters installed without an API key (every caller of such a gateway). */
export const ANY_CALLER = "*";

const FILTER_NOT_FOUND = { code: NODE_ERROR, message: "filter not found" };
const OVER_FILTER_CALLS = {
  code: ErrorCode.limitExceeded,
  message: `over the ${FILTER_CALLS_PER_REQUEST} filter calls one request may make (installs, polls, uninstalls): nothing was done for this one; send it in another request`,
};
/** Room in Lambda's response for the envelope and headers around a filter's changes. */
const RESPONSE_ENVELOPE_BYTES = 16_384;

const result = (value: string) => `{"jsonrpc":"2.0","id":null,"result":${value}}`;
const failure = (error: { readonly code: number; readonly message: string }) =>
  errorResponse("null", error.code, error.message);

/** The calls of a request this step answers: installs, and calls naming a gateway id. */
function servedHere(entry: OpenCall): boolean {
  if (entry.answer !== null) return false;
  switch (entry.info.method) {
    case "eth_newFilter":
    case "eth_newBlockFilter":
      return true;
    case "eth_getFilterChanges":
    case "eth_getFilterLogs":
    case "eth_uninstallFilter":
      return idOf(entry) !== null;
    default:
      return false;
  }
}

function idOf(entry: OpenCall): string | null {
  const params = entry.info.params;
  return gatewayFilterId(Array.isArray(params) ? params[0] : undefined);
}

/** Answers the filter calls the gateway serves; returns the upstream calls their reads made. */
export async function serveFilterCalls(
  open: readonly OpenCall[],
  request: FilterRequest,
): Promise<number> {
  const store = request.deps.filters;
  if (store === undefined) return 0;
  const ours = open.filter(servedHere);
  if (ours.length === 0) return 0;
  const { settings } = request.network;
  const reads = new FilterReads({
    clock: request.deps.clock,
    deadline: request.deadline,
    budget: request.budget,
    perRead: 2 * settings.max_attempts,
    maxBatch: settings.max_batch,
    handle: request.handle,
    used: request.used,
  });
  const served = new FilterCalls(request, store, reads);
  for (const [index, entry] of ours.entries()) {
    if (index >= FILTER_CALLS_PER_REQUEST) {
      request.deps.guards.refused(request.network.name, "filter_calls_per_request");
      entry.answer = failure(OVER_FILTER_CALLS);
      continue;
    }
    try {
      entry.answer = await served.answer(entry);
    } catch (error) {
      const why = request.deps.scrub(error instanceof Error ? error.message : String(error));
      request.deps.telemetry.log("warn", "filter store failed", {
        network: request.network.name,
        method: entry.info.method,
        error: why,
      });
      entry.answer = failure({
        code: ErrorCode.internal,
        message: `the gateway's filter store did not answer (${why.slice(0, 200)}): nothing was reported and no filter moved; try again`,
      });
    }
  }
  return reads.upstreamCalls;
}

class FilterCalls {
  readonly #request: FilterRequest;
  readonly #owner: string;
  readonly #store: FilterStore;
  readonly #reads: FilterReads;
  /** Bytes the answers of this request's filters may still carry. */
  #bytesLeft: number;
  #positionsRead: Promise<ChainPositions | null> | null = null;

  constructor(request: FilterRequest, store: FilterStore, reads: FilterReads) {
    this.#request = request;
    this.#owner = request.caller ?? ANY_CALLER;
    this.#store = store;
    this.#reads = reads;
    const { settings } = request.network;
    this.#bytesLeft = Math.min(
      settings.max_response_bytes,
      LAMBDA_RESPONSE_LIMIT_BYTES - RESPONSE_ENVELOPE_BYTES,
    );
  }

  /** The answer to one call (the caller's id goes in later). */
  async answer(entry: OpenCall): Promise<string> {
    const notification = entry.call.rawId === null;
    const id = idOf(entry);
    switch (entry.info.method) {
      case "eth_uninstallFilter":
        return result(String(await this.#store.uninstall(...this.#where(id), this.#now())));
      case "eth_newFilter":
        // The caller's own tags: `latest` pinned to a number would stop moving (§14).
        return notification ? result("null") : this.#installLogs(entry.unpinned ?? entry.call);
      case "eth_newBlockFilter":
        return notification ? result("null") : this.#installBlocks();
      case "eth_getFilterChanges":
        // A notification would consume changes nobody gets.
        return notification ? result("null") : this.#changes(id as string);
      default:
        return notification ? result("null") : this.#allLogs(id as string);
    }
  }

  #now(): number {
    return this.#request.deps.clock();
  }

  #where(id: string | null): [string, string, string] {
    return [this.#request.network.name, this.#owner, id ?? ""];
  }

  /**
   * Where the chain stands for filters now: the served head, and the safe and finalized
   * blocks; read once per request, so the filter calls of a batch agree.
   */
  #positions(): Promise<ChainPositions | null> {
    this.#positionsRead ??= this.#readPositions();
    return this.#positionsRead;
  }

  async #readPositions(): Promise<ChainPositions | null> {
    const head = await this.#reads.servedHead();
    if (head === null) return null;
    const chain = this.#request.context.state.head;
    return { head, safe: chain?.safe?.number ?? null, finalized: chain?.finalized?.number ?? null };
  }

  #noHead(): string {
    return failure({
      code: ErrorCode.internal,
      message: `no head of ${this.#request.network.name} could be read (no provider answered eth_blockNumber): try again`,
    });
  }

  async #installLogs(call: { readonly params: unknown }): Promise<string> {
    const spec = readLogFilter(call.params);
    if (!spec.ok) return failure(spec.error);
    const at = await this.#positions();
    if (at === null) return this.#noHead();
    const first = firstBlock(spec.value.from, at);
    if (first === null) {
      return failure({
        code: NODE_ERROR,
        message: `no ${spec.value.from.kind === "tag" ? spec.value.from.tag : ""} block of ${this.#request.network.name} is known yet: install the filter from a block number`,
      });
    }
    const { to, criteria } = spec.value;
    if (to.kind === "number" && to.number < first) {
      return failure({ code: NODE_ERROR, message: "invalid from and to block combination" });
    }
    return this.#install({ kind: "logs", logs: { criteria, to }, first, cursor: first });
  }

  async #installBlocks(): Promise<string> {
    const at = await this.#positions();
    if (at === null) return this.#noHead();
    return this.#install({ kind: "blocks", logs: null, first: at.head + 1, cursor: at.head + 1 });
  }

  async #install(filter: Pick<NewFilter, "kind" | "logs" | "first" | "cursor">): Promise<string> {
    const { network } = this.#request;
    const owner = this.#owner;
    const max = network.settings.max_filters_per_key;
    const now = this.#now();
    const chainResetAt = this.#request.context.state.head?.resetAt ?? 0;
    const id = await this.#store.install(
      network.name,
      owner,
      { ...filter, seen: [], span: null, expiresAt: now + this.#idleMs(), chainResetAt },
      max,
      now,
    );
    if (id !== null) return result(JSON.stringify(id));
    const whose =
      owner === ANY_CALLER ? "Callers of this gateway hold" : `API key "${owner}" holds`;
    return failure({
      code: ErrorCode.limitExceeded,
      message: `${whose} ${max} live filters on ${network.name} (max_filters_per_key): uninstall one (eth_uninstallFilter), or let one expire unpolled (${network.settings.filter_idle_seconds} s)`,
    });
  }

  #idleMs(): number {
    return this.#request.network.settings.filter_idle_seconds * 1000;
  }

  /**
   * The owner's filter, or null when there is none, or it was installed on a chain that has
   * since restarted (docs/behaviour.md §10.7): the restarted node has no such filter either, and
   * a client told "filter not found" installs a new one on the new chain, where this one would
   * wait, silent, for the new chain to pass the old one's blocks. Such a filter is uninstalled.
   */
  async #filter(id: string): Promise<FilterRecord | null> {
    const record = await this.#store.read(...this.#where(id), this.#now());
    const chain = this.#request.context.state.head;
    const resetAt = chain?.resetAt ?? 0;
    // A reset for a broken finality is a deep reorg of the same chain: the filter's own reorg
    // handling reports it.
    const restarted = resetAt > (chain?.finalityBrokenAt ?? 0);
    if (record === null || !restarted || record.chainResetAt >= resetAt) return record;
    await this.#store.uninstall(...this.#where(id), this.#now());
    return null;
  }

  async #changes(id: string): Promise<string> {
    const record = await this.#filter(id);
    if (record === null) return failure(FILTER_NOT_FOUND);
    const at = await this.#positions();
    if (at === null) return this.#noHead();
    const outcome = await pollFilter(record, {
      reads: this.#reads,
      at,
      pieceBlocks: this.#pieceBlocks(),
      blocksPerPoll: FILTER_BLOCKS_PER_POLL,
      maxBytes: this.#bytesLeft,
    });
    if (outcome.kind === "error") {
      return failure({
        code: outcome.code ?? ErrorCode.internal,
        message: this.#request.deps.scrub(outcome.message),
      });
    }
    return this.#settle(record, outcome);
  }

  /**
   * Writes the poll's move, conditional on the version read, before the caller gets the
   * changes: a poll that lost the race to another container's reports nothing (that one
   * reported these blocks), and one whose write failed reports nothing either, so the next
   * poll reports them once.
   */
  async #settle(
    record: FilterRecord,
    outcome: Extract<PollOutcome, { kind: "changes" }>,
  ): Promise<string> {
    const { network, deadline, deps } = this.#request;
    const now = this.#now();
    const expiresAt = now + this.#idleMs();
    if (outcome.advance === null) {
      const due = record.expiresAt - now < this.#idleMs() * (1 - FILTER_EXTEND_AFTER_FRACTION);
      if (due) await this.#extend(record, expiresAt);
      return result("[]");
    }
    if (now >= deadline) {
      return failure({
        code: ErrorCode.internal,
        message:
          "the request's deadline passed before the filter could move on: nothing was reported; poll again",
      });
    }
    const moved = await this.#store.advance(...this.#where(record.id), record.version, {
      ...outcome.advance,
      expiresAt,
    });
    if (!moved) {
      deps.telemetry.log(
        "debug",
        "filter polled twice at once: the other poll reported its blocks",
        { network: network.name },
      );
      return result("[]");
    }
    if (outcome.reorg !== undefined) {
      const { fork, unavailable } = outcome.reorg;
      deps.telemetry.log("warn", "filter saw a reorg", {
        network: network.name,
        replaced_blocks: fork.replaced.length,
        resumed_at: quantity(fork.resumeAt),
        deeper_than_remembered: fork.deeperThanKnown,
        removed_logs_unavailable: unavailable,
      });
    }
    return this.#logsAnswer(outcome.items);
  }

  /** Keeps an idle filter alive: nothing to report, so a failed write loses nothing. */
  async #extend(record: FilterRecord, expiresAt: number): Promise<void> {
    const { cursor, seen, span } = record;
    await this.#store
      .advance(...this.#where(record.id), record.version, { cursor, seen, span, expiresAt })
      .catch((error: unknown) =>
        this.#request.deps.telemetry.log("warn", "filter expiry not extended", {
          network: this.#request.network.name,
          error: this.#request.deps.scrub(error instanceof Error ? error.message : String(error)),
        }),
      );
  }

  /** The answer listing `items` (JSON texts), counted against the bytes the request may carry. */
  #logsAnswer(items: readonly string[]): string {
    const text = `[${items.join(",")}]`;
    this.#bytesLeft -= serializedBytes(text);
    return result(text);
  }

  async #allLogs(id: string): Promise<string> {
    const record = await this.#filter(id);
    // geth's answer for a block filter too: it has no logs to give.
    if (record === null || record.logs === null) return failure(FILTER_NOT_FOUND);
    const at = await this.#positions();
    if (at === null) return this.#noHead();
    const last = lastBlockNow(record.logs.to, at);
    if (last === null || last < record.first) return result("[]");
    const range = { from: record.first, to: last };
    const read = await readRangeLogs(this.#reads, record.logs.criteria, range, {
      pieceBlocks: this.#pieceBlocks(),
      maxBytes: this.#bytesLeft,
      whole: true,
    });
    const blocks = `${quantity(range.from)}-${quantity(range.to)}`;
    if (read.kind === "too_large") {
      return failure({
        code: ErrorCode.limitExceeded,
        message: `the logs of the filter's blocks ${blocks} are more than this gateway can return in one answer: ask eth_getLogs for parts of the range`,
      });
    }
    if (read.kind === "failed") {
      return failure({
        code: read.code ?? ErrorCode.internal,
        message: this.#request.deps.scrub(
          `blocks ${quantity(read.piece.from)}-${quantity(read.piece.to)} of the filter's blocks ${blocks} were not served (${read.detail}); no logs of the range are returned`,
        ),
      });
    }
    return this.#logsAnswer(read.logs.map((log) => log.text));
  }

  /**
   * The widest piece of a filter's range one read takes: the largest log range of a provider
   * that serves eth_getLogs now, as pieces of a log query are cut (docs/behaviour.md §12.4),
   * and no more than `FILTER_POLL_MAX_BLOCKS` while none is known.
   */
  #pieceBlocks(): number {
    const { network, context } = this.#request;
    const ranges = network.providers
      .filter((provider) => whyNotCandidate(provider, GET_LOGS, context) === null)
      .map((provider) => logsRangeOf(provider, context.state.logsRanges, context.now));
    return Math.min(FILTER_POLL_MAX_BLOCKS, ranges.length === 0 ? Infinity : Math.max(...ranges));
  }
}
