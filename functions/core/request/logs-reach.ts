import { parseJsonOrUndefined } from "../json-raw.ts";
import { ErrorCode, errorResponse } from "../jsonrpc.ts";
import { quorumInForce } from "../network-state.ts";
import type { Upstream } from "../ports.ts";
import type { AttemptSlot, SelectionContext } from "../selection.ts";
import type { CallInfo } from "../verdict.ts";
import { type AttemptLoop, runAttempts } from "./attempts.ts";
import type { AttemptRecord } from "./health-recorder.ts";
import type { FailureVerdict } from "./judge.ts";
import type { InternalCall } from "./logs-queries.ts";
import { logQueryOf, quantity } from "./logs-range.ts";
import { mayRaiseHead, type ObservedHeads } from "./observed-head.ts";
import type { OpenCall } from "./open-call.ts";
import type { RequestScope } from "./scope.ts";

/**
 * Some nodes (anvil, older reth) answer an eth_getLogs whose `toBlock` is above their own head
 * with the logs up to their head and no error (geth refuses instead). A provider a block behind
 * the served head, which `latest` is pinned to, would hand an indexer a range without its
 * newest blocks' logs, and the indexer would move past them for good. So the logs of a
 * provider not known to have reached `toBlock` are used only once it shows that block
 * (`eth_getBlockByNumber`); without it, the provider is behind for that call: no strike, and
 * the next provider takes it, as after geth's "block range extends beyond current head block".
 */

/** What decides whether one log answer must be checked. */
export interface ReachQuestion {
  readonly info: CallInfo;
  /** The answer the provider gave (a result or an error). */
  readonly answer: string;
  /** The highest block the provider was seen at (the monitor's check, answers), or null. */
  readonly confirmedHead: number | null;
}

/**
 * The block a provider must show before its answer is used, or null when no check is
 * needed: not a log query over numbered blocks (a `blockHash` filter names one block the
 * provider found; a tag left as written is the provider's own head), `toBlock` at or under
 * the provider's confirmed head, or an answer without logs (an error clamps nothing).
 */
export function blockToConfirm(question: ReachQuestion): number | null {
  const query = logQueryOf(question.info.method, question.info.params);
  if (query === null) return null;
  if (question.confirmedHead !== null && query.to <= question.confirmedHead) return null;
  // Parsed only now: most log answers are about blocks the provider was seen at.
  const result = (parseJsonOrUndefined(question.answer) as { result?: unknown } | undefined)
    ?.result;
  return Array.isArray(result) ? query.to : null;
}

/** What the checks lean on beside the attempt loop and the request's scope. */
interface ReachDeps {
  /** Heads seen in answers: a provider's confirmed head, and where a check is remembered. */
  readonly observed: ObservedHeads;
  /** Counts and logs a provider's failure of a call at once (its penalty waits). */
  readonly health: { noteFailure(attempt: AttemptRecord, verdict: FailureVerdict): void };
  /**
   * The lowest block each provider was found without, shared by the request's log queries:
   * an answer up to a block at or over it is dropped without asking again (a batch of
   * near-head queries would otherwise pay a check per query while a provider lags).
   */
  readonly lacking: Map<string, number>;
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
 * snapshot ever (no monitor) no provider's head is known: every query near the head would pay
 * one more call, a lone provider's on every query, for no provider to prefer over another.
 */
function checksReach(context: SelectionContext): boolean {
  return context.state.quorum !== null;
}

/**
 * `runAttempts`; for a log query the gateway serves to itself (whole or a piece), once the
 * monitor has written a snapshot, each answer from a provider not known to have reached its
 * `toBlock` is then checked (`runAttemptsCheckingReach`).
 */
export function runLogAttempts(
  loop: AttemptLoop,
  scope: RequestScope,
  observed: ObservedHeads,
  health: ReachDeps["health"],
  options: { readonly internal?: InternalCall },
): Promise<number> {
  const { internal } = options;
  if (internal === undefined || !checksReach(scope.context)) return runAttempts(loop);
  return runAttemptsCheckingReach(loop, scope, { observed, health, lacking: internal.lacking });
}

/**
 * `runAttempts`, and then each log answer from a provider not known to have reached its
 * `toBlock` is checked; a call whose provider lacks the block is open again and walks on to
 * its next provider, whose answer is checked in turn. At most one check per provider a call
 * reaches, each counted in `max_upstream_calls` and bound by the deadline. Returns the
 * upstream calls made.
 */
async function runAttemptsCheckingReach(
  loop: AttemptLoop,
  scope: RequestScope,
  deps: ReachDeps,
): Promise<number> {
  skipLacking(loop.open, scope, deps);
  let calls = await runAttempts(loop);
  let open = loop.open;
  for (;;) {
    const reopened: OpenCall[] = [];
    for (const entry of open) {
      const slot = entry.answeredBy;
      if (entry.answer === null || slot === null) continue;
      const block = blockToConfirm({
        info: entry.info,
        answer: entry.answer,
        confirmedHead: confirmedHead(scope, deps, slot.provider.name),
      });
      if (block === null) continue;
      const provider = slot.provider.name;
      if (block >= (deps.lacking.get(provider) ?? Number.POSITIVE_INFINITY)) {
        behind(entry, slot, block, 0, scope, deps);
        reopened.push(entry);
        continue;
      }
      const room = loop.callsMade + calls < loop.settings.max_upstream_calls;
      const timeoutMs = Math.floor(
        Math.min(loop.settings.request_timeout_ms, loop.deadline - loop.clock()),
      );
      if (!room || timeoutMs <= 0) {
        const why = room ? "the deadline passed" : "max_upstream_calls reached";
        reopen(
          entry,
          scope,
          `its logs were not used: not checked for block ${quantity(block)} (${why})`,
        );
        reopened.push(entry);
        continue;
      }
      calls++;
      const started = loop.clock();
      const shown = await showsBlock(slot, block, timeoutMs, loop, loop.upstream);
      if (shown) {
        // Remembered for this provider's next answers, whoever it is (a stalled monitor's
        // snapshot lets no provider raise the known head, and each query would pay a check);
        // as answers' heads are, only a quorum member's raises the known head.
        deps.observed.showed(scope.network.name, provider, block, loop.clock());
        if (mayRaiseHead(provider, slot.emergency, scope.context)) {
          deps.observed.observe(scope.network.name, provider, block, loop.clock());
        }
        continue;
      }
      deps.lacking.set(provider, Math.min(block, deps.lacking.get(provider) ?? block));
      behind(entry, slot, block, loop.clock() - started, scope, deps);
      reopened.push(entry);
    }
    if (reopened.length === 0) return calls;
    skipLacking(reopened, scope, deps);
    calls += await runAttempts({
      ...loop,
      open: reopened,
      callsMade: loop.callsMade + calls,
      hedging: undefined,
    });
    open = reopened;
  }
}

/**
 * The provider had not reached `block`: its answer is dropped and the call is open again, a
 * `behind` failure of the provider (no strike: as any provider behind a call, it is blamed
 * only if another one answers).
 */
function behind(
  entry: OpenCall,
  slot: AttemptSlot,
  block: number,
  elapsedMs: number,
  scope: RequestScope,
  deps: ReachDeps,
): void {
  const verdict: FailureVerdict = {
    outcome: "behind",
    detail: `its answer came without block ${quantity(block)} (toBlock): its logs may end before the range does`,
  };
  reopen(entry, scope, verdict.detail);
  entry.failures.push({ provider: slot.provider.name, signature: "behind" });
  keepAboveHeadRefusal(entry, block, slot.provider.name, scope);
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
function skipLacking(open: readonly OpenCall[], scope: RequestScope, deps: ReachDeps): void {
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

const HEX_QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const BLOCK_HASH = /^0x[0-9a-f]{64}$/i;

/** Whether the provider answers `eth_getBlockByNumber(block)` with that block (number and hash). */
async function showsBlock(
  slot: AttemptSlot,
  block: number,
  timeoutMs: number,
  loop: AttemptLoop,
  upstream: Upstream,
): Promise<boolean> {
  const number = quantity(block);
  const result = await upstream.send({
    url: slot.provider.url,
    body: `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["${number}",false]}`,
    timeoutMs,
    maxResponseBytes: loop.settings.max_response_bytes,
    idempotent: true,
  });
  if (!result.ok || result.status !== 200) return false;
  const shown = (parseJsonOrUndefined(result.body) as { result?: unknown } | undefined)?.result;
  if (typeof shown !== "object" || shown === null) return false;
  const { number: stated, hash } = shown as { number?: unknown; hash?: unknown };
  return (
    typeof stated === "string" &&
    HEX_QUANTITY.test(stated) &&
    Number(stated) === block &&
    typeof hash === "string" &&
    BLOCK_HASH.test(hash)
  );
}
