import type { Config } from "../config/config-schema.ts";
import type { ConfigSourceInfo } from "../config/network-model.ts";
import { type GatewayModel, type Network, urlRedactions } from "../config/network-model.ts";
import { makeScrubber } from "../config/redact.ts";
import type { StateStore, Telemetry, Upstream } from "../ports.ts";
import type { NetworkState } from "../routing/network-state.ts";
import { activeProvider, type SelectionContext, whyNotCandidate } from "../routing/selection.ts";
import { configChange, type EventLog, makeEvent } from "../status/events.ts";
import { runHeadCheck } from "./head-check.ts";
import { runHistoryProbes } from "./history-probe.ts";
import type { MonitorStore, StatsReader } from "./monitor-ports.ts";
import { runProbes } from "./probe-run.ts";
import { runQuorumCheck } from "./quorum-check.ts";

/**
 * One monitor tick over every network at once: the head-block quorum, then the recovery
 * probes against the fresh quorum, then the heartbeat. A network that fails (DynamoDB down)
 * is logged and counted in `monitor_errors`, and does not hold up the others; `monitor_ticks`
 * counts a tick only when it wrote at least one heartbeat, so a monitor that fails everywhere
 * looks as silent as one that does not run.
 */

/** How long the health item of a provider removed from the config is kept. */
const REMOVED_PROVIDER_TTL_MS = 7 * 86_400_000;
/** How often each network's provider items are tidied (by this container). */
const TIDY_INTERVAL_MS = 3_600_000;

/** What the monitor writes to the proxy's shared state. */
export type MonitorStateStore = Pick<
  StateStore,
  | "readNetwork"
  | "writeHealth"
  | "publishServed"
  | "recordHistoryProbe"
  | "recordHistoryBound"
  | "forgetHistoryBound"
>;

export interface MonitorDeps {
  /** The model in force; may load it (config refresh) before each tick. */
  readonly model: () => GatewayModel | Promise<GatewayModel>;
  readonly store: MonitorStateStore;
  readonly monitorStore: MonitorStore;
  readonly statsStore: StatsReader;
  readonly upstream: Upstream;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /**
   * Removes secrets from upstream text before it is logged or stored. Default: the model's
   * resolved URLs are replaced by their redacted form.
   */
  readonly scrub?: (text: string) => string;
  /**
   * The event log: probes, quorum changes, head stalls and config changes are recorded there,
   * written before the tick ends; it is kept to its bound once an hour.
   */
  readonly events?: EventLog;
  /** The config in force and its source, for the config-change event. */
  readonly configInForce?: () => Promise<ConfigWithSource>;
}

/** The config in force and where it came from. */
export interface ConfigWithSource {
  readonly config: Config;
  readonly source: ConfigSourceInfo;
}

export interface Monitor {
  tick(): Promise<void>;
}

export function createMonitor(deps: MonitorDeps): Monitor {
  const { clock, telemetry } = deps;
  const tidiedAt = new Map<string, number>();
  const eventsTidiedAt = new Map<string, number>();
  /** The config version each network's log already holds, as far as this container knows. */
  const configRecorded = new Map<string, string>();

  /** Removed providers' items expire; a failure only delays it to a later tick. */
  async function tidyProviderItems(network: Network): Promise<void> {
    const now = clock();
    if (now - (tidiedAt.get(network.name) ?? Number.NEGATIVE_INFINITY) < TIDY_INTERVAL_MS) return;
    tidiedAt.set(network.name, now);
    const configured = [...network.providers, ...network.leftOut].map((provider) => provider.name);
    await deps.monitorStore
      .tidyProviderItems(network.name, configured, now + REMOVED_PROVIDER_TTL_MS)
      .catch((error: unknown) => {
        tidiedAt.delete(network.name);
        telemetry.log("warn", "provider items not tidied", {
          network: network.name,
          error: error instanceof Error ? error.message : String(error),
        });
      });
  }

  /** Keeps the network's event log to its bound; a failure only delays it to a later tick. */
  async function tidyEvents(network: Network, events: EventLog): Promise<void> {
    const now = clock();
    const last = eventsTidiedAt.get(network.name) ?? Number.NEGATIVE_INFINITY;
    if (now - last < TIDY_INTERVAL_MS) return;
    eventsTidiedAt.set(network.name, now);
    await events.tidy(network.name, network.settings.events.max_kept).catch((error: unknown) => {
      eventsTidiedAt.delete(network.name);
      telemetry.log("warn", "events not tidied", {
        network: network.name,
        error: error instanceof Error ? error.message : String(error),
      });
    });
  }

  /**
   * Records the config in force once per version and network, whichever monitor container
   * sees it first; a failed claim is tried again on the next tick.
   */
  async function recordConfig(
    network: Network,
    events: EventLog,
    loaded: ConfigWithSource,
    scrub: (text: string) => string,
  ): Promise<void> {
    const change = configChange(loaded.source, loaded.config);
    if (configRecorded.get(network.name) === change.version) return;
    const claimed = await events
      .claimConfigVersion(network.name, change.version)
      .catch((error: unknown) => {
        telemetry.log("warn", "config change not recorded", {
          network: network.name,
          error: error instanceof Error ? error.message : String(error),
        });
        return null;
      });
    if (claimed === null) return;
    configRecorded.set(network.name, change.version);
    if (!claimed) return;
    events.record(
      makeEvent(
        {
          network: network.name,
          at: clock(),
          provider: null,
          kind: "config_changed",
          reason: change.reason,
          detail: change.detail,
        },
        scrub,
      ),
    );
  }

  async function tickNetwork(
    network: Network,
    checkIntervalSeconds: number,
    scrub: (text: string) => string,
    loaded: ConfigWithSource | null,
  ): Promise<void> {
    const startedAt = clock();
    const [state, memory, requestStats] = await Promise.all([
      deps.store.readNetwork(network.name),
      deps.monitorStore.readCheckMemory(network.name),
      deps.statsStore.read(
        network.name,
        startedAt,
        network.settings.quorum.failing_often.window_seconds,
      ),
    ]);
    const { snapshot: quorum, finalizedMajority } = await runQuorumCheck(
      { ...deps, scrub },
      { network, previous: state.quorum, memory, requestStats, chainHead: state.head },
    );
    const head = await runHeadCheck(
      { ...deps, scrub },
      network,
      quorum,
      state.head,
      finalizedMajority,
    );
    const checked: NetworkState = { ...state, quorum, head: head ?? state.head };
    // History probes run beside the recovery probes, within the same probe timeout.
    const [probed] = await Promise.all([
      runProbes({ ...deps, scrub }, network, checked, checkIntervalSeconds),
      runHistoryProbes({ ...deps, scrub }, network, checked, checkIntervalSeconds),
    ]);
    reportAvailability(
      telemetry,
      network,
      { ...checked, providers: new Map([...state.providers, ...probed]) },
      clock(),
      checkIntervalSeconds,
    );
    await deps.monitorStore.writeHeartbeat(network.name, clock());
    await tidyProviderItems(network);
    if (deps.events !== undefined) {
      if (loaded !== null) await recordConfig(network, deps.events, loaded, scrub);
      await tidyEvents(network, deps.events);
    }
  }

  return {
    async tick() {
      const model = await deps.model();
      const scrub = deps.scrub ?? makeScrubber(urlRedactions(model), []);
      const loaded = (await deps.configInForce?.()) ?? null;
      const heartbeats = await Promise.all(
        [...model.networks.values()].map((network) =>
          tickNetwork(network, model.checkIntervalSeconds, scrub, loaded).then(
            () => true,
            (error: unknown) => {
              telemetry.log("error", "monitor tick failed for a network", {
                network: network.name,
                error: scrub(error instanceof Error ? error.message : String(error)),
              });
              telemetry.count("monitor_errors", { network: network.name });
              return false;
            },
          ),
        ),
      );
      if (heartbeats.some(Boolean)) telemetry.count("monitor_ticks", {});
      // Written before the tick ends: the Lambda may be frozen once the run returns.
      await deps.events?.settled();
    },
  };
}

/** The gauges behind the "all primaries down" and "backup in use" alarms. */
function reportAvailability(
  telemetry: Telemetry,
  network: Network,
  state: NetworkState,
  now: number,
  checkIntervalSeconds: number,
): void {
  const context: SelectionContext = {
    network,
    state,
    now,
    checkIntervalSeconds,
    demoted: new Set(),
  };
  const primaries = network.providers.filter(
    (provider) =>
      !provider.backup && whyNotCandidate(provider, "eth_blockNumber", context) === null,
  );
  const dims = { network: network.name };
  telemetry.measure("primaries_available", dims, primaries.length, "Count");
  const active = activeProvider(network, context);
  telemetry.measure("backup_in_use", dims, active?.backup ? 1 : 0, "Count");
}
