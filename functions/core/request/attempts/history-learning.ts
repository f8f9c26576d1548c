import type { CallInfo } from "../../classify/verdict.ts";
import type { Network } from "../../config/network-model.ts";
import type { LearnedBound } from "../../history/bounds.ts";
import { type HistoryNeed, type HistoryResource, historyNeedOf } from "../../history/resources.ts";
import { oldestKept, resourceNamed, unavailableAnswer } from "../../history/unavailable.ts";
import { BLOCK_NUMBERS_BY_HASH_KEPT, HISTORY_WRITE_SPACING_MS } from "../../policies.ts";
import type { StateStore, Telemetry } from "../../ports.ts";
import type { NetworkState } from "../../routing/network-state.ts";
import type { StateCache } from "../../routing/state-cache.ts";
import { mayRaiseHead } from "../head/observed-head.ts";
import { giveAttemptBack, keep } from "../open-call.ts";
import type { AttemptGroup, KeptAnswer, OpenCall, RequestScope } from "../vocabulary.ts";
import type { AttemptJudgement } from "./judge.ts";

/**
 * What attempts teach about providers' history (docs/behaviour.md §16.3): a pruned-history
 * answer about block B sets that provider's bound for the resource above B (or at the oldest
 * block the answer names), in this container at once and in the shared state for every other.
 * A result at a block a lesson left out (the provider was asked last, §16.2) proves the lesson
 * wrong and forgets it. The call moves on with its attempt given back: a refusal of history is
 * no failed attempt.
 * Block hashes seen in quorum members' answers are remembered with their numbers, so a call
 * naming its block by hash (EIP-1898) is routed by the block's number.
 */

export interface HistoryLearningDeps {
  readonly cache: StateCache;
  readonly store: StateStore;
  readonly telemetry: Telemetry;
  readonly clock: () => number;
}

export class HistoryLearning {
  readonly #deps: HistoryLearningDeps;
  /** `network \0 hash` → block number, oldest use first out. */
  readonly #numbers = new Map<string, number>();
  /** `network \0 provider \0 resource` → when this container last wrote that bound (ms). */
  readonly #writtenAt = new Map<string, number>();
  /** Per request, its state with what its attempts taught so far. */
  readonly #taught = new WeakMap<RequestScope, NetworkState>();
  /** The gateway's own "not available anywhere" answers kept as a call's fallback. */
  readonly #ownAnswers = new WeakSet<KeptAnswer>();

  constructor(deps: HistoryLearningDeps) {
    this.#deps = deps;
  }

  /** The number of a block this container knows by its hash, or null. */
  numberOfHash(network: Network, state: NetworkState): (hash: string) => number | null {
    return (hash) => {
      const known = this.#numbers.get(`${network.name}\u0000${hash}`);
      if (known !== undefined) return known;
      const head = state.head;
      for (const block of [head?.latest, head?.safe, head?.finalized]) {
        if (block?.hash?.toLowerCase() === hash) return block.number;
      }
      return null;
    };
  }

  /** Learns from one judged attempt; called as the attempt is recorded. */
  record(scope: RequestScope, group: AttemptGroup, judgement: AttemptJudgement): void {
    // An attempt whose calls were all answered teaches no bound: only its answers are read.
    if (judgement.outcomes.some((outcome) => outcome.kind === "retry")) {
      this.#learnFromRetries(scope, group, judgement);
    }
    this.#proveAndRemember(scope, group, judgement);
  }

  /** Bounds learned from the calls refused as pruned; an own answer dropped for other failures. */
  #learnFromRetries(scope: RequestScope, group: AttemptGroup, judgement: AttemptJudgement): void {
    const { network, context } = scope;
    const provider = group.slot.provider.name;
    const numberOfHash = context.numberOfHash ?? (() => null);
    const refused = new Map<HistoryResource, { from: number; refusedAt: number }>();
    const unserved: Array<{ entry: OpenCall; need: HistoryNeed | null }> = [];
    judgement.outcomes.forEach((outcome, index) => {
      const entry = group.calls[index];
      if (entry === undefined) return;
      if (outcome.kind !== "retry" || outcome.verdict.outcome !== "pruned") {
        if (outcome.kind === "retry") this.#dropOwnAnswer(entry);
        return;
      }
      // A refusal of history is no failed attempt: the call keeps its attempts for the others.
      giveAttemptBack(entry);
      const need = historyNeedOf(entry.info.method, entry.info.params, numberOfHash);
      if (need !== null) {
        const from = learnedFrom(need, outcome.verdict.oldest, scope.quorumHead);
        const known = refused.get(need.resource);
        if (known === undefined || known.from < from) {
          refused.set(need.resource, { from, refusedAt: need.block });
        }
      }
      unserved.push({ entry, need });
    });
    const now = this.#deps.clock();
    // What earlier attempts of this request taught, for the clear error's oldest block kept.
    let state = this.#taught.get(scope) ?? context.state;
    for (const [resource, { from, refusedAt }] of refused) {
      const until = now + network.settings.history_bounds.learned_ttl_seconds * 1000;
      const bound: LearnedBound = { from, refusedAt, at: now, until };
      this.#learn(scope, provider, resource, bound);
      state = withLearned(state, provider, resource, bound);
    }
    this.#taught.set(scope, state);
    for (const { entry, need } of unserved) {
      this.#answerWhenNobodyKeeps({ ...scope, context: { ...context, state } }, entry, need);
    }
  }

  /**
   * Every provider of the call refused it as pruned and none is left to ask: the gateway's own
   * clear error stands as its answer unless a provider does better (§16.5).
   */
  #answerWhenNobodyKeeps(scope: RequestScope, entry: OpenCall, need: HistoryNeed | null): void {
    if (entry.next < entry.order.length) return;
    if (!entry.failures.every((failure) => failure.signature === "pruned")) return;
    const resource = need?.resource ?? resourceNamed(entry.info.method);
    const oldest = oldestKept(scope.network.providers, resource, scope.context);
    const block = need?.block ?? hashOf(entry.info) ?? "?";
    const text = unavailableAnswer(
      entry.call.rawId ?? "null",
      scope.network,
      resource,
      block,
      oldest,
    );
    // The gateway's own words, not the provider's: x-gateway-provider names nobody for them.
    const kept: KeptAnswer = { text, provider: "" };
    this.#ownAnswers.add(kept);
    keep(entry, kept);
  }

  /** A provider failed the call otherwise: "not available anywhere" would no longer be true. */
  #dropOwnAnswer(entry: OpenCall): void {
    if (entry.fallback !== null && this.#ownAnswers.has(entry.fallback)) keep(entry, null);
  }

  #learn(scope: RequestScope, provider: string, resource: HistoryResource, bound: LearnedBound) {
    const { network } = scope;
    const current = scope.context.state.history.get(provider)?.learned.get(resource);
    const inForce = current !== undefined && current.until > bound.at;
    if (inForce && current.from >= bound.from) return;
    this.#deps.cache.update(network.name, (state) => withLearned(state, provider, resource, bound));
    this.#deps.telemetry.count("history_bounds_learned", {
      network: network.name,
      provider,
      resource,
    });
    this.#deps.telemetry.log(
      "info",
      "provider does not keep the history asked for: bound learned",
      {
        network: network.name,
        provider,
        resource,
        refused_block: bound.refusedAt,
        keeps_from: bound.from,
      },
    );
    const key = `${network.name}\u0000${provider}\u0000${resource}`;
    const last = this.#writtenAt.get(key);
    // The first lesson is shared at once; later tightenings at most once per spacing.
    if (inForce && last !== undefined && bound.at - last < HISTORY_WRITE_SPACING_MS) return;
    this.#writtenAt.set(key, bound.at);
    scope.writes.push(
      this.#shared(network, () =>
        this.#deps.store.recordHistoryBound(network.name, provider, resource, bound),
      ),
    );
  }

  /** Results prove blocks a lesson left out; block answers of quorum members give hashes numbers. */
  #proveAndRemember(scope: RequestScope, group: AttemptGroup, judgement: AttemptJudgement) {
    if (judgement.okAnswers.length === 0) return;
    const { network, context } = scope;
    const provider = group.slot.provider.name;
    const learned = context.state.history.get(provider)?.learned;
    if (learned !== undefined && learned.size > 0) {
      const numberOfHash = context.numberOfHash ?? (() => null);
      for (const { info, member } of judgement.okAnswers) {
        // Only a result proves the block: an error judged the caller's may be a refusal in
        // words the caller wrote (a JS tracer's), and would let any caller erase lessons.
        if (typeof member !== "object" || member === null || !("result" in member)) continue;
        const need = historyNeedOf(info.method, info.params, numberOfHash);
        const bound = need === null ? undefined : learned.get(need.resource);
        if (need === null || bound === undefined || bound.from <= need.block) continue;
        this.#forget(scope, provider, need.resource, need.block);
      }
    }
    if (!mayRaiseHead(provider, group.slot.emergency, context)) return;
    for (const { member } of judgement.okAnswers) this.#remember(network, member);
  }

  /** A provider served a block its lesson left out (asked last, §16.2): the lesson is wrong. */
  #forget(scope: RequestScope, provider: string, resource: HistoryResource, block: number) {
    const { network } = scope;
    this.#deps.cache.update(network.name, (state) => withoutLearned(state, provider, resource));
    this.#deps.telemetry.log("info", "provider served history it had refused: lesson forgotten", {
      network: network.name,
      provider,
      resource,
      served_block: block,
    });
    scope.writes.push(
      this.#shared(network, () =>
        this.#deps.store.forgetHistoryBound(network.name, provider, resource, block),
      ),
    );
  }

  #remember(network: Network, member: unknown): void {
    const result = (member as { result?: unknown } | null)?.result;
    const first = Array.isArray(result) ? result[0] : result;
    if (typeof first !== "object" || first === null) return;
    const fields = first as Record<string, unknown>;
    const hash = Array.isArray(result) ? fields.blockHash : (fields.hash ?? fields.blockHash);
    const number = Array.isArray(result)
      ? fields.blockNumber
      : fields.hash === undefined
        ? fields.blockNumber
        : fields.number;
    if (typeof hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(hash)) return;
    if (typeof number !== "string" || !/^0x[0-9a-fA-F]{1,13}$/.test(number)) return;
    const key = `${network.name}\u0000${hash.toLowerCase()}`;
    this.#numbers.delete(key);
    this.#numbers.set(key, Number.parseInt(number, 16));
    if (this.#numbers.size > BLOCK_NUMBERS_BY_HASH_KEPT) {
      const oldest = this.#numbers.keys().next().value;
      if (oldest !== undefined) this.#numbers.delete(oldest);
    }
  }

  /** A shared write that never rejects: a failure is logged and counted, the local copy stands. */
  #shared(network: Network, write: () => Promise<void>): Promise<void> {
    return write().catch((error: unknown) => {
      this.#deps.telemetry.log("warn", "state store write failed: kept locally", {
        network: network.name,
        error: error instanceof Error ? error.message : String(error),
      });
      this.#deps.telemetry.count("state_store_errors", { network: network.name });
    });
  }
}

/**
 * The bound a refusal of `need` teaches: the block after it, or the oldest block the answer
 * names when that is later and no later than any block known to exist (a provider naming a
 * far-future block would otherwise leave itself out of everything).
 */
export function learnedFrom(
  need: HistoryNeed,
  oldest: number | undefined,
  knownHead: number | null,
): number {
  const after = need.block + 1;
  if (oldest === undefined || oldest <= after) return after;
  return knownHead !== null && oldest > knownHead ? after : oldest;
}

function hashOf(info: CallInfo): string | null {
  const text = JSON.stringify(info.params ?? null);
  return /0x[0-9a-fA-F]{64}/.exec(text)?.[0]?.toLowerCase() ?? null;
}

function withLearned(
  state: NetworkState,
  provider: string,
  resource: HistoryResource,
  bound: LearnedBound,
): NetworkState {
  const history = new Map(state.history);
  const current = history.get(provider) ?? { learned: new Map(), probe: null };
  const learned = new Map(current.learned);
  const stored = learned.get(resource);
  if (stored === undefined || stored.until <= bound.at || stored.from < bound.from) {
    learned.set(resource, bound);
  }
  history.set(provider, { ...current, learned });
  return { ...state, history };
}

function withoutLearned(
  state: NetworkState,
  provider: string,
  resource: HistoryResource,
): NetworkState {
  const current = state.history.get(provider);
  if (current === undefined) return state;
  const learned = new Map(current.learned);
  learned.delete(resource);
  const history = new Map(state.history);
  history.set(provider, { ...current, learned });
  return { ...state, history };
}
