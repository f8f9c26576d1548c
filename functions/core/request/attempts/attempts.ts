import type { Settings } from "../../config/config-schema.ts";
import type { Provider } from "../../config/network-model.ts";
import { errorResponse } from "../../jsonrpc/jsonrpc.ts";
import { methodSpec } from "../../methods/catalogue.ts";
import type { Upstream, UpstreamResult } from "../../ports.ts";
import { attemptHedged, type SentAttempt } from "../hedge/hedged-attempt.ts";
import type { RequestHedging } from "../hedge/hedging.ts";
import { SEND_RAW_TRANSACTION } from "../send/sent-transactions.ts";
import type { AttemptGroup, OpenCall } from "../vocabulary.ts";
import { callBudgetError, withinCallBudget } from "./call-budget.ts";
import { nextRound, upstreamBody } from "./plan.ts";

export interface AttemptLoop {
  readonly upstream: Upstream;
  readonly clock: () => number;
  /** No attempt starts after this (ms), and none runs past it. */
  readonly deadline: number;
  readonly settings: Pick<
    Settings,
    "max_attempts" | "request_timeout_ms" | "max_response_bytes" | "max_upstream_calls"
  >;
  readonly single: boolean;
  /** The caller's body, forwarded as is for a single call. */
  readonly body: string;
  readonly open: readonly OpenCall[];
  /** The largest batch a provider takes now (configured or learned). */
  readonly batchLimit: (provider: Provider) => number;
  /**
   * Judges one attempt's result and records it; calls it settles leave the loop. `cutShort`:
   * the attempt's timeout was cut to the time left before the deadline.
   */
  readonly onResult: (group: AttemptGroup, result: UpstreamResult, cutShort: boolean) => void;
  /** Upstream calls of the request already made or spoken for (transaction copies). */
  readonly callsMade: number;
  /**
   * The configured `max_upstream_calls`, named when the budget runs out, where `settings`
   * carries an internal call's share of it (a log query or piece) instead.
   */
  readonly configuredMaxUpstreamCalls?: number;
  /** Hedged reads (the first round's attempts); absent: never hedged. */
  readonly hedging?: RequestHedging;
}

/**
 * Runs rounds of attempts until every call is answered, out of slots or attempts, or the
 * deadline passes. Knows deadlines and timeouts, not health: what an answer means is the
 * judge's, and what it does to a provider is the health recorder's. Returns the number of
 * upstream calls made.
 */
export async function runAttempts(loop: AttemptLoop): Promise<number> {
  const { upstream, clock, deadline, settings, hedging } = loop;
  let attempts = 0;
  /** `remaining`: the time left before the deadline when the attempt's round (or hedge) began. */
  const send = async (
    group: AttemptGroup,
    remaining: number,
    signal?: AbortSignal,
  ): Promise<SentAttempt> => {
    const result = await upstream.send({
      url: group.slot.provider.url,
      body: upstreamBody(group, loop.single, loop.body),
      timeoutMs: Math.max(1, Math.floor(Math.min(settings.request_timeout_ms, remaining))),
      maxResponseBytes: settings.max_response_bytes,
      idempotent: group.calls.every((entry) => safeToResend(entry.info.method)),
      ...(signal === undefined ? {} : { signal }),
    });
    return { result, cutShort: remaining < settings.request_timeout_ms };
  };
  const settle = (group: AttemptGroup, { result, cutShort }: SentAttempt) => {
    loop.onResult(group, result, cutShort);
    if (result.ok && group.calls.every((entry) => entry.answer !== null)) {
      hedging?.answered(group, result.elapsedMs);
    }
  };
  for (let round = 0; ; round++) {
    const remaining = deadline - clock();
    if (remaining <= 0) return attempts;
    const groups = nextRound(loop.open, settings.max_attempts, loop.single, loop.batchLimit);
    if (groups.length === 0) return attempts;
    // A batch retried across providers must not multiply into unbounded paid calls.
    const { send: sent, refused } = withinCallBudget(settings, loop.callsMade + attempts, groups);
    const over = callBudgetError({
      max_upstream_calls: loop.configuredMaxUpstreamCalls ?? settings.max_upstream_calls,
    });
    for (const group of refused) {
      for (const entry of group.calls) {
        if (entry.failures.length === 0) {
          entry.answer = errorResponse(entry.call.rawId ?? "null", over.code, over.message);
          continue;
        }
        // Its providers failed it, and the budget ran out on its retries: a failure of the
        // providers (502 when every call failed, which clients retry), not the caller's to fix.
        entry.lastError = `${entry.lastError}; then ${over.reached}`;
        entry.next = entry.order.length;
      }
    }
    if (sent.length === 0) return attempts;
    attempts += sent.length;
    if (round === 0) hedging?.requestStarted();
    const attemptGroup = async (group: AttemptGroup): Promise<void> => {
      // Only a call's first attempt is hedged: a retry already moved on to the next provider.
      if (round > 0 || hedging === undefined) {
        settle(group, await send(group, remaining));
        return;
      }
      await attemptHedged(group, hedging, {
        send: (attempt, signal) =>
          send(attempt, attempt === group ? remaining : deadline - clock(), signal),
        settle,
        callsLeft: () => loop.callsMade + attempts < settings.max_upstream_calls,
        spendCall: () => {
          attempts++;
        },
        single: loop.single,
        maxAttempts: settings.max_attempts,
        batchLimit: loop.batchLimit,
        deadline,
        clock,
      });
    };
    // One group (every single call) is awaited as it is, without a Promise.all around it.
    const [only] = sent;
    await (sent.length === 1 && only !== undefined
      ? attemptGroup(only)
      : Promise.all(sent.map(attemptGroup)));
  }
}

/**
 * Whether the upstream client may send a call again by itself after a reset on a reused
 * socket: reads, and raw transactions, whose duplicates the gateway recognises by hash
 * (docs/behaviour.md §4.12); never a call that changes something it cannot recognise.
 */
function safeToResend(method: string): boolean {
  return method === SEND_RAW_TRANSACTION || methodSpec(method).idempotent;
}
