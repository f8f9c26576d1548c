import { publicationDelayMs, servedHeadAt } from "../chain/chain-head.ts";
import type { Network } from "../config/network-model.ts";
import { callsOf, errorResponse, parseRequest } from "../jsonrpc/jsonrpc.ts";
import { methodSpec } from "../methods/catalogue.ts";
import { DEADLINE_MARGIN_MS } from "../policies.ts";
import type { UpstreamResult } from "../ports.ts";
import { batchLimitOf } from "../routing/learned-limits.ts";
import type { SelectionContext } from "../routing/selection.ts";
import { admitCalls, unpinnedOrder } from "./admit.ts";
import { type AttemptLoop, runAttempts } from "./attempts/attempts.ts";
import { learnBatchLimit, refusedAsTooLarge } from "./attempts/batch-limits.ts";
import { upstreamCallBudget } from "./attempts/call-budget.ts";
import { HealthRecorder, settleWrites } from "./attempts/health-recorder.ts";
import { judgeAttempt } from "./attempts/judge.ts";
import { failureSignature, settlePenalties } from "./attempts/penalties.ts";
import { ServableMethods } from "./attempts/servable.ts";
import { AnswerCache, withCacheOutcome } from "./cache/answer-cache.ts";
import { serveFilterCalls } from "./filters/filters.ts";
import { HeadPublisher } from "./head/head-publication.ts";
import { holdBackAboveServedHead, uncachedWhenHeld } from "./head/held-back.ts";
import { answerLoneCall, loneServedHeadCall } from "./head/lone-block-number.ts";
import { mayRaiseHead, ObservedHeads } from "./head/observed-head.ts";
import { answerFromServedHead, needsFreshHead, reachableBlocks } from "./head/served-head.ts";
import { settleUnpinnedRetries, unpinnedRetries } from "./head/unpinned-retry.ts";
import { Hedging } from "./hedge/hedging.ts";
import { type InternalCall, logQueriesOf, serveLogQueries } from "./logs/logs-queries.ts";
import { logAttemptDeps, type ReachDeps, runLogAttempts } from "./logs/logs-reach.ts";
import { reportRequest } from "./report.ts";
import { assembleResponse, JSON_HEADERS, unknownNetwork } from "./respond.ts";
import { requestScope } from "./scope.ts";
import { NO_SENDS, startSends } from "./send/broadcast.ts";
import {
  isSend,
  providerKnowsTransaction,
  settleSentTransactions,
} from "./send/sent-transactions.ts";
import type { AttemptGroup, AttemptRecord, GatewayResponse, RequestScope } from "./vocabulary.ts";

export type { GatewayResponse } from "./vocabulary.ts";

import type { GatewayDeps, RpcOptions } from "./gateway-deps.ts";

export type { GatewayDeps, RpcOptions } from "./gateway-deps.ts";

/**
 * The request path (docs/architecture.md "The request pipeline"): admit the calls, walk each
 * over its providers in rounds of attempts, judge every answer, record what it means for the
 * provider, and assemble the answer. Each step is a module of `core/request/`.
 */
export class Gateway {
  readonly #deps: GatewayDeps;
  readonly #health: HealthRecorder;
  readonly #servable = new ServableMethods();
  readonly #observed = new ObservedHeads();
  readonly #heads: HeadPublisher;
  readonly #answers: AnswerCache;
  readonly #hedging: Hedging;
  /** The log-attempt path's parts; the status route reads their counts (docs/behaviour.md §12.12). */
  readonly logAttempts: ReachDeps;

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    this.#health = new HealthRecorder(deps);
    this.logAttempts = logAttemptDeps(this.#observed, this.#health, deps);
    this.#heads = new HeadPublisher({
      ...deps,
      observed: this.#observed,
      demoted: (network, now) => this.#health.demoted(network, now),
    });
    this.#answers = new AnswerCache(deps);
    this.#hedging = new Hedging({
      clock: deps.clock,
      telemetry: deps.telemetry,
      timer: deps.hedgeTimer,
    });
  }

  /** This container's answer cache: hits and misses by class, and its memory use. */
  answerCache(network: string) {
    return { classes: this.#answers.counts(network), memory: this.#answers.memoryUsage() };
  }

  /** Providers of the network this container has rotated away from (force-rotate). */
  demoted(network: Network): ReadonlySet<string> {
    return this.#health.demoted(network, this.#deps.clock());
  }

  /**
   * Asks one quorum member of `networkName` for its head now and publishes it as the served
   * head's polls do (the head follower's look for a block when it is due); the number, or null.
   */
  async pollHead(networkName: string, timeoutMs: number): Promise<number | null> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return null;
    const state = await this.#deps.cache.get(network.name, { freshHead: true });
    return this.#heads.pollNow(network, state, model.checkIntervalSeconds, timeoutMs);
  }

  /**
   * The served head of `networkName` now, as `eth_blockNumber` answers it, without ever asking
   * a provider (the head follower's look: its own polls find new blocks); null while there is
   * none. The container's background poll is paced by it as by any request.
   */
  async servedHead(networkName: string): Promise<number | null> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return null;
    const state = await this.#deps.cache.get(network.name, { freshHead: true });
    this.#heads.afterRequest(network, state, model.checkIntervalSeconds);
    const delay = publicationDelayMs(network.settings.head_cache_ms);
    return servedHeadAt(state.head, this.#deps.clock(), delay);
  }

  /** Heads this container saw in answers that are still in force, by provider. */
  observedHeads(network: Network, context: SelectionContext): ReadonlyMap<string, number> {
    return this.#observed.inForce(network, context);
  }

  /** The highest block each provider can have reached by now, as block-aware routing sees it. */
  reachable(network: Network, context: SelectionContext): (provider: string) => number | null {
    return reachableBlocks(
      context.state.quorum,
      this.#observed.sightings(network, context),
      context.now,
      network.settings.block_time_seconds * 1000,
    );
  }

  async handleRpc(
    networkName: string,
    body: string,
    options: RpcOptions = {},
  ): Promise<GatewayResponse> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return unknownNetwork(networkName, [...model.networks.keys()]);
    const { settings } = network;
    const request = parseRequest(body, {
      maxBodyBytes: settings.max_body_bytes,
      maxBatch: settings.max_batch,
      maxDepth: settings.max_json_depth,
    });
    if (request.kind === "error") {
      return {
        status: request.status,
        headers: { ...JSON_HEADERS },
        body: errorResponse(request.rawId, request.code, request.message),
      };
    }
    const { clock } = this.#deps;
    const started = options.startedAt ?? clock();
    const deadline =
      started +
      Math.min(
        settings.request_deadline_ms,
        (options.remainingMs ?? Infinity) - DEADLINE_MARGIN_MS,
      );
    // The served head needs a copy of the chain position no older than head_cache_ms.
    const freshHead = needsFreshHead(callsOf(request));
    const state = await this.#deps.cache.get(network.name, { freshHead });
    const alone = options.internal ? null : loneServedHeadCall(request, network, state, started);
    if (alone !== null) {
      this.#heads.afterRequest(network, state, model.checkIntervalSeconds);
      return answerLoneCall({ network, alone, state, started }, this.#deps);
    }
    const scope = requestScope(model, network, request, body, state, started, {
      random: this.#deps.random,
      demoted: (target, now) => this.#health.demoted(target, now),
      observed: this.#observed,
    });
    const { open, immediate } = admitCalls(request, network, scope, this.#deps.guards);
    const fromHead = answerFromServedHead(open, scope.servedHead);
    const cached = await this.#answers.lookup(model, network, request, open, state.head, options);
    // Most requests send no transaction and hold no log query: those steps, and their awaits,
    // are skipped for them.
    const sending = open.some(isSend);
    const sends = sending
      ? await startSends(open, network.name, { ...this.#deps, settings })
      : NO_SENDS;
    const internally = (text: string, internal: InternalCall) =>
      this.handleRpc(network.name, text, {
        ...options,
        startedAt: started,
        internal,
        parentCache: cached,
      });
    // Filters the gateway holds are answered from its own reads (docs/behaviour.md §14).
    const filterCalls = await serveFilterCalls(open, {
      ...scope,
      caller: options.caller,
      deadline,
      budget: upstreamCallBudget(settings, sends.copies),
      deps: this.#deps,
      handle: internally,
    });
    const spent = sends.copies + filterCalls;
    // Log queries are served apart, as internal calls through this same pipeline.
    const logQueries = options.internal ? [] : logQueriesOf(open);
    const budget = options.internal?.budget;
    const routed =
      logQueries.length === 0 ? open : open.filter((entry) => !logQueries.includes(entry));
    const loop: AttemptLoop = {
      upstream: this.#deps.upstream,
      clock,
      deadline,
      settings: budget === undefined ? settings : { ...settings, max_upstream_calls: budget },
      configuredMaxUpstreamCalls: settings.max_upstream_calls,
      single: scope.single,
      body,
      open: routed,
      batchLimit: (provider) => batchLimitOf(provider, scope.batchLimits, clock()),
      onResult: (group, result, cutShort) => this.#record(scope, group, result, cutShort),
      callsMade: spent,
      hedging: this.#hedging.forRequest(network),
    };
    let routedAttempts = await runLogAttempts(loop, scope, this.logAttempts, options);
    const retries = unpinnedRetries(routed, (call) =>
      unpinnedOrder(call, scope.ranked, scope.context),
    );
    if (retries.length > 0) {
      routedAttempts += await runAttempts({
        ...loop,
        open: retries.map(({ retry }) => retry),
        callsMade: spent + routedAttempts,
        hedging: undefined,
      });
      settleUnpinnedRetries(retries);
    }
    const attempts =
      filterCalls +
      routedAttempts +
      (logQueries.length === 0
        ? 0
        : await serveLogQueries(logQueries, {
            ...scope,
            knownHead: scope.quorumHead,
            budget: upstreamCallBudget(settings, spent + routedAttempts),
            deadline,
            deps: this.#deps,
            handle: internally,
          }));
    if (sending) {
      await settleSentTransactions(open, (call, hash) =>
        providerKnowsTransaction(this.#deps.upstream, call, hash, {
          timeoutMs: Math.min(settings.request_timeout_ms, deadline - clock()),
          maxResponseBytes: settings.max_response_bytes,
        }),
      );
    }
    const { servedHead } = scope;
    this.#heads.settleRequest(
      network,
      state,
      model.checkIntervalSeconds,
      { open, view: servedHead },
      fromHead,
    );
    if (sending) await sends.settle(deadline);
    this.#answers.store(model, cached);
    const held = holdBackAboveServedHead(open, network, scope.pin, this.#deps.telemetry);
    settlePenalties(scope.held, scope.context, {
      telemetry: this.#deps.telemetry,
      lastSuccessAt: (provider) => this.#health.lastSuccessAt(network, provider),
      penalise: (attempt, verdict, methods) => this.#health.penalise(attempt, verdict, methods),
    });
    if (scope.writes.length > 0) await settleWrites(scope.writes, this.#deps.wait);

    const parts = { network, request, open, immediate, used: scope.used, attempts };
    const response = uncachedWhenHeld(
      withCacheOutcome(
        assembleResponse({ ...parts, servedHead: servedHead.answer }, this.#deps),
        cached,
        request,
      ),
      held,
    );
    if (options.internal) {
      options.internal.served = { entry: open[0], upstreamCalls: attempts, used: scope.used };
      return response;
    }
    reportRequest(this.#deps.telemetry, {
      network,
      calls: callsOf(request).length,
      open,
      routing: { ranked: scope.ranked, context: scope.context },
      used: scope.used,
      attempts,
      status: response.status,
      elapsedMs: clock() - started,
    });
    return response;
  }

  /** Judges one attempt, settles or reopens its calls, and records it against the provider. */
  #record(
    scope: RequestScope,
    group: AttemptGroup,
    result: UpstreamResult,
    cutShort: boolean,
  ): void {
    const { network, model } = scope;
    const { slot, calls } = group;
    const provider = slot.provider.name;
    const judgement = judgeAttempt(result, calls, group.alone, {
      quorumHead: scope.quorumHead,
      chainId: network.chainId,
      innerErrors: model.innerErrors,
      now: this.#deps.clock(),
      servable: (method) => this.#servable.servable(network, method),
      headToleranceBlocks: network.settings.head_tolerance_blocks,
      requestSingle: scope.single,
    });
    if (refusedAsTooLarge(group, judgement)) {
      scope.writes.push(learnBatchLimit(network, group, judgement, scope.batchLimits, this.#deps));
      return;
    }
    judgement.outcomes.forEach((outcome, index) => {
      const entry = calls[index];
      // A hedged read's other attempt may have answered the call already: that answer stands.
      if (entry === undefined || entry.answer !== null) return;
      if (outcome.kind === "answer") {
        entry.answer = outcome.text;
        entry.answeredBy = slot;
      } else if (outcome.kind === "inner_error") {
        entry.fallback = { text: outcome.text, provider };
        entry.lastError = `inner error ${outcome.detail}`;
      } else {
        if (outcome.errorAnswer !== null) entry.fallback = { text: outcome.errorAnswer, provider };
        entry.lastError = `${provider}: ${outcome.verdict.detail}`;
        entry.failures.push({ provider, signature: failureSignature(outcome.verdict) });
      }
    });
    for (const { info } of judgement.okAnswers) this.#servable.answered(network, info.method);
    if (mayRaiseHead(provider, slot.emergency, scope.context)) {
      for (const answered of judgement.okAnswers) {
        this.#observed.observeAnswer(network.name, provider, answered, scope.context.now);
        this.logAttempts.checks.keepAnswered(network.name, answered.info, answered.member);
      }
    }
    const attempt: AttemptRecord = {
      network,
      context: scope.context,
      slot,
      elapsedMs: result.elapsedMs,
      heavy:
        calls.length > 1 || calls.some((entry) => methodSpec(entry.info.method).weight === "heavy"),
      callersCodeOnly: calls.every((entry) => methodSpec(entry.info.method).runsCallersCode),
      writes: scope.writes,
    };
    if (judgement.failure !== null) {
      this.#health.noteFailure(attempt, judgement.failure);
      scope.held.push({
        attempt,
        verdict: judgement.failure,
        calls: calls.filter((_, index) => judgement.outcomes[index]?.kind === "retry"),
        cutShort,
      });
    }
    // x-gateway-provider names providers whose answers the caller gets, not ones set aside.
    const answered = judgement.outcomes.some((outcome) => outcome.kind === "answer");
    if (answered && !scope.used.includes(provider)) scope.used.push(provider);
    if (judgement.success !== null) this.#health.succeeded(attempt, judgement.success);
  }
}
