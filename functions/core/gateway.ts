import { classifyHttp, classifyMember, classifyTransport, findInnerError } from "./classify.ts";
import {
  applyIncident,
  applySuccess,
  type CooldownPolicy,
  cooldownMs,
  type ProviderHealth,
} from "./health.ts";
import { arrayElementSpans, withId } from "./json-raw.ts";
import {
  type Call,
  ErrorCode,
  errorResponse,
  isCall,
  methodPermitted,
  type ParsedRequest,
  parseRequest,
} from "./jsonrpc.ts";
import type { GatewayModel, Network, Provider } from "./network-model.ts";
import { healthOf, type NetworkState, quorumInForce } from "./network-state.ts";
import type { StateStore, Telemetry, Upstream, UpstreamResult } from "./ports.ts";
import {
  type AttemptSlot,
  attemptOrder,
  rankProviders,
  type SelectionContext,
  whyNotCandidate,
} from "./selection.ts";
import type { StateCache } from "./state-cache.ts";
import type { CallInfo, CooldownReason, Verdict } from "./verdict.ts";

export interface GatewayResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface GatewayDeps {
  readonly model: () => GatewayModel;
  readonly upstream: Upstream;
  readonly store: StateStore;
  readonly cache: StateCache;
  readonly clock: () => number;
  readonly random: () => number;
  readonly telemetry: Telemetry;
  /** Removes secrets from any text that may leave the process. */
  readonly scrub: (text: string) => string;
  /** Masks secret values in an answer to the caller (an upstream may echo its own URL). */
  readonly scrubAnswer: (text: string) => string;
  /** Called with each attempt's outcome, for request stats (failing often, latency). */
  readonly recordOutcome?: (
    network: string,
    provider: string,
    ok: boolean,
    latencyMs: number,
  ) => void;
  /** Called with the block number an answer shows, so known heads stay fresh. */
  readonly observeBlock?: (network: string, provider: string, block: number) => void;
  /** The highest block this container has seen in any answer of the network, if any. */
  readonly highestObservedBlock?: (network: string) => number | null;
}

export interface RpcOptions {
  /** Time left before the platform cuts the request (Lambda remaining time). */
  readonly remainingMs?: number;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** The state of one call while the gateway works on it. */
interface CallProgress {
  readonly call: Call;
  readonly info: CallInfo;
  readonly order: AttemptSlot[];
  next: number;
  attempts: number;
  /** The answer to hand back: set once final. */
  answer: string | null;
  /** The last upstream answer kept in case attempts run out (inner or upstream error). */
  fallback: { readonly text: string; readonly provider: string } | null;
  lastError: string;
}

/** What one request's attempts share. */
interface RequestScope {
  readonly network: Network;
  readonly model: GatewayModel;
  readonly context: SelectionContext;
  readonly quorumHead: number | null;
  /** Providers that answered, in order of use (x-gateway-provider). */
  readonly used: string[];
  /** State writes started by this request: they run beside the retries, not before them. */
  readonly writes: Promise<unknown>[];
}

interface Incident {
  readonly provider: Provider;
  readonly reason: CooldownReason;
}

export class Gateway {
  readonly #deps: GatewayDeps;
  /** Unclassified errors in a row per provider (force-rotate), this container only. */
  readonly #unclassifiedInARow = new Map<string, number>();
  /** Providers rotated away from in this container, until (ms). */
  readonly #demotedUntil = new Map<string, number>();

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
  }

  async handleRpc(
    networkName: string,
    body: string,
    options: RpcOptions = {},
  ): Promise<GatewayResponse> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) {
      return {
        status: 404,
        headers: JSON_HEADERS,
        body: errorResponse(
          "null",
          ErrorCode.invalidRequest,
          `unknown network "${networkName.slice(0, 64)}"; configured: ${[...model.networks.keys()].join(", ")}`,
        ),
      };
    }
    const request = parseRequest(body, {
      maxBodyBytes: network.settings.max_body_bytes,
      maxBatch: network.settings.max_batch,
    });
    if (request.kind === "error") {
      return {
        status: request.status,
        headers: JSON_HEADERS,
        body: errorResponse(request.rawId, request.code, request.message),
      };
    }
    return this.#serve(model, network, body, request, options);
  }

  async #serve(
    model: GatewayModel,
    network: Network,
    body: string,
    request: Exclude<ParsedRequest, { kind: "error" }>,
    options: RpcOptions,
  ): Promise<GatewayResponse> {
    const { clock } = this.#deps;
    const started = clock();
    const settings = network.settings;
    const deadline =
      started + Math.min(settings.request_deadline_ms, (options.remainingMs ?? Infinity) - 1000);
    const state = await this.#deps.cache.get(network.name);
    const context = this.#selectionContext(model, network, state, started);
    const ranked = rankProviders(network.providers, body, this.#deps.random);

    const members = request.kind === "single" ? [request.call] : request.members;
    const progress: CallProgress[] = [];
    const immediate = new Map<number, string>();
    for (const member of members) {
      if (!isCall(member)) {
        immediate.set(
          member.position,
          errorResponse(member.rawId, ErrorCode.invalidRequest, member.message),
        );
        continue;
      }
      if (!methodPermitted(member.method, settings.methods_deny, settings.methods_allow)) {
        immediate.set(
          member.position,
          errorResponse(
            member.rawId ?? "null",
            ErrorCode.methodNotFound,
            `method ${member.method} is not allowed by this gateway`,
          ),
        );
        continue;
      }
      const order = attemptOrder(ranked, member.method, context);
      if (order.length === 0) {
        immediate.set(
          member.position,
          network.providers.length === 0
            ? errorResponse(
                member.rawId ?? "null",
                ErrorCode.internal,
                `no provider of ${network.name} is in service: every one is left out because a secret of its URL did not resolve (see GET /${network.name}/status)`,
              )
            : errorResponse(
                member.rawId ?? "null",
                ErrorCode.methodNotFound,
                `method ${member.method} is not served by any provider of ${network.name}`,
              ),
        );
        continue;
      }
      progress.push({
        call: member,
        info: { method: member.method, params: member.params },
        order,
        next: 0,
        attempts: 0,
        answer: null,
        fallback: null,
        lastError: "no attempt was made",
      });
    }

    const scope: RequestScope = {
      network,
      model,
      context,
      // Answers between monitor ticks may show a newer head than the snapshot: a null block at
      // or below it is stale all the same.
      quorumHead: maxOrNull(
        state.quorum?.head ?? null,
        this.#deps.highestObservedBlock?.(network.name) ?? null,
      ),
      used: [],
      writes: [],
    };
    let attempts = 0;
    for (;;) {
      const remaining = deadline - clock();
      const groups = this.#nextGroups(progress, settings.max_attempts);
      if (groups.size === 0 || remaining <= 0) break;
      const rounds = [...groups.values()].map(async ({ slot, calls }) => {
        attempts++;
        const single = request.kind === "single";
        const upstreamBody = single ? body : batchBody(calls.map((entry) => entry.call));
        const result = await this.#deps.upstream.send({
          url: slot.provider.url,
          body: upstreamBody,
          timeoutMs: Math.max(1, Math.floor(Math.min(settings.request_timeout_ms, remaining))),
          maxResponseBytes: settings.max_response_bytes,
        });
        return this.#judge(scope, slot, calls, single, result);
      });
      await Promise.all(rounds);
    }
    await settleWrites(scope.writes);

    const elapsed = clock() - started;
    this.#deps.telemetry.measure("latency_ms", { network: network.name }, elapsed, "Milliseconds");
    this.#deps.telemetry.measure("attempts", { network: network.name }, attempts, "Count");
    this.#deps.telemetry.count("requests", { network: network.name });
    const response = this.#respond(network, request, progress, immediate, scope.used, attempts);
    this.#deps.telemetry.log("debug", "request served", {
      network: network.name,
      calls: members.length,
      method: progress[0]?.info.method,
      providers: scope.used,
      attempts,
      status: response.status,
      ms: elapsed,
    });
    return response;
  }

  #selectionContext(
    model: GatewayModel,
    network: Network,
    state: NetworkState,
    now: number,
  ): SelectionContext {
    const demoted = new Set<string>();
    for (const provider of network.providers) {
      const until = this.#demotedUntil.get(key(network.name, provider.name));
      if (until !== undefined && until > now) demoted.add(provider.name);
    }
    return { network, state, now, checkIntervalSeconds: model.checkIntervalSeconds, demoted };
  }

  /** Groups the calls still open by the next provider each should try. */
  #nextGroups(
    progress: CallProgress[],
    maxAttempts: number,
  ): Map<string, { slot: AttemptSlot; calls: CallProgress[] }> {
    const groups = new Map<string, { slot: AttemptSlot; calls: CallProgress[] }>();
    for (const entry of progress) {
      if (entry.answer !== null || entry.attempts >= maxAttempts) continue;
      const slot = entry.order[entry.next];
      if (slot === undefined) continue;
      entry.next++;
      entry.attempts++;
      const group = groups.get(slot.provider.name);
      if (group) group.calls.push(entry);
      else groups.set(slot.provider.name, { slot, calls: [entry] });
    }
    return groups;
  }

  #judge(
    scope: RequestScope,
    slot: AttemptSlot,
    calls: CallProgress[],
    single: boolean,
    result: UpstreamResult,
  ): void {
    const { model, quorumHead } = scope;
    const provider = slot.provider;
    if (!result.ok) {
      if ("tooLarge" in result) {
        const message = `the upstream answer is over the limit of ${result.limit} bytes (max_response_bytes); ask for less, e.g. a smaller block range`;
        for (const entry of calls) {
          entry.answer = errorResponse(entry.call.rawId ?? "null", ErrorCode.internal, message);
        }
        return;
      }
      this.#apply(scope, slot, calls, classifyTransport(result.failure), result.elapsedMs);
      return;
    }
    const [only] = calls;
    if (single && only?.call.rawId === null && result.status >= 200 && result.status < 300) {
      // A notification: whatever the upstream sent (often 204 and no body) is no answer to judge.
      only.answer = "";
      this.#succeeded(scope, provider, { outcome: "ok" }, result.elapsedMs);
      return;
    }
    const parsed = parseJson(result.body);
    const infos = calls.map((entry) => entry.info);
    const whole = classifyHttp(result.status, result.body, parsed, infos);
    if (whole !== "members" && (whole.outcome === "retry" || whole.outcome === "capability")) {
      this.#apply(scope, slot, calls, whole, result.elapsedMs);
      return;
    }
    if (whole !== "members" && (single || isObjectText(result.body))) {
      // An answer for the request as a whole (e.g. one error object for a batch).
      for (const entry of calls) {
        const text =
          single || !isObjectText(result.body)
            ? result.body
            : withId(result.body, String(entry.call.position));
        this.#settle(entry, whole, text, model, provider);
      }
      this.#succeeded(scope, provider, whole, result.elapsedMs);
      return;
    }
    const texts = single ? new Map<number, string>() : memberTexts(result.body, parsed);
    const verdicts: Array<{ entry: CallProgress; verdict: Verdict; text: string | null }> = [];
    for (const entry of calls) {
      const text = single ? result.body : (texts.get(entry.call.position) ?? null);
      if (text === null) {
        verdicts.push({
          entry,
          verdict: {
            outcome: "retry",
            kind: "transient",
            reason: "transient",
            detail: "call missing from the batch answer",
          },
          text,
        });
        continue;
      }
      const member = single ? parsed : parseJson(text);
      const verdict = classifyMember(member, entry.info, {
        quorumHead,
        chainId: scope.network.chainId,
      });
      verdicts.push({ entry, verdict, text });
      if (verdict.outcome === "ok") this.#observeBlock(scope, slot, entry.info, member);
    }
    for (const { entry, verdict, text } of verdicts) {
      // An upstream error answer is kept: if every provider fails, the caller gets the last
      // one as is rather than a summary. Null or garbage results are never kept (stale data).
      if ((verdict.outcome === "retry" || verdict.outcome === "capability") && text !== null) {
        if (hasErrorMember(single ? parsed : parseJson(text))) {
          entry.fallback = { text, provider: provider.name };
        }
      }
    }
    const retried = verdicts.filter(
      ({ verdict }) => verdict.outcome === "retry" || verdict.outcome === "capability",
    );
    for (const { entry, verdict, text } of verdicts) {
      if (verdict.outcome === "retry" || verdict.outcome === "capability" || text === null)
        continue;
      this.#settle(entry, verdict, text, model, provider);
    }
    if (retried.length > 0) {
      const [first] = retried;
      if (first) {
        this.#apply(
          scope,
          slot,
          retried.map(({ entry }) => entry),
          first.verdict,
          result.elapsedMs,
        );
      }
    }
    const settled = verdicts.find(
      ({ verdict }) => verdict.outcome !== "retry" && verdict.outcome !== "capability",
    );
    if (settled) this.#succeeded(scope, provider, settled.verdict, result.elapsedMs);
  }

  /** Settles a call with a non-retry verdict; an inner error stays open while attempts remain. */
  #settle(
    entry: CallProgress,
    verdict: Verdict,
    text: string,
    model: GatewayModel,
    provider: Provider,
  ): void {
    const inner =
      verdict.outcome === "inner_error"
        ? verdict.detail
        : verdict.outcome === "ok" || verdict.outcome === "unclassified"
          ? findInnerError(text, model.innerErrors)
          : null;
    if (inner !== null) {
      entry.fallback = { text, provider: provider.name };
      entry.lastError = `inner error ${inner}`;
      return;
    }
    entry.answer = text;
  }

  /** Bookkeeping for a provider that gave an answer the caller gets. */
  #succeeded(scope: RequestScope, provider: Provider, verdict: Verdict, elapsedMs: number): void {
    const { network, context, used } = scope;
    if (!used.includes(provider.name)) used.push(provider.name);
    this.#deps.recordOutcome?.(network.name, provider.name, true, elapsedMs);
    const counterKey = key(network.name, provider.name);
    if (verdict.outcome === "unclassified") {
      const inARow = (this.#unclassifiedInARow.get(counterKey) ?? 0) + 1;
      if (inARow >= network.settings.force_rotate_errors) {
        this.#unclassifiedInARow.delete(counterKey);
        this.#forceRotate(scope, provider);
      } else {
        this.#unclassifiedInARow.set(counterKey, inARow);
      }
      return;
    }
    this.#unclassifiedInARow.delete(counterKey);
    const health = healthOf(context.state, provider.name);
    const now = this.#deps.clock();
    const reset = applySuccess(health, now);
    if (reset) scope.writes.push(this.#write(network, provider, health, reset));
    if (elapsedMs > network.settings.slow_response_ms && this.#available(network, context) >= 3) {
      scope.writes.push(this.#incident(network, { provider, reason: "slow" }));
    }
  }

  /** Providers a plain read could go to now; the slow rule needs at least three. */
  #available(network: Network, context: SelectionContext): number {
    return network.providers.filter(
      (provider) => whyNotCandidate(provider, "eth_blockNumber", context) === null,
    ).length;
  }

  #forceRotate(scope: RequestScope, provider: Provider): void {
    const { network } = scope;
    const settings = network.settings;
    this.#deps.telemetry.log("warn", "force-rotate: unclassified errors in a row", {
      network: network.name,
      provider: provider.name,
      errors: settings.force_rotate_errors,
    });
    if (network.providers.some((candidate) => candidate.backup)) {
      scope.writes.push(this.#incident(network, { provider, reason: "force_rotate" }));
    } else {
      this.#demotedUntil.set(
        key(network.name, provider.name),
        this.#deps.clock() + settings.cooldown_seconds.force_rotate * 1000,
      );
    }
  }

  /** A retry verdict: note the error and penalise the provider unless in emergency use. */
  #apply(
    scope: RequestScope,
    slot: AttemptSlot,
    calls: CallProgress[],
    verdict: Verdict,
    elapsedMs: number,
  ): void {
    if (verdict.outcome !== "retry" && verdict.outcome !== "capability") return;
    const { network } = scope;
    const provider = slot.provider;
    const kind = verdict.outcome === "capability" ? "capability" : verdict.kind;
    const detail = this.#deps.scrub(verdict.detail);
    for (const entry of calls) entry.lastError = `${provider.name}: ${detail}`;
    this.#deps.recordOutcome?.(network.name, provider.name, false, elapsedMs);
    this.#deps.telemetry.count("retried_errors", {
      network: network.name,
      provider: provider.name,
      kind,
    });
    this.#deps.telemetry.log("info", "failover: upstream error, trying the next provider", {
      network: network.name,
      provider: provider.name,
      kind,
      detail,
      emergency: slot.emergency,
    });
    if (slot.emergency) return;
    if (verdict.outcome === "capability") {
      const until = this.#deps.clock() + network.settings.cooldown_seconds.capability * 1000;
      for (const method of new Set(calls.map((entry) => entry.info.method))) {
        scope.writes.push(this.#blacklistCapability(network, provider, method, until));
      }
      return;
    }
    scope.writes.push(this.#incident(network, { provider, reason: verdict.reason }));
  }

  async #blacklistCapability(
    network: Network,
    provider: Provider,
    method: string,
    until: number,
  ): Promise<void> {
    this.#deps.cache.update(network.name, (state) => {
      const capabilities = new Map(state.capabilities);
      const methods = new Map(capabilities.get(provider.name) ?? []);
      methods.set(method, Math.max(until, methods.get(method) ?? 0));
      capabilities.set(provider.name, methods);
      return { ...state, capabilities };
    });
    this.#deps.telemetry.count("blacklist_events", {
      network: network.name,
      provider: provider.name,
      reason: "capability",
    });
    try {
      await this.#deps.store.blacklistCapability(network.name, provider.name, method, until);
    } catch (error) {
      this.#storeError(network, error);
    }
  }

  /**
   * One strike per incident, agreed across containers: the write is conditional on the
   * version this container read; on a conflict the stored item is judged again.
   */
  async #incident(network: Network, incident: Incident): Promise<void> {
    const policy: CooldownPolicy = {
      cooldownSeconds: network.settings.cooldown_seconds,
      maxBlacklistMinutes: network.settings.max_blacklist_minutes,
    };
    const state = await this.#deps.cache.get(network.name);
    let health = healthOf(state, incident.provider.name);
    for (let round = 0; round < 3; round++) {
      const next = applyIncident(health, incident.reason, this.#deps.clock(), policy);
      if (next === null) return;
      const outcome = await this.#write(network, incident.provider, health, next);
      if (outcome === "written") {
        const newStrike = next.strikes > health.strikes;
        this.#deps.telemetry.count("blacklist_events", {
          network: network.name,
          provider: incident.provider.name,
          reason: incident.reason,
        });
        this.#deps.telemetry.log(newStrike ? "warn" : "info", "provider blacklisted", {
          network: network.name,
          provider: incident.provider.name,
          reason: incident.reason,
          strikes: next.strikes,
          until: new Date(next.blacklistedUntil).toISOString(),
          cooldown_ms: cooldownMs(incident.reason, next.strikes, policy),
          extended_only: !newStrike,
        });
        return;
      }
      if (outcome === "failed") return;
      health = outcome;
    }
  }

  /** Writes health; returns the stored item when another container won the race. */
  async #write(
    network: Network,
    provider: Provider,
    expected: ProviderHealth,
    next: ProviderHealth,
  ): Promise<"written" | "failed" | ProviderHealth> {
    const apply = (health: ProviderHealth) =>
      this.#deps.cache.update(network.name, (state) => {
        const providers = new Map(state.providers);
        providers.set(provider.name, health);
        return { ...state, providers };
      });
    // This container acts on its own verdict at once, however slow the store is to agree.
    apply(next);
    try {
      const outcome = await this.#deps.store.writeHealth(
        network.name,
        provider.name,
        expected.version,
        next,
      );
      if (outcome.written) return "written";
      apply(outcome.current);
      return outcome.current;
    } catch (error) {
      // The store is down: the local copy stands (fail open, locally).
      this.#storeError(network, error);
      return "failed";
    }
  }

  #storeError(network: Network, error: unknown): void {
    this.#deps.telemetry.log("warn", "state store write failed: kept locally", {
      network: network.name,
      error: error instanceof Error ? error.message : String(error),
    });
    this.#deps.telemetry.count("state_store_errors", { network: network.name });
  }

  /**
   * Raises the known head from a block number in an answer. Only quorum members used as
   * candidates count: a provider on another chain or running ahead must not make the honest
   * providers' nulls look stale.
   */
  #observeBlock(scope: RequestScope, slot: AttemptSlot, call: CallInfo, member: unknown): void {
    const observe = this.#deps.observeBlock;
    if (!observe || slot.emergency || typeof member !== "object" || member === null) return;
    const { network, context } = scope;
    const provider = slot.provider;
    const quorum = context.state.quorum;
    if (!quorumInForce(context.state, context.now, context.checkIntervalSeconds)) return;
    if (!quorum?.members.includes(provider.name)) return;
    const result = (member as { result?: unknown }).result;
    let hex: unknown;
    if (call.method === "eth_blockNumber") hex = result;
    else if (
      call.method === "eth_getBlockByNumber" &&
      typeof result === "object" &&
      result !== null
    ) {
      hex = (result as { number?: unknown }).number;
    }
    if (typeof hex === "string" && /^0x[0-9a-f]{1,16}$/i.test(hex)) {
      observe(network.name, provider.name, Number.parseInt(hex, 16));
    }
  }

  #respond(
    network: Network,
    request: Exclude<ParsedRequest, { kind: "error" }>,
    progress: CallProgress[],
    immediate: Map<number, string>,
    used: string[],
    attempts: number,
  ): GatewayResponse {
    const providers = [...used];
    const answers = new Map(immediate);
    let failed = 0;
    for (const entry of progress) {
      if (entry.answer === null && entry.fallback && !providers.includes(entry.fallback.provider)) {
        providers.push(entry.fallback.provider);
      }
      const upstreamText = entry.answer ?? entry.fallback?.text ?? null;
      if (upstreamText !== null) {
        const text = this.#deps.scrubAnswer(upstreamText);
        answers.set(
          entry.call.position,
          entry.call.rawId === null ? text : withId(text, entry.call.rawId),
        );
        continue;
      }
      failed++;
      this.#deps.telemetry.log("error", "all providers failed", {
        network: network.name,
        method: entry.info.method,
        last_error: entry.lastError,
      });
      answers.set(
        entry.call.position,
        errorResponse(
          entry.call.rawId ?? "null",
          ErrorCode.internal,
          `all providers failed for ${entry.info.method}; last error: ${this.#deps.scrub(entry.lastError)}`,
        ),
      );
    }
    const headers: Record<string, string> = { ...JSON_HEADERS };
    if (network.settings.diagnostic_headers) {
      headers["x-gateway-provider"] = providers.join(",");
      headers["x-gateway-attempts"] = String(attempts);
    }
    const allFailed = progress.length > 0 && failed === progress.length;
    if (request.kind === "single") {
      // A notification gets no answer (JSON-RPC 2.0 §4.1), only the HTTP status.
      if (request.call.rawId === null && !allFailed) return { status: 204, headers, body: "" };
      return { status: allFailed ? 502 : 200, headers, body: answers.get(0) ?? "" };
    }
    const ordered = request.members.flatMap((member) => {
      // Notifications get no answer (JSON-RPC 2.0 §6).
      if (isCall(member) && member.rawId === null) return [];
      const text = answers.get(member.position);
      return text === undefined ? [] : [text];
    });
    return {
      status: allFailed && immediate.size === 0 ? 502 : 200,
      headers,
      body: ordered.length === 0 ? "" : `[${ordered.join(",")}]`,
    };
  }
}

/**
 * Lets this request's state writes finish before the answer (a frozen Lambda may not finish
 * them later), but never waits long on a slow or throttled store: they go on in the background.
 */
const WRITE_WAIT_MS = 200;

async function settleWrites(writes: readonly Promise<unknown>[]): Promise<void> {
  if (writes.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, WRITE_WAIT_MS);
    timer.unref();
  });
  await Promise.race([Promise.allSettled(writes), waited]);
  clearTimeout(timer);
}

function key(network: string, provider: string): string {
  return `${network}\u0000${provider}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.max(a, b);
}

function hasErrorMember(member: unknown): boolean {
  return typeof member === "object" && member !== null && "error" in member;
}

function isObjectText(text: string): boolean {
  return text.trimStart().startsWith("{");
}

/** The upstream batch: each call with its position as id, so answers map back exactly. */
function batchBody(calls: readonly Call[]): string {
  return `[${calls.map((call) => withId(call.raw, String(call.position))).join(",")}]`;
}

/** Raw texts of a batch answer's members, keyed by the position carried in their id. */
function memberTexts(body: string, parsed: unknown): Map<number, string> {
  const texts = new Map<number, string>();
  if (!Array.isArray(parsed)) return texts;
  const spans = arrayElementSpans(body);
  parsed.forEach((item, index) => {
    const span = spans[index];
    const id =
      typeof item === "object" && item !== null ? (item as { id?: unknown }).id : undefined;
    const position = typeof id === "number" ? id : typeof id === "string" ? Number(id) : Number.NaN;
    if (span && Number.isInteger(position) && position >= 0 && !texts.has(position)) {
      texts.set(position, body.slice(span.start, span.end));
    }
  });
  return texts;
}
