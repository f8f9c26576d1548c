import type { Network, Provider } from "../../config/network-model.ts";
import { LAMBDA_RESPONSE_LIMIT_BYTES } from "../../http/payload-limit.ts";
import { ErrorCode, errorResponse, methodPermitted } from "../../jsonrpc/jsonrpc.ts";
import { keepLearnedLimit, limitInForce, logsRangeOf } from "../../routing/learned-limits.ts";
import { headsReadAt, type LearnedLimit } from "../../routing/network-state.ts";
import { type SelectionContext, whyNotCandidate } from "../../routing/selection.ts";
import { answer, keep, withdraw } from "../open-call.ts";
import type { OpenCall } from "../vocabulary.ts";
import { type LogsRangeDeps, learnLogsRange } from "./logs-limits.ts";
import {
  type BlockRange,
  GET_LOGS,
  type LogQuery,
  logQueryOf,
  pieceCall,
  quantity,
  rangeText,
  spanOf,
  unreadableToBlock,
} from "./logs-range.ts";
import { type PieceAnswer, type SplitOutcome, serveInPieces } from "./logs-split.ts";

/**
 * eth_getLogs over any range (docs/behaviour.md §12): each log query of a request is served as
 * internal calls through the gateway's own pipeline (routing, retries, penalties, the served
 * head), whole when a provider in use takes its span, else in pieces, and answered with the
 * provider's text, the merged logs, or the gateway's own error naming the range.
 */

/**
 * The calls of a request this step serves, not notifications: eth_getLogs with both ends
 * numbers, and those with a `toBlock` in hex no block can have (refused here).
 */
export function logQueriesOf(open: readonly OpenCall[]): OpenCall[] {
  return open.filter(
    (entry) =>
      entry.call.rawId !== null &&
      entry.answer === null &&
      (logQueryOf(entry.info.method, entry.info.params) !== null ||
        unreadableToBlock(entry.info.method, entry.info.params) !== null),
  );
}

/**
 * A call the gateway serves to itself (a piece of a log query): served like any call but not
 * cut again, with at most `budget` upstream calls, not reported as a request of its own; what
 * it made is written back into `served`.
 */
export interface InternalCall {
  readonly budget: number;
  /**
   * The lowest block each provider was found without in this request (logs-reach.ts): its
   * answers up to a block at or over it are dropped without asking again.
   */
  readonly lacking: Map<string, number>;
  served?: {
    readonly entry: OpenCall | undefined;
    readonly upstreamCalls: number;
    readonly used: readonly string[];
  };
}

/** What the request lends its log queries. */
export interface LogQueryRequest {
  readonly network: Network;
  readonly context: SelectionContext;
  /** The highest block known to exist, or null when unknown. */
  readonly knownHead: number | null;
  /** Upstream calls the log queries of this request may make in all. */
  readonly budget: number;
  readonly deadline: number;
  /** Providers whose answers the caller gets, in order of use: the pieces' join them. */
  readonly used: string[];
  /** State writes the request waits for before it answers. */
  readonly writes: Promise<unknown>[];
  readonly deps: LogsRangeDeps & {
    /** Removes secrets from text that may leave the process (a provider's error message). */
    readonly scrub: (text: string) => string;
  };
  /** Serves one call text through the gateway's pipeline as an internal call. */
  readonly handle: (text: string, internal: InternalCall) => Promise<unknown>;
}

interface LogQueryScope extends LogQueryRequest {
  /** Spans providers take, as learned so far (this request may learn more). */
  readonly learned: Map<string, LearnedLimit>;
  readonly serve: (text: string, budget: number) => Promise<PieceAnswer>;
  readonly learn: (provider: string, blocks: number) => void;
  readonly share: (provider: string, blocks: number) => void;
}

/** Room in Lambda's response for the envelope and headers around the logs. */
const RESPONSE_ENVELOPE_BYTES = 16_384;

/** Serves each log query in turn, sharing the budget; returns the upstream calls made. */
export async function serveLogQueries(
  entries: readonly OpenCall[],
  request: LogQueryRequest,
): Promise<number> {
  if (entries.length === 0) return 0;
  // Two views: `learned` sizes this request's pieces, and this container's state routes them,
  // at once; `shared` is what every container's state holds, lowered only by what a query
  // learned once it is over.
  const learned = new Map(request.context.state.logsRanges);
  const shared = new Map(request.context.state.logsRanges);
  const ttlMs = request.network.settings.learned_limit_ttl_seconds * 1000;
  const lacking = new Map<string, number>();
  const scope: LogQueryScope = {
    ...request,
    learned,
    serve: (text, budget) => serveInternally(text, { budget, lacking }, request),
    learn: (provider, blocks) => {
      const now = request.deps.clock();
      const value = Math.max(
        1,
        Math.min(blocks, limitInForce(undefined, learned.get(provider), now)),
      );
      const limit = { value, until: now + ttlMs };
      learned.set(provider, limit);
      keepLearnedLimit(request.network, provider, limit, "logsRanges", NOT_SHARED, request.deps);
    },
    share: (provider, blocks) => {
      // This container's state goes back up to what is shared, if the query went under it.
      const now = request.deps.clock();
      const value = Math.min(blocks, limitInForce(undefined, shared.get(provider), now));
      const limit = { value, until: now + ttlMs };
      keepLearnedLimit(request.network, provider, limit, "logsRanges", NOT_SHARED, request.deps);
      request.writes.push(learnLogsRange(request.network, provider, blocks, shared, request.deps));
    },
  };
  let upstreamCalls = 0;
  for (const entry of entries) {
    const unreadable = unreadableToBlock(entry.info.method, entry.info.params);
    if (unreadable !== null) {
      answer(
        entry,
        errorResponse(
          "null",
          ErrorCode.invalidParams,
          `toBlock ${unreadable.slice(0, 40)} is not a block number this gateway serves (at most 16 hex digits, under 2^53): ask for blocks up to the chain head`,
        ),
      );
      continue;
    }
    const query = logQueryOf(entry.info.method, entry.info.params);
    if (query === null) continue;
    upstreamCalls += await serveLogQuery(entry, query, {
      ...scope,
      budget: scope.budget - upstreamCalls,
    });
  }
  return upstreamCalls;
}

/** One piece as an internal call: its answer, whose it is, and what it cost. */
async function serveInternally(
  text: string,
  internal: InternalCall,
  request: LogQueryRequest,
): Promise<PieceAnswer> {
  await request.handle(text, internal);
  const served = internal.served;
  for (const provider of served?.used ?? []) {
    if (!request.used.includes(provider)) request.used.push(provider);
  }
  const entry = served?.entry;
  const answer = entry?.answer ?? null;
  // A kept error answer the caller may get is that provider's answer (x-gateway-provider).
  const kept = answer === null ? (entry?.fallback?.provider ?? null) : null;
  if (kept !== null && !request.used.includes(kept)) request.used.push(kept);
  return {
    text: answer ?? entry?.fallback?.text ?? null,
    provider: answer !== null ? (served?.used.at(-1) ?? null) : (entry?.fallback?.provider ?? null),
    error: entry?.lastError ?? "no answer",
    upstreamCalls: served?.upstreamCalls ?? 0,
  };
}

/**
 * The blocks the chain can have made since the monitor's snapshot. Another container, on a
 * newer copy of the state, may already have told the caller of a head this one has not seen:
 * a cut query up to it is not refused, and the check of its last piece (logs-reach.ts)
 * decides whether the block exists.
 */
export function blocksSinceSnapshot(scope: {
  readonly network: Network;
  readonly context: SelectionContext;
}): number {
  const quorum = scope.context.state.quorum;
  if (quorum === null) return 0;
  const blockTimeMs = scope.network.settings.block_time_seconds * 1000;
  return Math.ceil(Math.max(0, scope.context.now - headsReadAt(quorum)) / blockTimeMs);
}

async function serveLogQuery(
  entry: OpenCall,
  query: LogQuery,
  scope: LogQueryScope,
): Promise<number> {
  const { settings } = scope.network;
  const pieceSize = (range: BlockRange) => sizeFor(range, scope);
  const cut = pieceSize(query) < spanOf(query);
  if (cut && scope.knownHead !== null && query.to > scope.knownHead + blocksSinceSnapshot(scope)) {
    answer(
      entry,
      errorResponse(
        "null",
        ErrorCode.invalidParams,
        `toBlock ${quantity(query.to)} is above the chain head this gateway knows (${quantity(scope.knownHead)}): ask for blocks up to it`,
      ),
    );
    return 0;
  }
  let pieceId = 0;
  const outcome = await serveInPieces(query, {
    pieceSize,
    // The whole query goes as the caller wrote it (tags pinned); a piece as the caller's
    // filter with its own ends.
    serve: (piece, budget) =>
      scope.serve(
        piece.from === query.from && piece.to === query.to
          ? entry.call.raw
          : pieceCall(query, piece, ++pieceId),
        budget,
      ),
    learn: scope.learn,
    share: scope.share,
    concurrency: settings.logs_concurrency,
    maxUpstreamCalls: scope.budget,
    // Each attempt may need one more call: the check that its provider had reached toBlock.
    attemptsPerPiece: 2 * settings.max_attempts,
    maxBytes: settings.max_response_bytes,
    maxEscapedBytes: LAMBDA_RESPONSE_LIMIT_BYTES - RESPONSE_ENVELOPE_BYTES,
    clock: scope.deps.clock,
    deadline: scope.deadline,
  });
  settle(
    entry,
    query,
    outcome,
    { max: settings.max_upstream_calls, left: scope.budget },
    scope.deps.scrub,
  );
  if (outcome.pieces > 1 || outcome.kind !== "logs") {
    scope.deps.telemetry.count("logs_queries_split", { network: scope.network.name });
    scope.deps.telemetry.log("info", "eth_getLogs served in pieces", {
      network: scope.network.name,
      range: rangeText(query),
      outcome: outcome.kind,
      pieces: outcome.pieces,
      upstream_calls: outcome.upstreamCalls,
    });
  }
  return outcome.upstreamCalls;
}

function settle(
  entry: OpenCall,
  query: LogQuery,
  outcome: SplitOutcome,
  upstreamCalls: { readonly max: number; readonly left: number },
  scrub: (text: string) => string,
): void {
  switch (outcome.kind) {
    case "logs":
    case "error_answer":
      answer(entry, outcome.text);
      return;
    // Both start with the words indexers narrow a log range on (subsquid's processor: "response
    // is too big", then the "Try with this block range [a, b]" hint; docs/behaviour.md §12.8).
    case "too_large": {
      answer(
        entry,
        errorResponse(
          "null",
          ErrorCode.limitExceeded,
          `response is too big: the logs of blocks ${rangeText(query)} are more than this gateway can return in one answer: narrow your range.${rangeHint(outcome.fits)}`,
        ),
      );
      return;
    }
    case "too_many_pieces": {
      const need = `blocks ${rangeText(query)} need ${outcome.needed} upstream calls of at most ${outcome.size} blocks`;
      // Within the limit, but the request's other calls spent it: the batch is too big.
      const why =
        outcome.needed <= upstreamCalls.max
          ? `${need}, more than the ${Math.max(0, upstreamCalls.left)} left of this request's max_upstream_calls (${upstreamCalls.max}): send fewer calls per batch`
          : `${need}, over max_upstream_calls (${upstreamCalls.max}): narrow your range.${rangeHint(firstPieces(query, outcome.size, upstreamCalls.left))}`;
      answer(
        entry,
        errorResponse(
          "null",
          ErrorCode.limitExceeded,
          `response is too big for one request: ${why}`,
        ),
      );
      return;
    }
    case "failed": {
      const why = `blocks ${rangeText(outcome.piece)} of ${rangeText(query)} were not served (${outcome.detail}); no logs of the range are returned`;
      keep(entry, null);
      if (outcome.code !== null) {
        // A provider answered with an error: the caller gets its code, the range named.
        answer(entry, errorResponse("null", outcome.code, scrub(why)));
        return;
      }
      // No provider answered: the gateway's "all providers failed" error, naming the part.
      withdraw(entry, why);
      return;
    }
  }
}

function rangeHint(range: BlockRange | null): string {
  return range === null
    ? ""
    : ` Try with this block range [${quantity(range.from)}, ${quantity(range.to)}].`;
}

/** The first part of `query` whose pieces of `size` (aligned, §12.4) are at most `pieces`. */
function firstPieces(query: LogQuery, size: number, pieces: number): BlockRange | null {
  if (pieces < 1) return null;
  const end = (Math.floor(query.from / size) + pieces) * size - 1;
  return end >= query.to ? null : { from: query.from, to: end };
}

/**
 * The size to cut `range` to: its own span when a provider in use takes it whole (an unknown
 * limit takes anything until the provider says otherwise), else the largest span one takes.
 */
function sizeFor(range: BlockRange, scope: LogQueryScope): number {
  const span = spanOf(range);
  const now = scope.deps.clock();
  const ranges = providersInUse(scope.network, scope.context).map((provider) =>
    logsRangeOf(provider, scope.learned, now),
  );
  if (ranges.length === 0 || ranges.some((blocks) => blocks >= span)) return span;
  return Math.max(1, ...ranges);
}

/**
 * The providers a log query's pieces go to first: the candidate primaries, else the candidate
 * backups, else (every one blacklisted) every provider that serves the method.
 */
function providersInUse(network: Network, context: SelectionContext): Provider[] {
  const candidates = network.providers.filter(
    (provider) => whyNotCandidate(provider, GET_LOGS, context) === null,
  );
  const primaries = candidates.filter((provider) => !provider.backup);
  if (primaries.length > 0) return primaries;
  if (candidates.length > 0) return candidates;
  return network.providers.filter((provider) =>
    methodPermitted(GET_LOGS, provider.methodsDeny ?? [], provider.methodsAllow),
  );
}

const NOT_SHARED = () => Promise.resolve();
