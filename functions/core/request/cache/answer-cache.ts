import { type ChainHead, cacheGeneration } from "../../chain/chain-head.ts";
import type { GatewayModel, Network } from "../../config/network-model.ts";
import { parseJsonOrUndefined } from "../../jsonrpc/json-raw.ts";
import { type AcceptedRequest, callsOf, isCall } from "../../jsonrpc/jsonrpc.ts";
import type { SharedAnswerStore, Telemetry } from "../../ports.ts";
import type { GuardCounts } from "../../status/guards.ts";
import { answer } from "../open-call.ts";
import type { AnswerClass, GatewayResponse, OpenCall } from "../vocabulary.ts";
import { AnswerMemory, entryBytes, type MemoryAnswer } from "./answer-memory.ts";
import { MinuteWrites, RequestCacheBounds } from "./cache-bounds.ts";
import {
  ANSWER_CLASSES,
  answerKey,
  type CallPlan,
  classifyAnswer,
  isResultMember,
  knownFinality,
  planCall,
} from "./cache-class.ts";
import { computedFromCaller } from "./callers-answer.ts";

/**
 * The answer cache in the request pipeline (docs/behaviour.md §11): before any upstream call,
 * each call is looked up in this container's memory, then (immutable answers only) in the
 * shared store; a hit is the stored provider text, which the responder gives the caller's id.
 * After the attempts, answers providers gave are kept as their class allows, within the
 * request's and the container's bounds (`cache-bounds.ts`). Every call gets a status for
 * `x-gateway-cache`, and hits and misses are counted by class.
 */

export type CacheStatus = "hit-memory" | "hit-shared" | "miss" | "bypass";

/** The block number of `eth_blockNumber` is the served head's to give, never a cached one. */
const ANSWERED_BY_SERVED_HEAD = new Set(["eth_blockNumber"]);

interface LookedUp {
  readonly entry: OpenCall;
  readonly plan: CallPlan;
  /** The key in both tiers (chain, method, params); the memory key adds the network. */
  readonly key: string;
  status: CacheStatus;
  /** The class of the answer: the stored one's for a hit, the provider's once judged. */
  class: AnswerClass;
  /** False for an answer computed from the caller's own input: never in the shared tier. */
  readonly shareable: boolean;
}

/** One request's dealings with the cache, from the lookup to the response headers. */
export interface CacheLookup {
  readonly network: Network;
  readonly single: boolean;
  /** The chain position when finality is known, as of the lookup. */
  readonly head: ChainHead | null;
  readonly calls: ReadonlyMap<number, LookedUp>;
  /** What the request may still add to the cache; an internal call's is its request's. */
  readonly bounds: RequestCacheBounds;
}

export interface AnswerCacheDeps {
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /** The shared tier; without it only this container's memory is used. */
  readonly sharedAnswers?: SharedAnswerStore;
  /** Masks secret values in an answer (an upstream may echo its own URL) before it is kept. */
  readonly scrubAnswer: (text: string) => string;
  /** Where a bound that kept an answer out is counted. */
  readonly guards: GuardCounts;
}

export interface ClassCounts {
  readonly hits: number;
  readonly misses: number;
  /** hits / (hits + misses); null before any. */
  readonly ratio: number | null;
}

export class AnswerCache {
  readonly #deps: AnswerCacheDeps;
  readonly #memory = new AnswerMemory();
  readonly #minuteWrites = new MinuteWrites();
  readonly #counts = new Map<string, Map<AnswerClass, { hits: number; misses: number }>>();

  constructor(deps: AnswerCacheDeps) {
    this.#deps = deps;
  }

  /**
   * Answers what the cache holds (sets `answer` of each hit) and notes every call's status.
   * Calls already answered, or whose answer can never be kept, are bypassed. An internal call
   * (a piece of a log query) spends the bounds of the request it is part of.
   */
  lookup(
    model: GatewayModel,
    network: Network,
    request: AcceptedRequest,
    open: readonly OpenCall[],
    head: ChainHead | null,
    options: { readonly parentCache?: CacheLookup } = {},
  ): CacheLookup | Promise<CacheLookup> {
    const now = this.#deps.clock();
    const known = knownFinality(head, now, model.checkIntervalSeconds);
    const calls = new Map<number, LookedUp>();
    const sharedWanted: LookedUp[] = [];
    for (const entry of open) {
      const { method, params } = entry.info;
      const plan = planCall(method, params, known);
      const looked: LookedUp = {
        entry,
        plan,
        key: answerKey(network.chainId, method, params, cacheGeneration(head)),
        status: "bypass",
        class: "never",
        shareable: !computedFromCaller(method, params),
      };
      calls.set(entry.call.position, looked);
      if (
        !network.settings.cache ||
        entry.answer !== null ||
        // A notification gets no answer to keep or to serve.
        entry.call.rawId === null ||
        plan.kind === "never" ||
        !keyIsFaithful(params) ||
        ANSWERED_BY_SERVED_HEAD.has(method)
      ) {
        continue;
      }
      const kept = this.#memory.get(memoryKey(network, looked.key), known, now);
      if (kept !== null) {
        answer(entry, kept.text);
        looked.status = "hit-memory";
        looked.class = kept.class;
        continue;
      }
      looked.status = "miss";
      const mayBeShared =
        looked.shareable &&
        (plan.kind === "by-answer" || (plan.kind === "known" && plan.class === "immutable"));
      if (mayBeShared && this.#deps.sharedAnswers !== undefined) sharedWanted.push(looked);
    }
    const bounds =
      options.parentCache?.bounds ??
      new RequestCacheBounds({
        sharedWrites: network.settings.cache_shared_writes_per_request,
        memoryBytes: model.cacheMemoryRequestBytes,
      });
    const lookup = { network, single: request.kind === "single", head: known, calls, bounds };
    // Only the shared tier is waited for: a lookup memory settles costs no turn of the loop.
    if (sharedWanted.length === 0) return lookup;
    return this.#readShared(model, network, sharedWanted, bounds).then(() => lookup);
  }

  /**
   * After the attempts: keeps the answers providers gave to calls that missed, as their class
   * and the bounds allow (immutable ones in the shared store too, beside the answer, never
   * awaited), and counts hits and misses by class.
   */
  store(model: GatewayModel, lookup: CacheLookup): void {
    const { network } = lookup;
    const now = this.#deps.clock();
    for (const looked of lookup.calls.values()) {
      if (looked.status === "hit-memory" || looked.status === "hit-shared") {
        this.#count(network, looked.class, "hits");
        continue;
      }
      // The class of a lone call's answer sets GET mode's Cache-Control, cached or not.
      if (looked.status === "bypass" && !lookup.single) continue;
      // An answer to the call as written is about another block than the pinned key's.
      if (looked.entry.sentUnpinned) continue;
      const text = looked.entry.answer;
      // Only an answer that may be kept is read (a parse of a large answer is not free).
      const member =
        text === null || looked.plan.kind === "never" ? undefined : memberOf(looked.entry, text);
      const verdict = classifyAnswer(looked.plan, member, lookup.head);
      looked.class = verdict.class;
      if (looked.status === "bypass") continue;
      this.#count(network, verdict.class, "misses");
      if (text === null || verdict.class === "never") continue;
      const kept = ownCopy(this.#deps.scrubAnswer(text));
      const blockTimeMs = network.settings.block_time_seconds * 1000;
      this.#keepInMemory(model, lookup, looked.key, {
        text: kept,
        class: verdict.class,
        storedAt: now,
        expiresAt: verdict.class === "immutable" ? Number.POSITIVE_INFINITY : now + blockTimeMs,
        height: verdict.height,
        blockHash: verdict.blockHash,
      });
      if (verdict.class === "immutable") this.#share(model, lookup, looked, kept, now);
    }
  }

  /** This container's hits and misses for a network, by class. */
  counts(network: string): Readonly<Record<AnswerClass, ClassCounts>> {
    const counts = this.#counts.get(network);
    return Object.fromEntries(
      ANSWER_CLASSES.map((name) => {
        const { hits, misses } = counts?.get(name) ?? { hits: 0, misses: 0 };
        const total = hits + misses;
        return [name, { hits, misses, ratio: total === 0 ? null : hits / total }];
      }),
    ) as Record<AnswerClass, ClassCounts>;
  }

  /** Bytes and entries in this container's memory tier. */
  memoryUsage(): { readonly bytes: number; readonly entries: number } {
    return this.#memory.usage();
  }

  async #readShared(
    model: GatewayModel,
    network: Network,
    wanted: readonly LookedUp[],
    bounds: RequestCacheBounds,
  ): Promise<void> {
    const shared = this.#deps.sharedAnswers;
    if (shared === undefined) return;
    const keys = [...new Set(wanted.map((looked) => looked.key))];
    const found = await shared.read(network.name, keys).catch((error: unknown) => {
      this.#deps.telemetry.log("warn", "shared answer cache unreadable: asking providers", {
        network: network.name,
        error: error instanceof Error ? error.message : String(error),
      });
      return new Map<string, string>();
    });
    const now = this.#deps.clock();
    for (const looked of wanted) {
      const text = found.get(looked.key);
      if (text === undefined) continue;
      // Only a result is ever stored; anything else in the item (a corrupt or foreign write)
      // is a miss, never an answer.
      if (!isResultMember(parseJsonOrUndefined(text))) {
        this.#deps.telemetry.log("warn", "shared answer cache item is not an answer: ignored", {
          network: network.name,
        });
        continue;
      }
      answer(looked.entry, text);
      looked.status = "hit-shared";
      looked.class = "immutable";
      this.#keepInMemory(model, { network, bounds }, looked.key, {
        text,
        class: "immutable",
        storedAt: now,
        expiresAt: Number.POSITIVE_INFINITY,
        height: null,
        blockHash: null,
      });
    }
  }

  /** Keeps an answer in memory when the request's memory allowance has room for it. */
  #keepInMemory(
    model: GatewayModel,
    lookup: Pick<CacheLookup, "network" | "bounds">,
    key: string,
    entry: MemoryAnswer,
  ): void {
    const where = memoryKey(lookup.network, key);
    if (!lookup.bounds.takeMemory(entryBytes(where, entry.text))) {
      this.#deps.guards.refused(lookup.network.name, "cache_memory_request_bytes");
      return;
    }
    this.#memory.set(where, entry, model.cacheMemoryBytes);
  }

  /**
   * Writes an immutable answer to the shared tier, beside the answer, unless the caller
   * computed it or a bound says no: the request's writes, this container's minute, the size of
   * the compressed item (decided by the store).
   */
  #share(
    model: GatewayModel,
    lookup: CacheLookup,
    looked: LookedUp,
    text: string,
    now: number,
  ): void {
    const shared = this.#deps.sharedAnswers;
    if (shared === undefined) return;
    const { network } = lookup;
    const refused = !looked.shareable
      ? "cache_callers_answer"
      : !lookup.bounds.takeSharedWrite()
        ? "cache_shared_writes_per_request"
        : !this.#minuteWrites.take(now, model.cacheSharedWritesPerMinute)
          ? "cache_shared_writes_per_minute"
          : null;
    if (refused !== null) {
      this.#deps.guards.refused(network.name, refused);
      return;
    }
    const { cache_shared_ttl_seconds: ttlSeconds, cache_shared_item_bytes: maxBytes } =
      network.settings;
    shared.write(network.name, looked.key, text, now + ttlSeconds * 1000, maxBytes).then(
      (kept) => {
        if (!kept) this.#deps.guards.refused(network.name, "cache_shared_item_bytes");
      },
      (error: unknown) =>
        this.#deps.telemetry.log("warn", "answer not kept in the shared cache", {
          network: network.name,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  }

  #count(network: Network, answerClass: AnswerClass, kind: "hits" | "misses"): void {
    let counts = this.#counts.get(network.name);
    if (counts === undefined) {
      counts = new Map();
      this.#counts.set(network.name, counts);
    }
    const current = counts.get(answerClass) ?? { hits: 0, misses: 0 };
    current[kind]++;
    counts.set(answerClass, current);
    this.#deps.telemetry.count(kind === "hits" ? "cache_hits" : "cache_misses", {
      network: network.name,
      class: answerClass,
    });
  }
}

/**
 * The response with what the cache did: `x-gateway-cache` (under `diagnostic_headers`) and the
 * lone call's class, which GET mode turns into Cache-Control.
 */
export function withCacheOutcome(
  response: GatewayResponse,
  lookup: CacheLookup,
  request: AcceptedRequest,
): GatewayResponse {
  const headers = lookup.network.settings.diagnostic_headers
    ? { ...response.headers, "x-gateway-cache": cacheHeader(lookup, request) }
    : response.headers;
  return { ...response, headers, cacheClass: answerClassOf(lookup) };
}

/** `x-gateway-cache`: each member's status in the caller's order, comma-separated. */
function cacheHeader(lookup: CacheLookup, request: AcceptedRequest): string {
  return callsOf(request)
    .map((member) =>
      isCall(member) ? (lookup.calls.get(member.position)?.status ?? "bypass") : "bypass",
    )
    .join(",");
}

/** The class of a lone call's answer (GET mode's Cache-Control); `never` for a batch. */
function answerClassOf(lookup: CacheLookup): AnswerClass {
  if (!lookup.single) return "never";
  return lookup.calls.get(0)?.class ?? "never";
}

/** The answer parsed: as its attempt's judge parsed it, when it is still that text. */
function memberOf(entry: OpenCall, text: string): unknown {
  const parsed = entry.parsedAnswer;
  return parsed !== null && parsed.text === text ? parsed.member : parseJsonOrUndefined(text);
}

function memoryKey(network: Network, key: string): string {
  return `${network.name}\n${key}`;
}

/**
 * A flat copy of the text: a batch member's text is a slice of the whole upstream body, and
 * keeping the slice would keep the whole body alive beyond the byte bound.
 */
function ownCopy(text: string): string {
  return Buffer.from(text, "utf8").toString("utf8");
}

/**
 * Whether the params' JSON text names them exactly: a number JavaScript cannot hold exactly
 * (over 2^53, or with a fraction) would give two different calls one key.
 */
function keyIsFaithful(params: unknown): boolean {
  if (typeof params === "number") return Number.isSafeInteger(params);
  if (typeof params !== "object" || params === null) return true;
  for (const member of Object.values(params)) if (!keyIsFaithful(member)) return false;
  return true;
}
