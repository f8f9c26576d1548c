import type { Settings } from "../../config/config-schema.ts";

/**
 * The cap on upstream calls one request may cause (`max_upstream_calls`), so a batch of many
 * calls retried across providers cannot multiply into an unbounded number of paid upstream
 * requests. Every HTTP call to a provider counts once, a batch sent as one body included.
 */

/** EIP-1474 "limit exceeded". */
const LIMIT_EXCEEDED = -32005;

/** How many more upstream calls a request that has made `callsMade` may make (never negative). */
export function upstreamCallBudget(
  settings: Pick<Settings, "max_upstream_calls">,
  callsMade: number,
): number {
  return Math.max(0, settings.max_upstream_calls - Math.max(0, callsMade));
}

/**
 * Of the calls a round wants to make, those the budget allows (in the given order) and those
 * it does not; the caller answers the latter with `callBudgetError`.
 */
export function withinCallBudget<T>(
  settings: Pick<Settings, "max_upstream_calls">,
  callsMade: number,
  wanted: readonly T[],
): { readonly send: T[]; readonly refused: T[] } {
  const allowed = upstreamCallBudget(settings, callsMade);
  return { send: wanted.slice(0, allowed), refused: wanted.slice(allowed) };
}

/** The JSON-RPC error for a call left unserved by the budget: "limit exceeded" (EIP-1474). */
export function callBudgetError(settings: Pick<Settings, "max_upstream_calls">): {
  readonly code: number;
  readonly message: string;
  /** What happened, for the last error of a call its providers had failed before. */
  readonly reached: string;
} {
  const reached = `this request reached max_upstream_calls (${settings.max_upstream_calls} upstream calls)`;
  return { code: LIMIT_EXCEEDED, message: `${reached}: send fewer calls per batch`, reached };
}
