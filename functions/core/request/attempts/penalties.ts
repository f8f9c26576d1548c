import { SUSPECT_TRAFFIC_WINDOW_MS } from "../../policies.ts";
import type { Telemetry } from "../../ports.ts";
import { quorumInForce } from "../../routing/network-state.ts";
import type { SelectionContext } from "../../routing/selection.ts";
import type { AttemptRecord, FailureVerdict, HeldPenalty, OpenCall } from "../vocabulary.ts";

/**
 * Another provider's own answer settled a call this one was behind on. About a hash this
 * provider did not know, only an answer that found it (not null) does: else a caller asking
 * about made-up hashes, where one kind of node says "not found" and another answers null,
 * had the first counted a failed request each time, and "failing often" left it out.
 */
function settledBehind(verdict: FailureVerdict & { outcome: "behind" }, call: OpenCall): boolean {
  if (call.answeredBy === null) return false;
  return verdict.unknownHash !== true || !answersNull(call.answer);
}

function answersNull(answer: string | null): boolean {
  if (answer === null) return true;
  try {
    return (JSON.parse(answer) as { result?: unknown }).result === null;
  } catch {
    return false;
  }
}

export function failureSignature(verdict: FailureVerdict): string {
  return verdict.outcome === "retry"
    ? `${verdict.kind}/${verdict.reason}/${verdict.detail.split(":")[0]}`
    : verdict.outcome;
}

/**
 * When every provider that tried a call failed it the same way, while they serve other
 * traffic, the call is the likelier culprit than the providers (a request a WAF drops, a
 * method nobody serves): the caller gets the error and nobody is penalised
 * (docs/behaviour.md §4.9). Needs two providers or more; a call another provider answered,
 * or one failed in different ways, suspects nobody but the providers. Every provider saying
 * "method not found" is the caller's fault whatever else they serve.
 */
export function suspectRequest(
  call: OpenCall,
  servesOtherTraffic: (provider: string) => boolean,
): boolean {
  if (call.answer !== null) return false;
  const [first] = call.failures;
  if (first === undefined) return false;
  const providers = new Set(call.failures.map((failure) => failure.provider));
  if (providers.size < 2) return false;
  if (!call.failures.every((failure) => failure.signature === first.signature)) return false;
  return first.signature === "capability" || [...providers].every(servesOtherTraffic);
}

export interface PenaltyDeps {
  readonly telemetry: Telemetry;
  /** When the provider last answered this container, if it did. */
  readonly lastSuccessAt: (provider: string) => number | undefined;
  /** Penalises the attempt's provider for failing calls of `methods`. */
  readonly penalise: (attempt: AttemptRecord, verdict: FailureVerdict, methods: string[]) => void;
}

/**
 * The penalties a request's failures earned, once its calls are settled: none for a call
 * every provider failed the same way (the request is suspect), none for a timeout the
 * deadline cut short, none for being behind on a call no other provider answered about its
 * block, the rest as judged.
 */
export function settlePenalties(
  held: readonly HeldPenalty[],
  context: SelectionContext,
  deps: PenaltyDeps,
): void {
  const servesOtherTraffic = (provider: string): boolean => {
    const lastSuccess = deps.lastSuccessAt(provider);
    if (lastSuccess !== undefined && context.now - lastSuccess <= SUSPECT_TRAFFIC_WINDOW_MS) {
      return true;
    }
    return (
      quorumInForce(context.state, context.now, context.checkIntervalSeconds) &&
      (context.state.quorum?.members.includes(provider) ?? false)
    );
  };
  const suspects = new Set<OpenCall>();
  for (const penalty of held) {
    const { verdict } = penalty;
    // Pruned history is no one's fault, and a call every provider refused so suspects no one.
    if (verdict.outcome === "pruned") continue;
    if (penalty.cutShort && verdict.outcome === "retry" && verdict.kind === "timeout") continue;
    const suspected = penalty.calls.filter((call) => suspectRequest(call, servesOtherTraffic));
    for (const call of suspected) suspects.add(call);
    // Behind blames a provider only when another provider's own answer settled the call; a
    // call every provider was behind on (a served head above the chain), answered then by the
    // served head or only when resent as written (docs/behaviour.md §10.4), blames nobody.
    const blamed = penalty.calls.filter(
      (call) =>
        !suspected.includes(call) && (verdict.outcome !== "behind" || settledBehind(verdict, call)),
    );
    if (blamed.length > 0) {
      deps.penalise(
        penalty.attempt,
        verdict,
        blamed.map((call) => call.info.method),
      );
    }
  }
  const network = context.network.name;
  for (const call of suspects) {
    deps.telemetry.count("suspected_requests", { network });
    deps.telemetry.log("warn", "every provider failed a call the same way: nobody penalised", {
      network,
      method: call.info.method,
      providers: call.failures.map((failure) => failure.provider),
      failure: call.failures[0]?.signature,
    });
  }
}
