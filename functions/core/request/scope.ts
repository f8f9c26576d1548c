import { publicationDelayMs } from "../chain/chain-head.ts";
import type { GatewayModel, Network } from "../config/network-model.ts";
import { type AcceptedRequest, callsOf, isCall } from "../jsonrpc/jsonrpc.ts";
import { FILTER_METHODS } from "../methods/filters.ts";
import { QUORUM_STALE_INTERVALS } from "../policies.ts";
import type { NetworkState } from "../routing/network-state.ts";
import {
  PLAIN_READ,
  rankProviders,
  type SelectionContext,
  whyNotCandidate,
} from "../routing/selection.ts";
import { highestSighting, type ObservedHeads } from "./head/observed-head.ts";
import { reachableBlocks, servedHeadView, tagsToPin } from "./head/served-head.ts";
import type { RequestScope } from "./vocabulary.ts";

/**
 * The draw for a request about filters only: the same order every time (weight, then the
 * config's order, within a priority), so a filter is polled on the provider that installed it
 * while that provider serves.
 */
const FIXED_DRAW = () => 0.5;

function aboutFiltersOnly(request: AcceptedRequest): boolean {
  return callsOf(request).every((member) => isCall(member) && FILTER_METHODS.has(member.method));
}

/** What a request's scope is drawn from beside the request and the state. */
export interface ScopeDeps {
  readonly random: () => number;
  /** Providers this container has rotated away from (force-rotate). */
  readonly demoted: (network: Network, now: number) => ReadonlySet<string>;
  readonly observed: ObservedHeads;
  /** The numbers of blocks this container knows by hash (docs/behaviour.md §16.2). */
  readonly numberOfHash?: (
    network: Network,
    state: NetworkState,
  ) => (hash: string) => number | null;
}

/**
 * What one request knows before its first attempt: the providers in its order, what routing
 * sees (state, demotions, the blocks each provider can have reached), the known head, the
 * served head and the tags it pins. Drawn once, so every call of a batch agrees.
 */
export function requestScope(
  model: GatewayModel,
  network: Network,
  request: AcceptedRequest,
  body: string,
  state: NetworkState,
  now: number,
  deps: ScopeDeps,
): RequestScope {
  const blockTimeMs = network.settings.block_time_seconds * 1000;
  const base = {
    network,
    state,
    now,
    checkIntervalSeconds: model.checkIntervalSeconds,
    demoted: deps.demoted(network, now),
  };
  const sightings = deps.observed.sightings(network, base);
  const reachable = reachableBlocks(state.quorum, sightings, now, blockTimeMs);
  const context: SelectionContext = {
    ...base,
    reachable,
    ...(deps.numberOfHash ? { numberOfHash: deps.numberOfHash(network, state) } : {}),
  };
  const servedHead = servedHeadView(
    state.head,
    now,
    publicationDelayMs(network.settings.head_cache_ms),
    blockTimeMs,
  );
  const candidates = network.providers
    .filter((provider) => whyNotCandidate(provider, PLAIN_READ, context) === null)
    .map((provider) => provider.name);
  return {
    network,
    model,
    request,
    single: request.kind === "single",
    ranked: rankProviders(
      network.providers,
      body,
      aboutFiltersOnly(request) ? FIXED_DRAW : deps.random,
    ),
    context,
    // Answers between monitor ticks may show a newer head than the snapshot, and the served
    // head may be newer still: a block at or below either exists.
    quorumHead: maxOrNull(
      maxOrNull(state.quorum?.head ?? null, highestSighting(sightings)),
      servedHead.newest > 0 ? servedHead.newest : null,
    ),
    servedHead,
    pin: network.settings.pin_block_tags
      ? tagsToPin(
          state.head,
          servedHead,
          candidates,
          reachable,
          now,
          QUORUM_STALE_INTERVALS * model.checkIntervalSeconds * 1000,
        )
      : null,
    used: [],
    writes: [],
    held: [],
    batchLimits: new Map(state.batchLimits),
  };
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.max(a, b);
}
