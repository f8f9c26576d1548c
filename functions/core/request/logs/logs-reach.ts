import { parseJsonOrUndefined } from "../../jsonrpc/json-raw.ts";
import { ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import { quorumInForce } from "../../routing/network-state.ts";
import type { AttemptSlot, SelectionContext } from "../../routing/selection.ts";
import { type AttemptLoop, runAttempts } from "../attempts/attempts.ts";
import { mayRaiseHead, type ObservedHeads } from "../head/observed-head.ts";
import type { AttemptRecord, FailureVerdict, OpenCall, RequestScope } from "../vocabulary.ts";
import {
  headerAsks,
  judgeLogAnswer,
  type LogQuestion,
  logQuestionOf,
} from "./checks/logs-answer-check.ts";
import type { CheckCall } from "./checks/logs-check.ts";
import { type LogCheckDeps, LogChecks } from "./checks/logs-check-state.ts";
import { CompanionUpstream } from "./checks/logs-companions.ts";
import { blocksSinceSnapshot, type InternalCall } from "./logs-queries.ts";
import { logQueryOf, quantity } from "./logs-range.ts";

/**
 * The log-attempt path (docs/behaviour.md §12.10, §12.12). Some nodes (anvil, older reth)
 * answer an eth_getLogs whose `toBlock` is above their own head with the logs up to their head
 * and no error, a backend behind a load balancer may be a few blocks back, and a node's log
 * index may lag its blocks (an empty list for blocks that hold logs). So each log answer the
 * gateway serves to itself (whole or a piece), and each `blockHash` filter, is judged against
 * the blocks it is about (`logs-answer-check.ts`): near the head, the provider must show its
 * `toBlock` in the same batch as the answer (`logs-companions.ts`), no log may name another
 * block than the header at its height, and no block the answer has no log of may say in its
 * bloom that the filter is there. An answer that fails is dropped (never returned, never
 * cached): the provider is `behind` for the call (no strike), and the next provider takes it.
 */

/** What the checks lean on beside the attempt loop and the request's scope. */
export interface ReachDeps {
  /** Heads seen in answers: a provider's confirmed head, and where a check is remembered. */
  readonly observed: ObservedHeads;
  /** Counts and logs a provider's failure of a call at once (its penalty waits). */
  readonly health: { noteFailure(attempt: AttemptRecord, verdict: FailureVerdict): void };
  /** This container's headers, bloom verdicts and counts. */
  readonly checks: LogChecks;
}

/** The log-attempt path's parts one container keeps. */
export function logAttemptDeps(
  observed: ObservedHeads,
  health: ReachDeps["health"],
  deps: LogCheckDeps,
): ReachDeps {
  return { observed, health, checks: new LogChecks(deps) };
}

interface CheckedRun extends ReachDeps {
  /**
   * The lowest block each provider was found without, shared by the request's log queries:
   * an answer up to a block at or over it is dropped without asking again (a batch of
   * near-head queries would otherwise pay a check per query while a provider lags).
   */
  readonly lacking: Map<string, number>;
  /** A log query the gateway serves to itself (numbered blocks); else `blockHash` filters. */
  readonly internal: boolean;
}

/** The highest block a provider was seen at: the monitor's check, or answers since. */
function confirmedHead(scope: RequestScope, deps: ReachDeps, provider: string): number | null {
  const checked = scope.context.state.quorum?.heads[provider]?.number ?? null;
  // Read when asked: another piece's check of this query may have raised it.
  const seen = deps.observed.inForce(scope.network, scope.context).get(provider) ?? null;
  const shown = deps.observed.shownBy(scope.network, scope.context, provider);
  const known = [checked, seen, shown].filter((block) => block !== null);
  return known.length === 0 ? null : Math.max(...known);
}

/**
 * Whether the gateway checks log answers at all: once the monitor has written a snapshot, in
 * force or stale. A stalled monitor is when providers drift apart unseen, so the check stays
 * (its heads are then mostly those seen in answers, and a block shown is remembered). With no
 * snapshot ever (no monitor) no provider's head or the chain's finality is known: every query
 * would be near the head, for no provider to prefer over another.
 */
function checksReach(context: SelectionContext): boolean {
  return context.state.quorum !== null;
}

/** Each call's log question, read once: its filter's bloom bits are worked out once too. */
const questions = new WeakMap<OpenCall, LogQuestion | null>();

/** The call's log question, when this run checks it. */
function questionOf(entry: OpenCall, internal: boolean): LogQuestion | null {
  if (entry.call.rawId === null) return null;
  let question = questions.get(entry);
  if (question === undefined) {
    question = logQuestionOf(entry.info);
    questions.set(entry, question);
  }
  return question !== null && (question.kind === "range") === internal ? question : null;
}

/**
 * `runAttempts`; for a log query the gateway serves to itself (whole or a piece) and for a
 * `blockHash` filter, once the monitor has written a snapshot, each answer is then checked
 * (`runAttemptsChecked`).
 */
export function runLogAttempts(
  loop: AttemptLoop,
  scope: RequestScope,
  deps: ReachDeps,
  options: { readonly internal?: InternalCall },
): Promise<number> {
  const { internal } = options;
  const checked = internal !== undefined;
  if (!checksReach(scope.context) || !loop.open.some((entry) => questionOf(entry, checked))) {
    return runAttempts(loop);
  }
  return runAttemptsChecked(loop, scope, {
    ...deps,
    lacking: internal?.lacking ?? new Map(),
    internal: checked,
  });
}

/**
 * The headers a lone checked call's attempts carry in their batch, as an upstream that adds
 * them; null when the call goes as it is (a batch of the caller's, or nothing to ask).
 */
function companionsFor(
  loop: AttemptLoop,
  scope: RequestScope,
  run: CheckedRun,
): CompanionUpstream | null {
  const [only] = loop.open;
  if (!loop.single || loop.open.length !== 1 || only === undefined) return null;
  const question = questionOf(only, run.internal);
  const asks = question === null ? [] : headerAsks(question, scope);
  if (asks.length === 0) return null;
  const providers = new Map(scope.network.providers.map((provider) => [provider.url, provider]));
  return new CompanionUpstream(loop.upstream, asks, (url) => {
    const provider = providers.get(url);
    if (provider === undefined) return 0;
    const room = Math.min(asks.length, loop.batchLimit(provider) - 1);
    if (room > 0) run.checks.count(scope.network.name, provider.name, "headers_asked", room);
    return room;
  });
}

/**
 * `runAttempts`, and then each checked answer is judged; a call whose answer fails is open
 * again and walks on to its next provider, whose answer is judged in turn. The checks' own
 * calls (a header a batch could not carry, receipts) are counted in `max_upstream_calls` and
 * bound by the deadline. Returns the upstream calls made.
 */
async function runAttemptsChecked(
  loop: AttemptLoop,
  scope: RequestScope,
  run: CheckedRun,
): Promise<number> {
  skipLacking(loop.open, scope, run);
  const companions = companionsFor(loop, scope, run);
  const upstream = companions ?? loop.upstream;
  let calls = await runAttempts({ ...loop, upstream });
  const call = async (slot: AttemptSlot, body: string): Promise<CheckCall> => {
    const room = loop.callsMade + calls < loop.settings.max_upstream_calls;
    const timeoutMs = Math.floor(
      Math.min(loop.settings.request_timeout_ms, loop.deadline - loop.clock()),
    );
    if (!room) return { kind: "no_room", why: "max_upstream_calls reached" };
    if (timeoutMs <= 0) return { kind: "no_room", why: "the deadline passed" };
    calls++;
    const result = await loop.upstream.send({
      url: slot.provider.url,
      body,
      timeoutMs,
      maxResponseBytes: loop.settings.max_response_bytes,
      idempotent: true,
    });
    if (!result.ok || result.status !== 200) return { kind: "failed" };
    return { kind: "answer", member: parseJsonOrUndefined(result.body) };
  };
  let open = loop.open;
  for (;;) {
    const reopened: OpenCall[] = [];
    for (const entry of open) {
      const slot = entry.answeredBy;
      const question = questionOf(entry, run.internal);
      if (entry.answer === null || slot === null || question === null) continue;
      const provider = slot.provider.name;
      const lacking = run.lacking.get(provider) ?? Number.POSITIVE_INFINITY;
      if (question.kind === "range" && question.query.to >= lacking) {
        behind(
          entry,
          slot,
          { block: question.query.to, detail: lackingDetail(lacking) },
          0,
          scope,
          run,
        );
        reopened.push(entry);
        continue;
      }
      const started = loop.clock();
      const verdict = await judgeLogAnswer(question, entry.answer, {
        scope,
        checks: run.checks,
        slot,
        shown: companions?.shownBy(slot.provider.url) ?? null,
        confirmedHead: confirmedHead(scope, run, provider),
        other:
          entry.order.slice(entry.next).find((next) => next.provider.name !== provider) ?? null,
        call,
      });
      if (verdict.kind === "use") {
        if (verdict.shown !== null) shownAt(scope, run, slot, verdict.shown, loop.clock());
        continue;
      }
      reopened.push(entry);
      if (verdict.kind === "unchecked") {
        reopen(entry, scope, verdict.detail);
        continue;
      }
      const elapsed = loop.clock() - started;
      const block = verdict.block;
      if (block !== null) run.lacking.set(provider, Math.min(block, lacking));
      if (verdict.kind === "behind") {
        run.checks.caughtBehind(scope.network.name, provider);
        behind(entry, slot, verdict, elapsed, scope, run);
      } else {
        run.checks.caughtMissing(scope.network.name, provider, verdict.reason, verdict.detail);
        behind(entry, slot, { block: null, detail: verdict.detail }, elapsed, scope, run);
      }
    }
    if (reopened.length === 0) break;
    skipLacking(reopened, scope, run);
    calls += await runAttempts({
      ...loop,
      upstream,
      open: reopened,
      callsMade: loop.callsMade + calls,
      hedging: undefined,
    });
    open = reopened;
  }
  return calls + (companions?.resent ?? 0);
}

function lackingDetail(block: number): string {
  return `its answer came without block ${quantity(block)}, found missing earlier in this request`;
}

/**
 * The provider showed `block`: remembered for its next answers, whoever it is (a stalled
 * monitor's snapshot lets no provider raise the known head, and each query would pay a
 * check); as answers' heads are, only a quorum member's raises the known head.
 */
function shownAt(
  scope: RequestScope,
  deps: ReachDeps,
  slot: AttemptSlot,
  block: number,
  now: number,
): void {
  deps.observed.showed(scope.network.name, slot.provider.name, block, now);
  if (mayRaiseHead(slot.provider.name, slot.emergency, scope.context)) {
    deps.observed.observe(scope.network.name, slot.provider.name, block, now);
  }
}

/**
 * The provider's answer is dropped and the call is open again, a `behind` failure of the
 * provider (no strike: as any provider behind a call, it is blamed only if another one
 * answers). `block`: the block it lacked, kept for an above-head refusal; null for none.
 */
function behind(
  entry: OpenCall,
  slot: AttemptSlot,
  why: { readonly block: number | null; readonly detail: string },
  elapsedMs: number,
  scope: RequestScope,
  deps: ReachDeps,
): void {
  const verdict: FailureVerdict = { outcome: "behind", detail: why.detail };
  reopen(entry, scope, verdict.detail);
  entry.failures.push({ provider: slot.provider.name, signature: "behind" });
  if (why.block !== null) keepAboveHeadRefusal(entry, why.block, slot.provider.name, scope);
  const attempt: AttemptRecord = {
    network: scope.network,
    context: scope.context,
    slot,
    elapsedMs,
    heavy: true,
    callersCodeOnly: false,
    writes: scope.writes,
  };
  deps.health.noteFailure(attempt, verdict);
  scope.held.push({ attempt, verdict, calls: [entry], cutShort: false });
}

/** A block nobody is known to have: the caller's to fix if no provider shows it. */
function keepAboveHeadRefusal(
  entry: OpenCall,
  block: number,
  provider: string,
  scope: RequestScope,
): void {
  const knownHead = scope.quorumHead;
  if (knownHead === null || block <= knownHead) return;
  // A stalled monitor's head is old news: the block may well exist, and the fault is the
  // providers' (502, retry), not the caller's.
  const { state, now, checkIntervalSeconds } = scope.context;
  if (!quorumInForce(state, now, checkIntervalSeconds)) return;
  // Nor is a block the chain can have made since the snapshot: another container, on a newer
  // copy of the state, may have served it as the head (docs/behaviour.md §12.9).
  if (block <= knownHead + blocksSinceSnapshot(scope)) return;
  entry.fallback = {
    text: errorResponse(
      entry.call.rawId ?? "null",
      ErrorCode.invalidParams,
      `toBlock ${quantity(block)} is above the chain head this gateway knows (${quantity(knownHead)}): ask for blocks up to it`,
    ),
    provider,
  };
}

/**
 * Each open log query walks past the providers this request already found without a block at
 * or under its `toBlock`: their answer would be dropped unchecked, so asking them would only
 * spend a call (a batch of near-head queries would pay one per query while a provider lags,
 * and run out of `max_upstream_calls`).
 */
function skipLacking(open: readonly OpenCall[], scope: RequestScope, deps: CheckedRun): void {
  for (const entry of open) {
    if (entry.answer !== null) continue;
    const query = logQueryOf(entry.info.method, entry.info.params);
    if (query === null) continue;
    for (let slot = entry.order[entry.next]; slot !== undefined; slot = entry.order[entry.next]) {
      const lacking = deps.lacking.get(slot.provider.name);
      if (lacking === undefined || query.to < lacking) break;
      entry.next++;
      entry.lastError = `${slot.provider.name}: not asked: found without block ${quantity(lacking)} earlier in this request`;
      keepAboveHeadRefusal(entry, query.to, slot.provider.name, scope);
    }
  }
}

/** The call's answer is set aside: the call walks on to its next provider. */
function reopen(entry: OpenCall, scope: RequestScope, why: string): void {
  const provider = entry.answeredBy?.provider.name ?? "";
  entry.answer = null;
  entry.answeredBy = null;
  entry.lastError = `${provider}: ${why}`;
  const index = scope.used.indexOf(provider);
  if (index >= 0) scope.used.splice(index, 1);
}
