import type { Verdict } from "../../functions/core/classify/verdict.ts";
import { type ConfigInput, configSchema } from "../../functions/core/config/config-schema.ts";
import { buildModel, type Network } from "../../functions/core/config/network-model.ts";
import type { LogLevel, Telemetry } from "../../functions/core/ports.ts";
import { HealthRecorder } from "../../functions/core/request/attempts/health-recorder.ts";
import type { AttemptRecord, FailureVerdict } from "../../functions/core/request/vocabulary.ts";
import { StateCache } from "../../functions/core/routing/state-cache.ts";
import type { GatewayEvent } from "../../functions/core/status/events.ts";
import { MemoryStateStore } from "./memory-state-store.ts";

/**
 * The health recorder on in-memory parts and a test clock, for the tests of what one attempt
 * does to a provider (health-recording, capability-blacklists, force-rotate): the state store
 * and cache, the log lines, metrics, events and request outcomes it produced, and attempts made
 * as the pipeline makes them. The scrubber masks "s3cr3t".
 */

export const NOW = 1_800_000_000_000;
export const MIN = 60_000;
export const iso = (ms: number) => new Date(ms).toISOString();

export type Providers = ConfigInput["networks"][string]["providers"];

export const three: Providers = [
  { name: "p1", url: "http://p1.test/" },
  { name: "p2", url: "http://p2.test/" },
  { name: "p3", url: "http://p3.test/" },
];

export function recorder(
  networks: Record<string, { providers: Providers } & Partial<ConfigInput["networks"][string]>>,
) {
  let now = NOW;
  const clock = () => now;
  const store = new MemoryStateStore(clock);
  const logs: Array<{ level: LogLevel; message: string; fields: Record<string, unknown> }> = [];
  const counts: Array<{ name: string; dimensions: Record<string, string> }> = [];
  const telemetry: Telemetry = {
    log: (level, message, fields = {}) => logs.push({ level, message, fields }),
    count: (name, dimensions) => counts.push({ name, dimensions }),
    measure: () => undefined,
  };
  const cache = new StateCache({
    store,
    clock,
    telemetry,
    ttlMs: () => 60_000,
    headTtlMs: () => 250,
  });
  const events: GatewayEvent[] = [];
  const outcomes: Array<[string, string, boolean, number]> = [];
  const config = configSchema.parse({
    networks: Object.fromEntries(
      Object.entries(networks).map(([name, network]) => [name, { chain_id: 1, ...network }]),
    ),
  });
  const model = buildModel(config, (url) => url);
  const health = new HealthRecorder({
    store,
    cache,
    clock,
    telemetry,
    scrub: (text) => text.replaceAll("s3cr3t", "***"),
    recordOutcome: (...outcome) => outcomes.push(outcome),
    events: { record: (event) => events.push(event) },
  });
  const network = (name = "net"): Network => {
    const found = model.networks.get(name);
    if (found === undefined) throw new Error(`no network ${name}`);
    return found;
  };
  /** One attempt on `provider` as the pipeline makes it, with the state this container holds. */
  const attempt = async (
    provider: string,
    overrides: Partial<Omit<AttemptRecord, "network" | "context" | "slot">> & {
      emergency?: boolean;
      network?: string;
    } = {},
  ): Promise<AttemptRecord> => {
    const { emergency = false, network: name = "net", ...rest } = overrides;
    const net = network(name);
    const state = await cache.get(net.name);
    const found = net.providers.find((candidate) => candidate.name === provider);
    if (found === undefined) throw new Error(`no provider ${provider}`);
    return {
      network: net,
      context: {
        network: net,
        state,
        now: clock(),
        checkIntervalSeconds: 15,
        demoted: health.demoted(net, clock()),
      },
      slot: { provider: found, emergency },
      elapsedMs: 10,
      heavy: false,
      callersCodeOnly: false,
      writes: [],
      ...rest,
    };
  };
  return {
    health,
    store,
    cache,
    logs,
    counts,
    events,
    outcomes,
    network,
    attempt,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

export const timeout: Extract<FailureVerdict, { outcome: "retry" }> = {
  outcome: "retry",
  kind: "timeout",
  reason: "timeout",
  detail: "no answer from http://p1.test/s3cr3t in 5000 ms",
};
export const capability: FailureVerdict = { outcome: "capability", detail: "method not found" };
export const behind: FailureVerdict = { outcome: "behind", detail: "header not found" };
export const ok: Verdict = { outcome: "ok" };
export const unclassified: Verdict = { outcome: "unclassified", detail: "weird" };

export async function settled(attempt: AttemptRecord): Promise<void> {
  await Promise.all(attempt.writes);
}
