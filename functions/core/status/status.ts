import { publicationDelayMs, servedHeadAt } from "../chain/chain-head.ts";
import type { ConfigSourceInfo, GatewayModel, Network } from "../config/network-model.ts";
import { healthState } from "../health/health.ts";
import { type HistoryStatus, historyStatus } from "../history/history-status.ts";
import type { ClassCounts } from "../request/cache/answer-cache.ts";
import type { ConsensusCounts } from "../request/consensus/consensus-book.ts";
import { type LogCheckCounts, NO_LOG_CHECKS } from "../request/logs/checks/logs-check-state.ts";
import type { AnswerClass } from "../request/vocabulary.ts";
import { batchLimitOf, logsRangeOf } from "../routing/learned-limits.ts";
import {
  healthOf,
  type NetworkState,
  type QuorumReason,
  quorumInForce,
} from "../routing/network-state.ts";
import {
  activeProvider,
  configuredOrder,
  explainRouting,
  PLAIN_READ,
  type RoutingSlot,
  type SelectionContext,
} from "../routing/selection.ts";
import { type ConsensusStatus, consensusStatus } from "./consensus-status.ts";
import { EVENTS_SHOWN, type EventStatus, eventStatus, type GatewayEvent } from "./events.ts";
import { GUARDS, type GuardCountsView } from "./guards.ts";

/** The stable status JSON (docs/behaviour.md §2): fields may be added, never renamed. */

export interface ProviderStats {
  readonly window_seconds: number;
  readonly requests: number;
  readonly errors: number;
  readonly latency_ms: { readonly p50: number | null; readonly p95: number | null };
}

export interface StatusInput {
  readonly model: GatewayModel;
  readonly network: Network;
  readonly state: NetworkState;
  readonly now: number;
  readonly configSource: ConfigSourceInfo;
  readonly stats: (provider: string) => ProviderStats;
  /** Heads this container saw in answers, newer than the monitor's when higher. */
  readonly observedHeads?: ReadonlyMap<string, number>;
  /** Providers this container has rotated away from (force-rotate). */
  readonly demoted?: ReadonlySet<string>;
  /** The highest block each provider can have reached by now (block-aware routing). */
  readonly reachable?: (provider: string) => number | null;
  /** The network's recent events, newest first (at most `EVENTS_SHOWN` are shown). */
  readonly events?: readonly GatewayEvent[];
  /** This container's answer cache hits and misses, by class. */
  readonly cacheClasses?: Readonly<Record<AnswerClass, ClassCounts>>;
  /** What this container's guards refused on the network, by guard. */
  readonly guards?: GuardCountsView;
  /** What this container's log-answer checks found, by provider (docs/behaviour.md §12.12). */
  readonly logChecks?: ReadonlyMap<string, LogCheckCounts>;
  /** This container's read consensus counts, by provider (docs/behaviour.md §17.5). */
  readonly consensus?: ReadonlyMap<string, ConsensusCounts>;
}

export type ProviderState = "healthy" | "blacklisted" | "awaiting_probe" | "out_of_quorum";

export interface ProviderStatus {
  readonly name: string;
  /** Redacted: origin kept, secrets masked. */
  readonly url: string;
  readonly priority: number;
  readonly backup: boolean;
  readonly state: ProviderState;
  readonly in_quorum: boolean;
  readonly quorum_reason: QuorumReason | null;
  /** What the failed check said, judged as live traffic would (e.g. "rate_limit: HTTP 429"). */
  readonly quorum_detail: string | null;
  readonly head: {
    readonly number: number | null;
    readonly timestamp: number | null;
    readonly lag_seconds: number | null;
  };
  readonly strikes: number;
  readonly blacklist: { readonly reason: string; readonly until: string } | null;
  readonly capability_blacklists: ReadonlyArray<{
    readonly method: string;
    readonly until: string;
  }>;
  readonly last_probe: {
    readonly at: string;
    readonly result: "pass" | "fail";
    readonly detail: string;
  } | null;
  readonly stats: ProviderStats;
  /** Where a plain read would put this provider now, and why (the routing explanation). */
  readonly routing: { readonly slot: RoutingSlot; readonly reason: string };
  /** What the provider takes, configured or learned from its errors (null: no known limit). */
  readonly limits: { readonly max_batch: number | null; readonly max_logs_range: number | null };
  /** The log-answer checks of this provider's answers in this container (docs/behaviour.md §12.12). */
  readonly log_checks: LogCheckCounts;
  /** What it keeps of each resource, and its last history probe (docs/behaviour.md §16.6). */
  readonly history: HistoryStatus;
  /** Its part in read consensus; null on a network without it (docs/behaviour.md §17.5). */
  readonly consensus: ConsensusStatus | null;
}

export interface NetworkStatus {
  readonly network: string;
  readonly chain_id: number;
  readonly config_source: ConfigSourceInfo;
  readonly monitor: {
    readonly last_tick_at: string | null;
    readonly stale: boolean;
    readonly note?: string;
  };
  readonly quorum: {
    readonly head: number | null;
    readonly head_timestamp: number | null;
    readonly members: readonly string[];
  };
  readonly active_provider: string | null;
  /**
   * The chain position every container shares (docs/behaviour.md §10): the quorum's latest,
   * safe and finalized blocks, and the served head `eth_blockNumber` answers with now.
   */
  readonly served_head: {
    readonly latest: number | null;
    readonly safe: number | null;
    readonly finalized: number | null;
    readonly served: number | null;
    readonly reorg_seen_at: string | null;
    /** When the monitor saw the block it recorded as finalized replaced; null if never. */
    readonly finality_broken_at: string | null;
    /**
     * When the chain position last reset to the quorum's (a restarted chain, a finality
     * break): answers kept before it are not served; null if never.
     */
    readonly chain_reset_at: string | null;
  };
  readonly providers: readonly ProviderStatus[];
  /** Configured but not serving: a secret of the URL did not resolve (retried in the background). */
  readonly providers_left_out: ReadonlyArray<{
    readonly name: string;
    readonly url: string;
    readonly priority: number;
    readonly backup: boolean;
    readonly reason: "secret_unresolved";
    readonly detail: string;
  }>;
  /** What happened, newest first, at most 100: blacklists, probes, quorum changes, config. */
  readonly events: readonly EventStatus[];
  /** The answer cache in this container: whether it is on, and hits and misses by class. */
  readonly cache: {
    readonly enabled: boolean;
    readonly classes: Readonly<Record<AnswerClass, ClassCounts>>;
  };
  /** What this container's guards refused (docs/behaviour.md §8), by the key that bounds them. */
  readonly guards: GuardCountsView;
}

const iso = (ms: number) => new Date(ms).toISOString();
const finiteOrNull = (value: number) => (Number.isFinite(value) ? value : null);

export function networkStatus(input: StatusInput): NetworkStatus {
  const { network, state, now, model } = input;
  const inForce = quorumInForce(state, now, model.checkIntervalSeconds);
  const quorum = state.quorum;
  const context: SelectionContext = {
    network,
    state,
    now,
    checkIntervalSeconds: model.checkIntervalSeconds,
    demoted: input.demoted ?? new Set(),
    ...(input.reachable ? { reachable: input.reachable } : {}),
  };
  // Where a read of the served head would go: a provider that cannot have reached it shows
  // as behind.
  const served = servedHeadAt(state.head, now, publicationDelayMs(network.settings.head_cache_ms));
  const routing = new Map(
    explainRouting(configuredOrder(network), PLAIN_READ, context, "", served).map((entry) => [
      entry.provider.name,
      { slot: entry.slot, reason: entry.reason },
    ]),
  );
  const monitorTickAt = Math.max(state.monitorTickAt, quorum?.computedAt ?? 0);
  const providers = network.providers.map((provider): ProviderStatus => {
    const health = healthOf(state, provider.name);
    const blacklistState = healthState(health, now);
    const member = !inForce || (quorum?.members.includes(provider.name) ?? false);
    const quorumReason: QuorumReason | null = member
      ? null
      : (quorum?.excluded[provider.name] ?? "no_answer");
    const head = quorum?.heads[provider.name] ?? null;
    const observed = input.observedHeads?.get(provider.name);
    // Block 0 is a head (a new devnet); only no head at all is null.
    const headNumber =
      head === null && observed === undefined ? null : Math.max(head?.number ?? 0, observed ?? 0);
    const lag =
      head && quorum?.headTimestamp != null
        ? Math.max(0, quorum.headTimestamp - head.timestamp)
        : null;
    const capabilities = [...(state.capabilities.get(provider.name) ?? new Map<string, number>())]
      .filter(([, until]) => until > now)
      .map(([method, until]) => ({ method, until: iso(until) }));
    return {
      name: provider.name,
      url: provider.redactedUrl,
      priority: provider.priority,
      backup: provider.backup,
      state: blacklistState !== "healthy" ? blacklistState : member ? "healthy" : "out_of_quorum",
      in_quorum: member,
      quorum_reason: quorumReason,
      quorum_detail: member ? null : (quorum?.failures?.[provider.name] ?? null),
      head: { number: headNumber, timestamp: head?.timestamp ?? null, lag_seconds: lag },
      strikes: health.strikes,
      blacklist:
        health.reason !== null && blacklistState !== "healthy"
          ? { reason: health.reason, until: iso(health.blacklistedUntil) }
          : null,
      capability_blacklists: capabilities,
      last_probe: health.lastProbe
        ? {
            at: iso(health.lastProbe.at),
            result: health.lastProbe.result,
            detail: health.lastProbe.detail,
          }
        : null,
      stats: input.stats(provider.name),
      routing: routing.get(provider.name) ?? { slot: "skipped", reason: "not routed" },
      limits: {
        max_batch: finiteOrNull(batchLimitOf(provider, state.batchLimits, now)),
        max_logs_range: finiteOrNull(logsRangeOf(provider, state.logsRanges, now)),
      },
      log_checks: input.logChecks?.get(provider.name) ?? NO_LOG_CHECKS,
      history: historyStatus(provider, context),
      consensus: consensusStatus(network, health, input.consensus?.get(provider.name), now),
    };
  });
  return {
    network: network.name,
    chain_id: network.chainId,
    config_source: input.configSource,
    monitor: {
      last_tick_at: monitorTickAt > 0 ? iso(monitorTickAt) : null,
      stale: !inForce,
      ...(inForce
        ? {}
        : {
            note: "monitor snapshot missing or stale: every provider counts as in quorum (fail open)",
          }),
    },
    quorum: {
      head: quorum?.head ?? null,
      head_timestamp: quorum?.headTimestamp ?? null,
      members: quorum?.members ?? [],
    },
    active_provider: activeProvider(network, context)?.name ?? null,
    served_head: {
      latest: state.head?.latest.number ?? null,
      safe: state.head?.safe?.number ?? null,
      finalized: state.head?.finalized?.number ?? null,
      served,
      reorg_seen_at: state.head && state.head.reorgSeenAt > 0 ? iso(state.head.reorgSeenAt) : null,
      finality_broken_at: state.head?.finalityBrokenAt ? iso(state.head.finalityBrokenAt) : null,
      chain_reset_at: state.head?.resetAt ? iso(state.head.resetAt) : null,
    },
    providers,
    // Configured but not serving: a secret of the URL did not resolve (retried in the background).
    providers_left_out: network.leftOut.map((provider) => ({
      name: provider.name,
      url: provider.redactedUrl,
      priority: provider.priority,
      backup: provider.backup,
      reason: provider.reason,
      detail: provider.detail,
    })),
    events: (input.events ?? []).slice(0, EVENTS_SHOWN).map(eventStatus),
    cache: {
      enabled: network.settings.cache,
      classes: input.cacheClasses ?? NO_CACHE_COUNTS,
    },
    guards: input.guards ?? NO_REFUSALS,
  };
}

const NO_REFUSALS = Object.fromEntries(GUARDS.map((guard) => [guard, 0])) as GuardCountsView;

const NO_COUNTS: ClassCounts = { hits: 0, misses: 0, ratio: null };
const NO_CACHE_COUNTS: Readonly<Record<AnswerClass, ClassCounts>> = {
  immutable: NO_COUNTS,
  unfinalized: NO_COUNTS,
  realtime: NO_COUNTS,
  never: NO_COUNTS,
};
