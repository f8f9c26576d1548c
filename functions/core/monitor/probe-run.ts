import { retryAfterMs } from "../classify/retry-after.ts";
import type { Network, Provider } from "../config/network-model.ts";
import {
  applyProbeFail,
  applyProbePass,
  cooldownPolicy,
  healthState,
  type ProbeRecord,
  type ProviderHealth,
} from "../health/health.ts";
import { probePlan, probeVerdict, providersToProbe } from "../health/probe.ts";
import type { StateStore, Telemetry, Upstream } from "../ports.ts";
import { healthOf, type NetworkState } from "../routing/network-state.ts";
import { activeProvider } from "../routing/selection.ts";
import { type EventSink, makeEvent } from "../status/events.ts";
import type { MonitorStore } from "./monitor-ports.ts";
import { type CallOptions, latestBlock } from "./upstream-calls.ts";

/**
 * Probe-gated recovery (docs/behaviour.md §6): every provider whose cooldown ran out is probed once,
 * under a lease so overlapping monitors never probe it twice, and the verdict is written
 * only if its health did not move on meanwhile.
 */

export interface ProbeDeps {
  readonly upstream: Upstream;
  readonly store: Pick<StateStore, "writeHealth">;
  readonly monitorStore: Pick<
    MonitorStore,
    "readProbeLeases" | "acquireProbeLease" | "releaseProbeLease"
  >;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly scrub: (text: string) => string;
  /** Where each probe's verdict is recorded, once written. */
  readonly events?: EventSink;
}

/** The lease outlives the probe's calls by this much, for the DynamoDB writes after them. */
const PROBE_LEASE_MARGIN_MS = 5_000;

/**
 * Probes the providers awaiting a probe in `state` (which carries this tick's quorum) and
 * returns the health written for each. With no provider awaiting, nothing is read or called.
 */
export async function runProbes(
  deps: ProbeDeps,
  network: Network,
  state: NetworkState,
  checkIntervalSeconds: number,
): Promise<Map<string, ProviderHealth>> {
  const now = deps.clock();
  const awaiting = network.providers.map((provider) => ({
    provider: provider.name,
    awaitingProbe: healthState(healthOf(state, provider.name), now) === "awaiting_probe",
    probeInFlightUntil: 0,
  }));
  const written = new Map<string, ProviderHealth>();
  if (!awaiting.some((entry) => entry.awaitingProbe)) return written;

  const leases = await deps.monitorStore.readProbeLeases(network.name);
  const due = providersToProbe(
    awaiting.map((entry) => ({
      ...entry,
      probeInFlightUntil: leases.get(entry.provider) ?? 0,
    })),
    now,
  );
  const active = activeProvider(network, {
    network,
    state,
    now,
    checkIntervalSeconds,
    demoted: new Set(),
  });
  await Promise.all(
    due.map(async (name) => {
      const candidate = network.providers.find((provider) => provider.name === name);
      if (candidate === undefined) return;
      const { compareWith } = probePlan({
        candidate: name,
        providers: network.providers.map((provider) => provider.name),
        activeProvider: active?.name ?? null,
        activeAvailable: active !== null,
      });
      const reference =
        compareWith === null
          ? null
          : (network.providers.find((p) => p.name === compareWith) ?? null);
      try {
        const health = await probe(deps, network, candidate, healthOf(state, name), reference);
        if (health !== null) written.set(name, health);
      } catch (error) {
        deps.telemetry.log("error", "probe could not complete", {
          network: network.name,
          provider: name,
          error: deps.scrub(error instanceof Error ? error.message : String(error)),
        });
      }
    }),
  );
  return written;
}

/** One probe under its lease; the health it wrote, or null when it did not run or was dropped. */
async function probe(
  deps: ProbeDeps,
  network: Network,
  candidate: Provider,
  health: ProviderHealth,
  reference: Provider | null,
): Promise<ProviderHealth | null> {
  const settings = network.settings;
  const leasedAt = deps.clock();
  const leaseUntil = leasedAt + settings.probe.timeout_ms + PROBE_LEASE_MARGIN_MS;
  const leased = await deps.monitorStore.acquireProbeLease(
    network.name,
    candidate.name,
    health.version,
    leasedAt,
    leaseUntil,
  );
  if (!leased) return null;
  try {
    const options: CallOptions = {
      upstream: deps.upstream,
      timeoutMs: settings.probe.timeout_ms,
      maxResponseBytes: settings.max_response_bytes,
      scrub: deps.scrub,
    };
    // Step 1 (alive) and step 2 (up to date) run concurrently.
    const [candidateCall, referenceCall] = await Promise.all([
      latestBlock(options, candidate),
      reference === null ? null : latestBlock(options, reference),
    ]);
    const verdict = probeVerdict({
      candidate: candidateCall,
      reference: referenceCall,
      ...(reference === null ? {} : { referenceName: reference.name }),
      maxLagSeconds: settings.probe.max_lag_seconds,
    });
    const now = deps.clock();
    const record: ProbeRecord = {
      at: now,
      result: verdict.result,
      detail: deps.scrub(verdict.detail),
    };
    const next =
      verdict.result === "pass"
        ? applyProbePass(health, record)
        : applyProbeFail(
            health,
            record,
            now,
            cooldownPolicy(settings),
            "error" in candidateCall ? candidateCall.reason : undefined,
            "error" in candidateCall
              ? (retryAfterMs(candidateCall.retryAfter, now) ?? undefined)
              : undefined,
          );
    const outcome = await deps.store.writeHealth(
      network.name,
      candidate.name,
      health.version,
      next,
    );
    const fields = {
      network: network.name,
      provider: candidate.name,
      result: verdict.result,
      detail: record.detail,
      compared_with: reference?.name ?? null,
    };
    deps.telemetry.count("probe_results", {
      network: network.name,
      provider: candidate.name,
      result: verdict.result,
    });
    if (!outcome.written) {
      deps.telemetry.log(
        "info",
        "probe result dropped: the provider's state changed while it ran",
        fields,
      );
      return null;
    }
    const until = new Date(next.blacklistedUntil).toISOString();
    if (verdict.result === "pass") {
      deps.telemetry.log("info", "probe passed: provider back in service", fields);
    } else {
      deps.telemetry.log("warn", "probe failed: provider blacklisted again", {
        ...fields,
        strikes: next.strikes,
        until,
      });
    }
    deps.events?.record(
      makeEvent(
        {
          network: network.name,
          at: now,
          provider: candidate.name,
          kind: verdict.result === "pass" ? "probe_passed" : "probe_failed",
          // The blacklist the provider was under when it was probed.
          reason: health.reason ?? "unknown",
          detail:
            verdict.result === "pass"
              ? record.detail
              : `${record.detail}; strike ${next.strikes}, until ${until}`,
        },
        deps.scrub,
      ),
    );
    return next;
  } finally {
    await deps.monitorStore
      .releaseProbeLease(network.name, candidate.name, leaseUntil)
      .catch(() => undefined); // the lease then simply expires
  }
}
