import { healthState } from "./health.ts";
import { methodPermitted } from "./jsonrpc.ts";
import type { Network, Provider } from "./network-model.ts";
import {
  capabilityBlacklistedUntil,
  healthOf,
  type NetworkState,
  quorumInForce,
} from "./network-state.ts";

/** Effective priority: the highest matching `priority_match` value, else `priority`. */
export function effectivePriority(provider: Provider, body: string): number {
  let best: number | null = null;
  for (const [needle, priority] of provider.priorityMatch) {
    if (body.includes(needle) && (best === null || priority > best)) best = priority;
  }
  return best ?? provider.priority;
}

/**
 * Providers in preference order for one request: primaries before backups, higher effective
 * priority first, and within a priority a weighted random order by `tiebreak_weight`
 * (Efraimidis–Spirakis keys). Drawn once per request so every call of a batch agrees.
 */
export function rankProviders(
  providers: readonly Provider[],
  body: string,
  random: () => number,
): Provider[] {
  const keyed = providers.map((provider) => ({
    provider,
    priority: effectivePriority(provider, body),
    key: random() ** (1 / provider.tiebreakWeight),
  }));
  keyed.sort(
    (a, b) =>
      Number(a.provider.backup) - Number(b.provider.backup) ||
      b.priority - a.priority ||
      b.key - a.key ||
      a.provider.index - b.provider.index,
  );
  return keyed.map((entry) => entry.provider);
}

export type NotCandidateReason =
  | "blacklisted"
  | "awaiting_probe"
  | "out_of_quorum"
  | "capability"
  | "method_not_served";

export interface SelectionContext {
  readonly network: Network;
  readonly state: NetworkState;
  readonly now: number;
  readonly checkIntervalSeconds: number;
  /** Providers this container rotated away from (force-rotate without a backup). */
  readonly demoted: ReadonlySet<string>;
}

export function whyNotCandidate(
  provider: Provider,
  method: string,
  context: SelectionContext,
): NotCandidateReason | null {
  if (!methodPermitted(method, provider.methodsDeny ?? [], provider.methodsAllow)) {
    return "method_not_served";
  }
  const health = healthState(healthOf(context.state, provider.name), context.now);
  if (health === "blacklisted") return "blacklisted";
  if (health === "awaiting_probe") return "awaiting_probe";
  if (capabilityBlacklistedUntil(context.state, provider.name, method, context.now) !== null) {
    return "capability";
  }
  if (
    quorumInForce(context.state, context.now, context.checkIntervalSeconds) &&
    !context.state.quorum?.members.includes(provider.name)
  ) {
    return "out_of_quorum";
  }
  return null;
}

export interface AttemptSlot {
  readonly provider: Provider;
  /** Tried although not a candidate: failures add no strikes (SPEC §3.5). */
  readonly emergency: boolean;
}

function emergencyRank(provider: Provider, method: string, context: SelectionContext): number {
  const until = healthOf(context.state, provider.name).blacklistedUntil;
  const capability = capabilityBlacklistedUntil(context.state, provider.name, method, context.now);
  return Math.max(until > context.now ? until : 0, capability ?? 0);
}

/**
 * The order in which one call walks the providers (SPEC §3): candidates by rank, backups
 * only while no primary is a candidate, then — so that no request is refused while a
 * provider exists — the rest in order of earliest blacklist expiry, as emergency use.
 * Providers configured not to serve the method are never tried.
 */
export function attemptOrder(
  ranked: readonly Provider[],
  method: string,
  context: SelectionContext,
): AttemptSlot[] {
  const candidates: Provider[] = [];
  const others: Provider[] = [];
  for (const provider of ranked) {
    const reason = whyNotCandidate(provider, method, context);
    if (reason === null) candidates.push(provider);
    else if (reason !== "method_not_served") others.push(provider);
  }
  const primaries = candidates.filter((provider) => !provider.backup);
  const preferred = primaries.length > 0 ? primaries : candidates;
  const undemoted = preferred.filter((provider) => !context.demoted.has(provider.name));
  const demoted = preferred.filter((provider) => context.demoted.has(provider.name));
  const backups = primaries.length > 0 ? candidates.filter((provider) => provider.backup) : [];
  const emergency = others
    .map((provider, order) => ({ provider, order, rank: emergencyRank(provider, method, context) }))
    .sort((a, b) => a.rank - b.rank || a.order - b.order)
    .map((entry) => entry.provider);
  return [
    ...undemoted.map((provider) => ({ provider, emergency: false })),
    ...demoted.map((provider) => ({ provider, emergency: false })),
    ...backups.map((provider) => ({ provider, emergency: false })),
    ...emergency.map((provider) => ({ provider, emergency: true })),
  ];
}

/** The provider traffic goes to now: the first candidate for a plain read. */
export function activeProvider(network: Network, context: SelectionContext): Provider | null {
  const ranked = [...network.providers].sort(
    (a, b) =>
      Number(a.backup) - Number(b.backup) ||
      b.priority - a.priority ||
      b.tiebreakWeight - a.tiebreakWeight ||
      a.index - b.index,
  );
  const first = attemptOrder(ranked, "eth_blockNumber", context)[0];
  return first && !first.emergency ? first.provider : null;
}
