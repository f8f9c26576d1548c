import { type GatewayModel, type Network, urlRedactions } from "../core/network-model.ts";
import type { NetworkState } from "../core/network-state.ts";
import type { StateStore, Telemetry, Upstream } from "../core/ports.ts";
import { makeScrubber } from "../core/redact.ts";
import { activeProvider, type SelectionContext, whyNotCandidate } from "../core/selection.ts";
import type { MonitorStore, StatsReader } from "./monitor-ports.ts";
import { runProbes } from "./probe-run.ts";
import { runQuorumCheck } from "./quorum-check.ts";

/**
 * One monitor tick over every network at once: the head-block quorum, then the recovery
 * probes against the fresh quorum, then the heartbeat. A network that fails (DynamoDB down)
 * is logged and does not hold up the others.
 */

export interface MonitorDeps {
  /** The model in force; may load it (config refresh) before each tick. */
  readonly model: () => GatewayModel | Promise<GatewayModel>;
  readonly store: Pick<StateStore, "readNetwork" | "writeHealth">;
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
}

export interface Monitor {
  tick(): Promise<void>;
}

export function createMonitor(deps: MonitorDeps): Monitor {
  const { clock, telemetry } = deps;

  async function tickNetwork(
    network: Network,
    checkIntervalSeconds: number,
    scrub: (text: string) => string,
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
    const quorum = await runQuorumCheck(
      { ...deps, scrub },
      { network, previous: state.quorum, memory, requestStats },
    );
    const checked: NetworkState = { ...state, quorum };
    const probed = await runProbes({ ...deps, scrub }, network, checked, checkIntervalSeconds);
    reportAvailability(
      telemetry,
      network,
      { ...checked, providers: new Map([...state.providers, ...probed]) },
      clock(),
      checkIntervalSeconds,
    );
    await deps.monitorStore.writeHeartbeat(network.name, clock());
  }

  return {
    async tick() {
      const model = await deps.model();
      const scrub = deps.scrub ?? makeScrubber(urlRedactions(model), []);
      await Promise.all(
        [...model.networks.values()].map((network) =>
          tickNetwork(network, model.checkIntervalSeconds, scrub).catch((error: unknown) => {
            telemetry.log("error", "monitor tick failed for a network", {
              network: network.name,
              error: scrub(error instanceof Error ? error.message : String(error)),
            });
            telemetry.count("monitor_errors", { network: network.name });
          }),
        ),
      );
      telemetry.count("monitor_ticks", {});
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
