import { healthState } from "./health.ts";
import type { GatewayModel, Network } from "./network-model.ts";
import { healthOf, type NetworkState, type QuorumReason, quorumInForce } from "./network-state.ts";
import { activeProvider, type SelectionContext } from "./selection.ts";

/** The stable status JSON of SPEC §2: fields may be added, never renamed. */

/** Which config is in force: the S3 object (with its ETag), the bundled copy, or a file. */
export interface ConfigSourceInfo {
  readonly kind: "s3" | "bundled" | "file";
  /** The S3 object's ETag; only for kind "s3". */
  readonly etag?: string;
  /** ISO-8601 time this config came into force. */
  readonly loaded_at: string;
}

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
}

const iso = (ms: number) => new Date(ms).toISOString();

export function networkStatus(input: StatusInput) {
  const { network, state, now, model } = input;
  const inForce = quorumInForce(state, now, model.checkIntervalSeconds);
  const quorum = state.quorum;
  const context: SelectionContext = {
    network,
    state,
    now,
    checkIntervalSeconds: model.checkIntervalSeconds,
    demoted: new Set(),
  };
  const monitorTickAt = Math.max(state.monitorTickAt, quorum?.computedAt ?? 0);
  const providers = network.providers.map((provider) => {
    const health = healthOf(state, provider.name);
    const blacklistState = healthState(health, now);
    const member = !inForce || (quorum?.members.includes(provider.name) ?? false);
    const quorumReason: QuorumReason | null = member
      ? null
      : (quorum?.excluded[provider.name] ?? "no_answer");
    const head = quorum?.heads[provider.name] ?? null;
    const observed = input.observedHeads?.get(provider.name);
    const headNumber = Math.max(head?.number ?? 0, observed ?? 0) || null;
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
  };
}

export type NetworkStatus = ReturnType<typeof networkStatus>;
