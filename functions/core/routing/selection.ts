import type { Network, Provider } from "../config/network-model.ts";
import { healthState } from "../health/health.ts";
import type { Keeping } from "../history/bounds.ts";
import type { HistoryNeed } from "../history/resources.ts";
import { methodPermitted } from "../jsonrpc/jsonrpc.ts";
import { historyReason, keepingOf } from "./history-routing.ts";
import { logsRangeOf } from "./learned-limits.ts";
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
  /**
   * The highest block a provider can have reached by now (its known head, plus what the chain
   * can have moved since it was known), or null when unknown: block-aware routing puts a
   * provider that cannot have reached a call's block after the others.
   */
  readonly reachable?: (provider: string) => number | null;
  /** The number of a block known by its hash (EIP-1898 by hash, docs/behaviour.md §16.2). */
  readonly numberOfHash?: (hash: string) => number | null;
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

/**
 * Where a provider stands for one call (docs/behaviour.md §3):
 * - `candidate`: in the normal walk, by priority (a backup is one while no primary is);
 * - `demoted`: a candidate this container rotated away from, tried after every other
 *   candidate of its kind (primaries, or backups in use) and before the backups;
 * - `backup`: a backup while a primary is a candidate, tried after the primaries;
 * - `limited`: a candidate whose known log range (`max_logs_range`, or learned) is smaller
 *   than the blocks an eth_getLogs spans, tried after every candidate that can take it
 *   (docs/behaviour.md §12);
 * - `behind`: a candidate that cannot have reached the block the call is about yet, tried
 *   after every candidate that can (docs/behaviour.md §10);
 * - `emergency`: not a candidate, tried last (earliest expiry first) so no call is refused
 *   while a provider exists; failures there add no strikes;
 * - `pruned`: it likely does not keep the block the call needs (it refused an older one, or one
 *   it is configured to keep), tried after every provider that may (docs/behaviour.md §16.2);
 * - `history`: its bound (configured, learned or probed) leaves out the block the call needs,
 *   never tried for that call (docs/behaviour.md §16.2);
 * - `skipped`: configured not to serve the method, never tried.
 */
export type RoutingSlot =
  | "candidate"
  | "demoted"
  | "backup"
  | "limited"
  | "behind"
  | "emergency"
  | "pruned"
  | "history"
  | "skipped";

export interface RoutingEntry {
  readonly provider: Provider;
  readonly slot: RoutingSlot;
  /** Why the provider is in its slot, as one line an operator can read. */
  readonly reason: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The effective priority of a candidate, and the `priority_match` key that set it. */
function priorityReason(provider: Provider, body: string): string {
  const effective = effectivePriority(provider, body);
  if (effective === provider.priority) return `priority ${effective}`;
  const match = provider.priorityMatch.find(
    ([needle, priority]) => priority === effective && body.includes(needle),
  );
  return `priority ${effective} from priority_match ${JSON.stringify(match?.[0] ?? "")}`;
}

function notCandidateReason(
  provider: Provider,
  method: string,
  why: NotCandidateReason,
  context: SelectionContext,
): string {
  const health = healthOf(context.state, provider.name);
  switch (why) {
    case "method_not_served":
      return `configured not to serve ${method} (methods_deny / methods_allow)`;
    case "blacklisted":
      return `blacklisted (${health.reason ?? "unknown"}) until ${iso(health.blacklistedUntil)}`;
    case "awaiting_probe":
      return `awaiting the monitor's probe after a ${health.reason ?? "blacklist"} cooldown`;
    case "capability": {
      const until = capabilityBlacklistedUntil(context.state, provider.name, method, context.now);
      return `does not serve ${method} (capability blacklist until ${iso(until ?? 0)})`;
    }
    case "out_of_quorum":
      return `out of quorum (${context.state.quorum?.excluded[provider.name] ?? "no_answer"})`;
  }
}

function emergencyRank(provider: Provider, method: string, context: SelectionContext): number {
  const until = healthOf(context.state, provider.name).blacklistedUntil;
  const capability = capabilityBlacklistedUntil(context.state, provider.name, method, context.now);
  return Math.max(until > context.now ? until : 0, capability ?? 0);
}

/**
 * The routing explanation: every provider of `ranked` in the order one call walks them, each
 * with its slot and the reason. The attempt order, the active provider, the status route's
 * `routing` and the per-request debug line all derive from this one function, so the answer
 * to "why did this provider get no traffic" lives here. `body` only words the priority reason;
 * `span` is the blocks a log query covers (null for any other call); `need` what of which
 * block the call needs a provider to keep (null when no bound applies).
 */
export function explainRouting(
  ranked: readonly Provider[],
  method: string,
  context: SelectionContext,
  body = "",
  block: number | null = null,
  span: number | null = null,
  need: HistoryNeed | null = null,
): RoutingEntry[] {
  return route(ranked, method, context, body, block, span, true, need);
}

/**
 * `explainRouting`, with the reasons worded only when `worded`: the attempt order of every
 * call needs the slots alone, and wording a reason costs more than finding the slot.
 */
function route(
  ranked: readonly Provider[],
  method: string,
  context: SelectionContext,
  body: string,
  block: number | null,
  span: number | null,
  worded: boolean,
  need: HistoryNeed | null,
): RoutingEntry[] {
  const candidates: Provider[] = [];
  const limited: Array<{ provider: Provider; range: number }> = [];
  const behind: Array<{ provider: Provider; reached: number }> = [];
  const others: Array<{ provider: Provider; why: NotCandidateReason }> = [];
  const lacks: Array<{ provider: Provider; keeping: Keeping }> = [];
  const pruned: Array<{ provider: Provider; keeping: Keeping }> = [];
  for (const provider of ranked) {
    const why = whyNotCandidate(provider, method, context);
    const keeping: Keeping =
      need === null || why === "method_not_served"
        ? { kind: "keeps" }
        : keepingOf(provider, need, context);
    if (keeping.kind === "lacks") {
      lacks.push({ provider, keeping });
      continue;
    }
    if (keeping.kind === "doubt" && why === null) {
      pruned.push({ provider, keeping });
      continue;
    }
    const reached = block === null ? null : (context.reachable?.(provider.name) ?? null);
    const range =
      span === null ? Infinity : logsRangeOf(provider, context.state.logsRanges, context.now);
    if (why !== null) others.push({ provider, why });
    else if (reached !== null && block !== null && reached < block) {
      behind.push({ provider, reached });
    } else if (span !== null && range < span) limited.push({ provider, range });
    else candidates.push(provider);
  }
  const primaries = candidates.filter((provider) => !provider.backup);
  const backupsInUse = primaries.length === 0;
  const preferred = backupsInUse ? candidates : primaries;
  // A backup that alone keeps the block serves this call while the primaries are healthy.
  const forThisCall =
    worded && need !== null && [...lacks, ...pruned].some(({ provider }) => !provider.backup)
      ? `backup in use for this call: no primary candidate keeps block ${need.block}`
      : "backup in use: no primary is a candidate";
  // Built by pushing, slot after slot: every call of every request routes through here.
  const order: RoutingEntry[] = [];
  for (const provider of preferred) {
    if (context.demoted.has(provider.name)) continue;
    order.push({
      provider,
      slot: "candidate",
      reason: !worded
        ? ""
        : backupsInUse && provider.backup
          ? `${forThisCall}; ${priorityReason(provider, body)}`
          : backupsInUse
            ? `backup in use: no primary is a candidate; ${priorityReason(provider, body)}`
            : priorityReason(provider, body),
    });
  }
  for (const provider of preferred) {
    if (!context.demoted.has(provider.name)) continue;
    order.push({
      provider,
      slot: "demoted",
      reason: "demoted in this container after unclassified errors in a row (force-rotate)",
    });
  }
  if (!backupsInUse) {
    for (const provider of candidates) {
      if (!provider.backup) continue;
      order.push({
        provider,
        slot: "backup",
        reason: "backup: tried after the primaries while a primary is a candidate",
      });
    }
  }
  for (const { provider, range } of limited) {
    order.push({
      provider,
      slot: "limited",
      reason: worded
        ? `takes log queries of at most ${range} blocks (max_logs_range), this one spans ${span}; tried after those that can`
        : "",
    });
  }
  for (const { provider, reached } of behind) {
    order.push({
      provider,
      slot: "behind",
      reason: worded
        ? `cannot have reached block ${block} yet (known head ${reached}); tried after those that can`
        : "",
    });
  }
  for (const { provider, keeping } of pruned) {
    order.push({
      provider,
      slot: "pruned",
      reason: worded && need !== null ? historyReason(need, keeping) : "",
    });
  }
  if (others.length > 0) {
    const emergency = others
      .filter(({ why }) => why !== "method_not_served")
      .map((entry, rank) => ({
        ...entry,
        rank,
        until: emergencyRank(entry.provider, method, context),
      }))
      .sort((a, b) => a.until - b.until || a.rank - b.rank);
    for (const { provider, why } of emergency) {
      order.push({
        provider,
        slot: "emergency",
        reason: worded
          ? `${notCandidateReason(provider, method, why, context)}; tried only when no candidate answers`
          : "",
      });
    }
  }
  for (const { provider, keeping } of lacks) {
    order.push({
      provider,
      slot: "history",
      reason: worded && need !== null ? historyReason(need, keeping) : "",
    });
  }
  for (const { provider, why } of others) {
    if (why !== "method_not_served") continue;
    order.push({
      provider,
      slot: "skipped",
      reason: worded ? notCandidateReason(provider, method, why, context) : "",
    });
  }
  return order;
}

export interface AttemptSlot {
  readonly provider: Provider;
  /** Tried although not a candidate: failures add no strikes (docs/behaviour.md §3.5). */
  readonly emergency: boolean;
}

/**
 * The order in which one call walks the providers: the routing explanation, those that are
 * configured away from the method or keep no history the call needs left out.
 */
export function attemptOrder(
  ranked: readonly Provider[],
  method: string,
  context: SelectionContext,
  block: number | null = null,
  span: number | null = null,
  need: HistoryNeed | null = null,
): AttemptSlot[] {
  const order: AttemptSlot[] = [];
  for (const { provider, slot } of route(ranked, method, context, "", block, span, false, need)) {
    if (slot !== "skipped" && slot !== "history")
      order.push({ provider, emergency: slot === "emergency" });
  }
  return order;
}

/** The configured order without randomness: for the status route and the monitor. */
export function configuredOrder(network: Network): Provider[] {
  return [...network.providers].sort(
    (a, b) =>
      Number(a.backup) - Number(b.backup) ||
      b.priority - a.priority ||
      b.tiebreakWeight - a.tiebreakWeight ||
      a.index - b.index,
  );
}

/** The method a plain read stands for, when the status route and the monitor ask "who serves". */
export const PLAIN_READ = "eth_blockNumber";

/** The provider traffic goes to now: the first candidate for a plain read. */
export function activeProvider(network: Network, context: SelectionContext): Provider | null {
  const first = explainRouting(configuredOrder(network), PLAIN_READ, context)[0];
  return first && (first.slot === "candidate" || first.slot === "demoted") ? first.provider : null;
}
