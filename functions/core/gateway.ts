import { ErrorCode, errorResponse, parseRequest } from "./jsonrpc.ts";
import { methodSpec } from "./methods/catalogue.ts";
import type { GatewayModel, Network, Provider } from "./network-model.ts";
import { type NetworkState, quorumInForce } from "./network-state.ts";
import { DEADLINE_MARGIN_MS, HEALTH_WRITE_WAIT_MS, SUSPECT_TRAFFIC_WINDOW_MS } from "./policies.ts";
import type { StateStore, Telemetry, Upstream, UpstreamResult } from "./ports.ts";
import { type AcceptedRequest, admitCalls, callsOf } from "./request/admit.ts";
import { runAttempts } from "./request/attempts.ts";
import {
  type AttemptRecord,
  HealthRecorder,
  type HealthRecorderDeps,
} from "./request/health-recorder.ts";
import { type FailureVerdict, judgeAttempt } from "./request/judge.ts";
import { headStatedBy, mayRaiseHead, ObservedHeads } from "./request/observed-head.ts";
import type { OpenCall } from "./request/open-call.ts";
import type { AttemptGroup } from "./request/plan.ts";
import { assembleResponse, type GatewayResponse, JSON_HEADERS } from "./request/respond.ts";
import { ServableMethods } from "./request/servable.ts";
import { failureSignature, suspectRequest } from "./request/suspicion.ts";
import { explainRouting, rankProviders, type SelectionContext } from "./selection.ts";
import type { StateCache } from "./state-cache.ts";

export type { GatewayResponse } from "./request/respond.ts";

export interface GatewayDeps extends HealthRecorderDeps {
  readonly model: () => GatewayModel;
  readonly upstream: Upstream;
  readonly store: StateStore;
  readonly cache: StateCache;
  readonly random: () => number;
  readonly telemetry: Telemetry;
  /** Masks secret values in an answer to the caller (an upstream may echo its own URL). */
  readonly scrubAnswer: (text: string) => string;
}

export interface RpcOptions {
  /** When the handler started on this request (ms): config and state loading count too. */
  readonly startedAt?: number;
  /** Time left at `startedAt` before the platform cuts the request (Lambda remaining time). */
  readonly remainingMs?: number;
}

/** A failed attempt whose penalty waits for the end of the request. */
interface HeldPenalty {
  readonly attempt: AttemptRecord;
  readonly verdict: FailureVerdict;
  readonly calls: readonly OpenCall[];
  /** Its timeout was cut short by the request's deadline: a timeout then proves nothing. */
  readonly cutShort: boolean;
}

/** What one request's attempts share. */
interface RequestScope {
  readonly network: Network;
  readonly model: GatewayModel;
  readonly request: AcceptedRequest;
  readonly single: boolean;
  /** The providers in preference order for this request (drawn once, so a batch agrees). */
  readonly ranked: readonly Provider[];
  readonly context: SelectionContext;
  readonly quorumHead: number | null;
  /** Providers that answered, in order of use (x-gateway-provider). */
  readonly used: string[];
  /** State writes started by this request: they run beside the retries, not before them. */
  readonly writes: Promise<unknown>[];
  readonly held: HeldPenalty[];
}

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

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    this.#health = new HealthRecorder(deps);
  }

  /** Providers of the network this container has rotated away from (force-rotate). */
  demoted(network: Network): ReadonlySet<string> {
    return this.#health.demoted(network, this.#deps.clock());
  }

  /** Heads this container saw in answers that are still in force, by provider. */
  observedHeads(network: Network, context: SelectionContext): ReadonlyMap<string, number> {
    return this.#observed.inForce(network, context);
  }

  async handleRpc(
    networkName: string,
    body: string,
    options: RpcOptions = {},
  ): Promise<GatewayResponse> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return unknownNetwork(networkName, model);
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
    const state = await this.#deps.cache.get(network.name);
    const scope = this.#scope(model, network, request, body, state, started);
    const { open, immediate } = admitCalls(request, network, scope.ranked, scope.context);
    const attempts = await runAttempts({
      upstream: this.#deps.upstream,
      clock,
      deadline,
      settings,
      single: scope.single,
      body,
      open,
      onResult: (group, result, cutShort) => this.#record(scope, group, result, cutShort),
    });
    this.#penalise(scope);
    await settleWrites(scope.writes);

    const response = assembleResponse(
      { network, request, open, immediate, used: scope.used, attempts },
      this.#deps,
    );
    this.#report(scope, open, attempts, response, clock() - started);
    return response;
  }

  #scope(
    model: GatewayModel,
    network: Network,
    request: AcceptedRequest,
    body: string,
    state: NetworkState,
    now: number,
  ): RequestScope {
    const context: SelectionContext = {
      network,
      state,
      now,
      checkIntervalSeconds: model.checkIntervalSeconds,
      demoted: this.#health.demoted(network, now),
    };
    return {
      network,
      model,
      request,
      single: request.kind === "single",
      ranked: rankProviders(network.providers, body, this.#deps.random),
      context,
      // Answers between monitor ticks may show a newer head than the snapshot: a null block
      // at or below it is stale all the same.
      quorumHead: maxOrNull(state.quorum?.head ?? null, this.#observed.highest(network, context)),
      used: [],
      writes: [],
      held: [],
    };
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
    const judgement = judgeAttempt(result, calls, scope.single, {
      quorumHead: scope.quorumHead,
      chainId: network.chainId,
      innerErrors: model.innerErrors,
      now: this.#deps.clock(),
      servable: (method) => this.#servable.servable(network, method),
    });
    judgement.outcomes.forEach((outcome, index) => {
      const entry = calls[index];
      if (entry === undefined) return;
      if (outcome.kind === "answer") entry.answer = outcome.text;
      else if (outcome.kind === "inner_error") {
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
      for (const { info, member } of judgement.okAnswers) {
        const block = headStatedBy(info, member);
        if (block !== null)
          this.#observed.observe(network.name, provider, block, scope.context.now);
      }
    }
    const attempt: AttemptRecord = {
      network,
      context: scope.context,
      slot,
      elapsedMs: result.elapsedMs,
      heavy:
        calls.length > 1 || calls.some((entry) => methodSpec(entry.info.method).weight === "heavy"),
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
    if (judgement.success !== null) {
      if (!scope.used.includes(provider)) scope.used.push(provider);
      this.#health.succeeded(attempt, judgement.success);
    }
  }

  /**
   * The penalties this request's failures earned, now that its calls are settled: none for a
   * call every provider failed the same way (the request is suspect), none for a timeout the
   * deadline cut short.
   */
  #penalise(scope: RequestScope): void {
    const { network, context } = scope;
    const servesOtherTraffic = (provider: string): boolean => {
      const lastSuccess = this.#health.lastSuccessAt(network, provider);
      if (lastSuccess !== undefined && context.now - lastSuccess <= SUSPECT_TRAFFIC_WINDOW_MS) {
        return true;
      }
      return (
        quorumInForce(context.state, context.now, context.checkIntervalSeconds) &&
        (context.state.quorum?.members.includes(provider) ?? false)
      );
    };
    const suspects = new Set<OpenCall>();
    for (const held of scope.held) {
      if (held.cutShort && held.verdict.outcome === "retry" && held.verdict.kind === "timeout") {
        continue;
      }
      const suspected = held.calls.filter((call) => suspectRequest(call, servesOtherTraffic));
      for (const call of suspected) suspects.add(call);
      if (suspected.length === held.calls.length) continue;
      this.#health.penalise(
        held.attempt,
        held.verdict,
        held.calls.filter((call) => !suspected.includes(call)).map((call) => call.info.method),
      );
    }
    for (const call of suspects) {
      this.#deps.telemetry.count("suspected_requests", { network: network.name });
      this.#deps.telemetry.log(
        "warn",
        "every provider failed a call the same way: nobody penalised",
        {
          network: network.name,
          method: call.info.method,
          providers: call.failures.map((failure) => failure.provider),
          failure: call.failures[0]?.signature,
        },
      );
    }
  }

  #report(
    scope: RequestScope,
    open: readonly OpenCall[],
    attempts: number,
    response: GatewayResponse,
    elapsedMs: number,
  ): void {
    const { telemetry } = this.#deps;
    const dimensions = { network: scope.network.name };
    telemetry.measure("latency_ms", dimensions, elapsedMs, "Milliseconds");
    telemetry.measure("attempts", dimensions, attempts, "Count");
    telemetry.count("requests", dimensions);
    if (telemetry.enabled?.("debug") === false) return;
    const first = open[0];
    telemetry.log("debug", "request served", {
      network: scope.network.name,
      calls: callsOf(scope.request).length,
      method: first?.info.method,
      providers: scope.used,
      attempts,
      status: response.status,
      ms: elapsedMs,
      // Why each provider did or did not get the first call: the routing explanation.
      routing: first
        ? explainRouting(scope.ranked, first.info.method, scope.context, first.call.raw).map(
            ({ provider, slot, reason }) => ({ provider: provider.name, slot, reason }),
          )
        : [],
    });
  }
}

function unknownNetwork(name: string, model: GatewayModel): GatewayResponse {
  return {
    status: 404,
    headers: { ...JSON_HEADERS },
    body: errorResponse(
      "null",
      ErrorCode.invalidRequest,
      `unknown network "${name.slice(0, 64)}"; configured: ${[...model.networks.keys()].join(", ")}`,
    ),
  };
}

/**
 * Lets this request's state writes finish before the answer (a frozen Lambda may not finish
 * them later), but never waits long on a slow or throttled store: they go on in the background.
 */
async function settleWrites(writes: readonly Promise<unknown>[]): Promise<void> {
  if (writes.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, HEALTH_WRITE_WAIT_MS);
    timer.unref();
  });
  await Promise.race([Promise.allSettled(writes), waited]);
  clearTimeout(timer);
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.max(a, b);
}
