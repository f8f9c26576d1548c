import type { FailureVerdict } from "./judge.ts";
import type { OpenCall } from "./open-call.ts";

/** One provider's failure of one call, as the suspicion rule compares them. */
export interface CallFailure {
  readonly provider: string;
  /** Failures with the same signature failed the same way. */
  readonly signature: string;
}

export function failureSignature(verdict: FailureVerdict): string {
  return verdict.outcome === "capability"
    ? "capability"
    : `${verdict.kind}/${verdict.reason}/${verdict.detail.split(":")[0]}`;
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
