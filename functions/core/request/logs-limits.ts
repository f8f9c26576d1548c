import type { Network, Provider } from "../network-model.ts";
import type { LearnedLimit } from "../network-state.ts";
import type { StateStore, Telemetry } from "../ports.ts";
import type { StateCache } from "../state-cache.ts";

/**
 * How many blocks one eth_getLogs may span on each provider (docs/behaviour.md §12): the
 * configured `max_logs_range`, or a smaller span learned from the provider's own range errors,
 * remembered in the shared state until `learned_limit_ttl_seconds` pass.
 */

/** The most blocks one log query may span on `provider` now; Infinity when unknown. */
export function logsRangeOf(
  provider: Provider,
  learned: ReadonlyMap<string, LearnedLimit>,
  now: number,
): number {
  const limit = learned.get(provider.name);
  const learnedValue = limit !== undefined && limit.until > now ? limit.value : Infinity;
  return Math.min(provider.maxLogsRange ?? Infinity, learnedValue);
}

export interface LogsRangeDeps {
  readonly cache: StateCache;
  readonly store: StateStore;
  readonly telemetry: Telemetry;
  readonly clock: () => number;
}

/**
 * Remembers that `provider` refused a log query over `blocks` or more: in `learned` (this
 * request), this container's state and the shared store (every container). A span is only
 * ever lowered while it is in force. Returns the store write, which never rejects.
 */
export function learnLogsRange(
  network: Network,
  provider: string,
  blocks: number,
  learned: Map<string, LearnedLimit>,
  deps: LogsRangeDeps,
): Promise<void> {
  const now = deps.clock();
  const current = learned.get(provider);
  if (current !== undefined && current.until > now && current.value <= blocks) {
    return Promise.resolve();
  }
  const limit: LearnedLimit = {
    value: Math.max(1, blocks),
    until: now + network.settings.learned_limit_ttl_seconds * 1000,
  };
  learned.set(provider, limit);
  deps.cache.update(network.name, (state) => {
    const logsRanges = new Map(state.logsRanges);
    logsRanges.set(provider, limit);
    return { ...state, logsRanges };
  });
  deps.telemetry.count("logs_ranges_learned", { network: network.name, provider });
  deps.telemetry.log("info", "provider refused a log range: span learned", {
    network: network.name,
    provider,
    max_logs_range: limit.value,
  });
  return deps.store
    .recordLogsRange(network.name, provider, limit.value, limit.until)
    .catch((error: unknown) => {
      deps.telemetry.log("warn", "state store write failed: kept locally", {
        network: network.name,
        error: error instanceof Error ? error.message : String(error),
      });
      deps.telemetry.count("state_store_errors", { network: network.name });
    });
}
