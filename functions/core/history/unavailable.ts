import type { Network, Provider } from "../config/network-model.ts";
import { errorResponse, methodPermitted } from "../jsonrpc/jsonrpc.ts";
import { boundOf, type HistoryView, keepingOf } from "../routing/history-routing.ts";
import { type HistoryNeed, type HistoryResource, resourceOf } from "./resources.ts";

/**
 * The one clear error a call gets when no provider of its network keeps what it needs
 * (docs/behaviour.md §16.5): -32000, naming the resource and the block, with the oldest block
 * any provider keeps. viem retries no -32000 and subsquid none whose words are not a transient
 * failure's, so a client does not hammer the gateway with it; the gateway itself asks no
 * upstream again for it while the bounds stand.
 */

export const HISTORY_UNAVAILABLE_CODE = -32000;

/** How the error names each resource, as the subject of "is not available". */
const SUBJECT: Readonly<Record<HistoryResource, string>> = {
  state: "state",
  proofs: "state for proofs",
  bodies: "block data",
  receipts: "receipt data",
  logs: "log data",
};

const hex = (block: number) => `0x${block.toString(16)}`;

/** The error answer; `block` a number, or the hash the gateway could not put a number to. */
export function unavailableAnswer(
  rawId: string | null,
  network: Network,
  resource: HistoryResource,
  block: number | string,
  oldest: number | null,
): string {
  const at = typeof block === "number" ? hex(block) : block;
  const kept = oldest === null ? "" : `; the oldest kept is block ${hex(oldest)}`;
  return errorResponse(
    rawId,
    HISTORY_UNAVAILABLE_CODE,
    `${SUBJECT[resource]} at block ${at} is not available on any provider of ${network.name}${kept}`,
    { resource, block: at, oldest_available: oldest === null ? null : hex(oldest) },
  );
}

/** The oldest block any of `providers` keeps of `resource` by its bound; null when unknown. */
export function oldestKept(
  providers: readonly Provider[],
  resource: HistoryResource,
  view: HistoryView,
): number | null {
  const bounds = providers.map((provider) => boundOf(provider, resource, view));
  // A provider nothing is known of may keep anything, and one whose edge is in doubt may keep
  // blocks it has not been asked for: the oldest kept is unknown.
  const unknown = (bound: (typeof bounds)[number]) =>
    bound.source === null || bound.likelyFrom > bound.from;
  if (bounds.length === 0 || bounds.some(unknown)) return null;
  const froms = bounds.map((bound) => bound.from).filter((from) => Number.isFinite(from));
  return froms.length === 0 ? null : Math.min(...froms);
}

/**
 * The clear error for a call no provider may serve because every one that could serve its
 * method lacks the block (its bound leaves it out); null when some provider may keep it, or
 * none lacks it (the call has no provider for another reason).
 */
export function unavailableEverywhere(
  rawId: string | null,
  network: Network,
  method: string,
  need: HistoryNeed,
  view: HistoryView,
): string | null {
  const serving = network.providers.filter((provider) =>
    methodPermitted(method, provider.methodsDeny ?? [], provider.methodsAllow),
  );
  if (serving.length === 0) return null;
  if (!serving.every((provider) => keepingOf(provider, need, view).kind === "lacks")) return null;
  return unavailableAnswer(
    rawId,
    network,
    need.resource,
    need.block,
    oldestKept(serving, need.resource, view),
  );
}

/** The resource a method reads, for a call whose block is a hash of no known number. */
export function resourceNamed(method: string): HistoryResource {
  return resourceOf(method) ?? "state";
}
