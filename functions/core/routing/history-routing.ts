import type { Provider } from "../config/network-model.ts";
import { type HistoryBound, historyBound, type Keeping, keepingAt } from "../history/bounds.ts";
import { type HistoryNeed, RESOURCE_WORDS } from "../history/resources.ts";
import { PRUNED_CLAIM_RECENT_BLOCKS } from "../policies.ts";
import type { NetworkState } from "./network-state.ts";

/**
 * History-aware routing (docs/behaviour.md §16.2): a provider whose bound leaves out the block a
 * call needs is in the `history` slot and is never asked for that call; one that likely lacks it
 * is in the `pruned` slot, asked after every provider that may keep it; the others keep their
 * usual order.
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

/**
 * The provider's bound for `resource` as routing uses it now. A proof is of state, so a block
 * whose state a provider lacks it cannot prove either: `proofs` is the tighter of the two.
 */
export function boundOf(
  provider: Provider,
  resource: HistoryNeed["resource"],
  view: HistoryView,
): HistoryBound {
  const probeSeconds = view.network.settings.history_bounds.probe_seconds;
  const of = (which: HistoryNeed["resource"]) =>
    historyBound(
      provider,
      view.state.history.get(provider.name),
      which,
      {
        now: view.now,
        head: headOf(provider, view),
        probeValidMs: probeSeconds * PROBE_VALID_INTERVALS * 1000,
      },
      PRUNED_CLAIM_RECENT_BLOCKS,
    );
  return resource === "proofs" ? tighter(of("proofs"), of("state")) : of(resource);
}

/** Of two bounds, the later oldest block and the later doubt, each with its reason. */
function tighter(a: HistoryBound, b: HistoryBound): HistoryBound {
  const from = a.from >= b.from ? a : b;
  const likely = a.likelyFrom >= b.likelyFrom ? a : b;
  return {
    from: from.from,
    source: from.source,
    why: from.why,
    likelyFrom: Math.max(from.from, likely.likelyFrom),
    likelyWhy: likely.likelyFrom > from.from ? likely.likelyWhy : null,
  };
}

/** Where `provider` stands for `need`: keeps it, lacks it (never asked) or doubtful (asked last). */
export function keepingOf(provider: Provider, need: HistoryNeed, view: HistoryView): Keeping {
  return keepingAt(boundOf(provider, need.resource, view), need.block);
}

const kept = (from: number) =>
  Number.isFinite(from) ? `keeps it from block ${from}` : "keeps none";

/** The routing explanation's reason for a provider in the `history` or `pruned` slot. */
export function historyReason(need: HistoryNeed, keeping: Keeping): string {
  const what = `${RESOURCE_WORDS[need.resource]} at block ${need.block}`;
  if (keeping.kind === "lacks") {
    const { bound } = keeping;
    return `does not keep ${what}: ${kept(bound.from)}, ${bound.source}: ${bound.why}`;
  }
  if (keeping.kind === "doubt") {
    return `likely does not keep ${what}: ${keeping.bound.likelyWhy}; tried after those that may`;
  }
  return "";
}
