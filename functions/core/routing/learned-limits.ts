import type { Network, Provider } from "../config/network-model.ts";
import type { Telemetry } from "../ports.ts";
import type { LearnedLimit, NetworkState } from "./network-state.ts";
import type { StateCache } from "./state-cache.ts";

/**
 * Limits learned from a provider's own errors (its largest batch, its log range): each is in
 * force until it expires, only ever lowers a configured one, and is shared through the state.
 */

/** The limit in force now: the configured one, or a smaller learned one; Infinity for none. */
export function limitInForce(
  configured: number | undefined,
  learned: LearnedLimit | undefined,
  now: number,
): number {
  const learnedValue = learned !== undefined && learned.until > now ? learned.value : Infinity;
  return Math.min(configured ?? Infinity, learnedValue);
}

/** The largest batch a provider takes now: the configured `max_batch`, or a smaller learned one. */
export function batchLimitOf(
  provider: Provider,
  learned: ReadonlyMap<string, LearnedLimit>,
  now: number,
): number {
  return limitInForce(provider.maxBatch, learned.get(provider.name), now);
}

/** The most blocks one log query may span on `provider` now; Infinity when unknown. */
export function logsRangeOf(
  provider: Provider,
  learned: ReadonlyMap<string, LearnedLimit>,
  now: number,
): number {
  return limitInForce(provider.maxLogsRange, learned.get(provider.name), now);
}

/** Which learned limits of the network state. */
export type LearnedLimits = "batchLimits" | "logsRanges";

/**
 * Puts a learned limit in this container's state at once, and returns the shared store's
 * `write` of it, which never rejects: a failed write is logged and counted, and the limit
 * stays in force here.
 */
export function keepLearnedLimit(
  network: Network,
  provider: string,
  limit: LearnedLimit,
  kind: LearnedLimits,
  write: () => Promise<void>,
  deps: { readonly cache: StateCache; readonly telemetry: Telemetry },
): Promise<void> {
  deps.cache.update(network.name, (state): NetworkState => {
    const limits = new Map(state[kind]);
    limits.set(provider, limit);
    return { ...state, [kind]: limits };
  });
  return write().catch((error: unknown) => {
    deps.telemetry.log("warn", "state store write failed: kept locally", {
      network: network.name,
      error: error instanceof Error ? error.message : String(error),
    });
    deps.telemetry.count("state_store_errors", { network: network.name });
  });
}
