/**
 * Probe-gated recovery (docs/behaviour.md §6): what the monitor's probe of a provider awaiting recovery
 * compares against, and how its answers are judged. Step 1 asks the candidate for its latest
 * block (alive); step 2, concurrently, asks the provider traffic goes to now (up to date).
 */

/** `eth_getBlockByNumber("latest", false)`: the block's number and timestamp (s), or why it failed. */
export type ProbeCall =
  | { readonly number: number; readonly timestamp: number }
  | { readonly error: string };

export interface ProbePlanInput {
  readonly candidate: string;
  /** Every provider of the network. */
  readonly providers: readonly string[];
  /** The provider traffic goes to now, if any. */
  readonly activeProvider: string | null;
  readonly activeAvailable: boolean;
}

/**
 * Step 2 is skipped (compareWith null) when there is nothing sound to compare with: a lone
 * provider, no active provider or an unavailable one, or the candidate itself being active.
 */
export function probePlan(input: ProbePlanInput): { compareWith: string | null } {
  const { candidate, providers, activeProvider, activeAvailable } = input;
  const skip =
    providers.length < 2 ||
    activeProvider === null ||
    !activeAvailable ||
    activeProvider === candidate;
  return { compareWith: skip ? null : activeProvider };
}

export interface ProbeVerdictInput {
  readonly candidate: ProbeCall;
  /** Step 2's answer; null when step 2 was skipped. */
  readonly reference: ProbeCall | null;
  /** Names the reference in the detail. */
  readonly referenceName?: string;
  readonly maxLagSeconds: number;
}

export interface ProbeVerdict {
  readonly result: "pass" | "fail";
  /** Short and human; may quote an upstream error, so the caller redacts it. */
  readonly detail: string;
}

/**
 * A candidate that errors fails. Without a usable reference (skipped, or its call errored)
 * being alive is enough. Otherwise it fails when its block is more than `maxLagSeconds`
 * behind the reference's by timestamp; exactly `maxLagSeconds` behind passes.
 */
export function probeVerdict(input: ProbeVerdictInput): ProbeVerdict {
  const { candidate, reference, maxLagSeconds } = input;
  const referenceName = input.referenceName ?? "the active provider";
  if ("error" in candidate) return { result: "fail", detail: `no answer: ${candidate.error}` };
  if (reference === null) return { result: "pass", detail: `alive at block ${candidate.number}` };
  if ("error" in reference) {
    return {
      result: "pass",
      detail: `alive at block ${candidate.number}; ${referenceName} did not answer, so not compared`,
    };
  }
  const behind = reference.timestamp - candidate.timestamp;
  if (behind > maxLagSeconds) {
    return { result: "fail", detail: `${behind} s behind ${referenceName}` };
  }
  return {
    result: "pass",
    detail: `alive at block ${candidate.number}, up to date with ${referenceName}`,
  };
}

export interface ProbeHealth {
  readonly provider: string;
  readonly awaitingProbe: boolean;
  /** A running probe's lease (ms); the provider is being probed while now < this. */
  readonly probeInFlightUntil: number;
}

/** Providers to probe now: awaiting a probe and none in flight (one probe per provider at a time). */
export function providersToProbe(health: readonly ProbeHealth[], now: number): string[] {
  return health
    .filter((entry) => entry.awaitingProbe && entry.probeInFlightUntil <= now)
    .map((entry) => entry.provider);
}
