import { methodSpec } from "../../methods/catalogue.ts";
import type { UpstreamResult } from "../../ports.ts";
import type { ContainerState } from "../container-state.ts";
import { mayRaiseHead } from "../head/observed-head.ts";
import { answerFrom, failed, keep, note } from "../open-call.ts";
import type { AttemptGroup, AttemptRecord, RequestScope } from "../vocabulary.ts";
import { learnBatchLimit, refusedAsTooLarge } from "./batch-limits.ts";
import { judgeAttempt } from "./judge.ts";
import { failureSignature } from "./penalties.ts";

/**
 * One attempt's result, judged and recorded (docs/behaviour.md §4): its calls answered, kept
 * for later or sent on; the heads its answers show; what it means for its provider (a failure
 * noted now, its penalty held for the end of the request; a success recorded), and what it
 * teaches of the provider's history (docs/behaviour.md §16.3). A batch refused
 * as too large goes back to the same provider in halves instead.
 */
export function recordAttempt(
  container: ContainerState,
  scope: RequestScope,
  group: AttemptGroup,
  result: UpstreamResult,
  cutShort: boolean,
): void {
  const { network, model } = scope;
  const { deps } = container;
  const { slot, calls } = group;
  const provider = slot.provider.name;
  const judgement = judgeAttempt(result, calls, group.alone, {
    quorumHead: scope.quorumHead,
    chainId: network.chainId,
    innerErrors: model.innerErrors,
    now: deps.clock(),
    servable: (method) => container.servable.servable(network, method),
    headToleranceBlocks: network.settings.head_tolerance_blocks,
    requestSingle: scope.single,
  });
  if (refusedAsTooLarge(group, judgement)) {
    scope.writes.push(learnBatchLimit(network, group, judgement, scope.batchLimits, deps));
    return;
  }
  judgement.outcomes.forEach((outcome, index) => {
    const entry = calls[index];
    // A hedged read's other attempt may have answered the call already: that answer stands.
    if (entry === undefined || entry.answer !== null) return;
    if (outcome.kind === "answer") {
      answerFrom(entry, outcome.text, slot, outcome.member);
    } else if (outcome.kind === "inner_error") {
      keep(entry, { text: outcome.text, provider });
      note(entry, `inner error ${outcome.detail}`);
    } else {
      if (outcome.errorAnswer !== null) keep(entry, { text: outcome.errorAnswer, provider });
      failed(
        entry,
        { provider, signature: failureSignature(outcome.verdict) },
        `${provider}: ${outcome.verdict.detail}`,
      );
    }
  });
  container.history.record(scope, group, judgement);
  for (const { info } of judgement.okAnswers) container.servable.answered(network, info.method);
  if (mayRaiseHead(provider, slot.emergency, scope.context)) {
    for (const answered of judgement.okAnswers) {
      container.observed.observeAnswer(network.name, provider, answered, scope.context.now);
      container.reach.checks.keepAnswered(network.name, answered.info, answered.member);
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
    container.health.noteFailure(attempt, judgement.failure);
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
  if (judgement.success !== null) container.health.succeeded(attempt, judgement.success);
}
