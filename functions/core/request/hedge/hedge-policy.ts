import type { Settings } from "../../config/config-schema.ts";
import { isKnownMethod, methodSpec } from "../../methods/catalogue.ts";

/**
 * Which reads may be hedged, and when (docs/behaviour.md §13). Pure: the methods and the
 * settings in, a decision out.
 */

export type HedgeSettings = Settings["hedge"];

/** Why a group of calls is never hedged. */
export type NoHedgeReason = "off" | "batch_too_large" | "not_a_hedgeable_read";

/**
 * A read the catalogue knows, safe to send twice, light and not looked up by a hash:
 * - a method outside the catalogue may do anything, so it is never sent twice on purpose;
 * - sends, signing, filters and subscriptions are not idempotent;
 * - heavy calls (logs, traces, simulations, proofs) are slow everywhere by nature, and a
 *   second one doubles expensive work on a provider; `debug_*` and `trace_*` are left out
 *   whatever their weight;
 * - a lookup by hash may be `null` on the provider that answers first only because it has not
 *   seen the transaction or block yet, where the slower one would have had it.
 */
export function hedgeableMethod(method: string): boolean {
  if (!isKnownMethod(method)) return false;
  if (method.startsWith("debug_") || method.startsWith("trace_")) return false;
  const spec = methodSpec(method);
  return spec.idempotent && spec.weight === "light" && spec.hashKeyed === null;
}

/** Why the calls sent together to one provider may not be hedged, or null when they may. */
export function whyNotHedged(
  methods: readonly string[],
  settings: HedgeSettings,
): NoHedgeReason | null {
  if (settings.max_ratio <= 0) return "off";
  if (methods.length > settings.max_batch) return "batch_too_large";
  if (methods.length === 0 || !methods.every(hedgeableMethod)) return "not_a_hedgeable_read";
  return null;
}

/**
 * How long the first attempt gets before the hedge: the provider's p90 for the call, clamped
 * to `min_ms`..`max_ms`; without a p90 worth the name (too few answers yet), `max_ms`, so a
 * container that knows nothing hedges only the worst of the tail.
 */
export function hedgeDelayMs(p90Ms: number | null, settings: HedgeSettings): number {
  if (p90Ms === null) return settings.max_ms;
  return Math.min(settings.max_ms, Math.max(settings.min_ms, Math.ceil(p90Ms)));
}
