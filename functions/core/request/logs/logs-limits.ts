import type { Network } from "../../config/network-model.ts";
import type { StateStore, Telemetry } from "../../ports.ts";
import { keepLearnedLimit } from "../../routing/learned-limits.ts";
import type { LearnedLimit } from "../../routing/network-state.ts";
import type { StateCache } from "../../routing/state-cache.ts";

/**
 * How many blocks one eth_getLogs may span on each provider (docs/behaviour.md §12): the
 * configured `max_logs_range`, or a smaller span learned from the provider's own range errors,
 * remembered in the shared state until `learned_limit_ttl_seconds` pass.
 */

export interface LogsRangeDeps {
  readonly cache: StateCache;
  readonly store: StateStore;
  readonly telemetry: Telemetry;
  readonly clock: () => number;
}

/**
 * Remembers that `provider` takes log queries of at most `blocks` blocks (it refused a wider
 * one): in `learned` (this request), this container's state and the shared store (every
 * container). A span is only ever lowered while it is in force. Returns the store write, which
 * never rejects.
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
  deps.telemetry.count("logs_ranges_learned", { network: network.name, provider });
  deps.telemetry.log("info", "provider refused a log range: span learned", {
    network: network.name,
    provider,
    max_logs_range: limit.value,
  });
  return keepLearnedLimit(
    network,
    provider,
    limit,
    "logsRanges",
    () => deps.store.recordLogsRange(network.name, provider, limit.value, limit.until),
    deps,
  );
}
