import type { Network } from "../../config/network-model.ts";
import type { StateStore, Telemetry } from "../../ports.ts";
import { keepLearnedLimit } from "../../routing/learned-limits.ts";
import type { LearnedLimit } from "../../routing/network-state.ts";
import type { StateCache } from "../../routing/state-cache.ts";
import type { AttemptGroup } from "../vocabulary.ts";
import type { AttemptJudgement } from "./judge.ts";
import { resendToSameProvider } from "./plan.ts";

/**
 * Providers' batch limits (docs/behaviour.md §4.11): a provider that refuses a batch as too
 * large gets the same calls again in halves, and the size is remembered (shared, with an
 * expiry), so no provider is blacklisted for a batch size and single calls never suffer.
 */

/** Whether a batch-sized attempt failed because the batch was too large for the provider. */
export function refusedAsTooLarge(group: AttemptGroup, judgement: AttemptJudgement): boolean {
  const failure = judgement.failure;
  return (
    !group.alone &&
    failure !== null &&
    failure.outcome === "retry" &&
    failure.reason === "batch_limit"
  );
}

export interface BatchLimitDeps {
  readonly cache: StateCache;
  readonly store: StateStore;
  readonly telemetry: Telemetry;
  readonly clock: () => number;
}

/**
 * The provider refused the group's batch as too large: the calls it refused go back to it
 * in halves (at least one), with their attempt given back; answers it did give stand. The
 * size is remembered in `learned` (this request), this container's state and the shared
 * store (every container), until `learned_limit_ttl_seconds` pass.
 */
export function learnBatchLimit(
  network: Network,
  group: AttemptGroup,
  judgement: AttemptJudgement,
  learned: Map<string, LearnedLimit>,
  deps: BatchLimitDeps,
): Promise<void> {
  const provider = group.slot.provider.name;
  group.calls.forEach((entry, index) => {
    const outcome = judgement.outcomes[index];
    if (outcome?.kind === "answer") entry.answer = outcome.text;
  });
  resendToSameProvider(
    group.calls.filter((_, index) => judgement.outcomes[index]?.kind === "retry"),
  );
  const limit: LearnedLimit = {
    value: Math.max(1, Math.floor(group.calls.length / 2)),
    until: deps.clock() + network.settings.learned_limit_ttl_seconds * 1000,
  };
  learned.set(provider, limit);
  deps.telemetry.count("batch_limits_learned", { network: network.name, provider });
  deps.telemetry.log("info", "provider refused a batch as too large: sending halves", {
    network: network.name,
    provider,
    refused: group.calls.length,
    next_size: limit.value,
  });
  return keepLearnedLimit(
    network,
    provider,
    limit,
    "batchLimits",
    () => deps.store.recordBatchLimit(network.name, provider, limit.value, limit.until),
    deps,
  );
}
