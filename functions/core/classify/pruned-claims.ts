import { blockRefOf } from "../methods/block-ref.ts";
import { PRUNED_CLAIM_RECENT_BLOCKS } from "../policies.ts";
import type { CallInfo } from "./verdict.ts";

/**
 * A pruned-history answer about a tag that moves (`latest` and its kin), or about a block among
 * the recent ones every node keeps, is no history the provider dropped: it is the provider
 * failing (a corrupt or still-syncing node), judged as a bad answer (docs/behaviour.md §16.4).
 * `earliest`, older blocks and blocks named by hash are history.
 */
export function claimsRecentHistoryPruned(call: CallInfo, knownHead: number | null): boolean {
  const ref = blockRefOf(call.method, call.params);
  if (ref === null) return false;
  if (ref.kind === "hash") return false;
  const point = ref.kind === "range" ? ref.from : ref;
  if (point.kind === "tag") return point.tag !== "earliest";
  return knownHead !== null && point.number > knownHead - PRUNED_CLAIM_RECENT_BLOCKS;
}
