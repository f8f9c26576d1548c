import type { Provider } from "../config/network-model.ts";
import { type BoundInForce, boundInForce, keeps } from "../history/bounds.ts";
import { type HistoryNeed, RESOURCE_WORDS } from "../history/resources.ts";
import type { NetworkState } from "./network-state.ts";

/**
 * History-aware routing (docs/behaviour.md §15.2): a provider whose bound does not cover the
 * block a call needs is in the `history` slot and is never asked for that call; the others keep
 * their usual order.
 */

export interface HistoryView {
  readonly network: { readonly settings: { readonly history_bounds: { probe_seconds: number } } };
  readonly state: NetworkState;
  readonly now: number;
  readonly reachable?: (provider: string) => number | null;
}

/** A probe stands for this many probe intervals; older, it says nothing. */
const PROBE_VALID_INTERVALS = 3;

/** The head a window bound moves with: the highest block the provider can have reached. */
function headOf(provider: Provider, view: HistoryView): number | null {
  const reached = view.reachable?.(provider.name) ?? null;
  if (reached !== null) return reached;
  const quorum = view.state.quorum;
  return (
    quorum?.heads[provider.name]?.number ?? quorum?.head ?? view.state.head?.latest.number ?? null
  );
}

/** The provider's bound for `resource` as routing uses it now. */
export function boundOf(
  provider: Provider,
  resource: HistoryNeed["resource"],
  view: HistoryView,
): BoundInForce | null {
  const probeSeconds = view.network.settings.history_bounds.probe_seconds;
  return boundInForce(provider, view.state.history.get(provider.name), resource, {
    now: view.now,
    head: headOf(provider, view),
    probeValidMs: probeSeconds * PROBE_VALID_INTERVALS * 1000,
  });
}

/** The bound that leaves `need` out on `provider`, or null when it may keep it. */
export function lacking(
  provider: Provider,
  need: HistoryNeed,
  view: HistoryView,
): BoundInForce | null {
  const bound = boundOf(provider, need.resource, view);
  return keeps(bound, need.block) ? null : bound;
}

/** The routing explanation's reason for a provider in the `history` slot. */
export function historyReason(need: HistoryNeed, bound: BoundInForce): string {
  const kept = Number.isFinite(bound.from) ? `keeps it from block ${bound.from}` : "keeps none";
  return `does not keep ${RESOURCE_WORDS[need.resource]} at block ${need.block}: ${kept}, ${bound.source}: ${bound.why}`;
}
