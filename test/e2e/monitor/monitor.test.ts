import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createConfigSource } from "../../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../../functions/adapters/config/secrets.ts";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { DynamoStateStore } from "../../../functions/adapters/store/state-store.ts";
import {
  createStatsFlusher,
  DynamoStatsStore,
} from "../../../functions/adapters/store/stats-store.ts";
import { createUpstream } from "../../../functions/adapters/upstream/upstream.ts";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import {
  buildModel,
  type GatewayModel,
  parseConfig,
  urlRedactions,
} from "../../../functions/core/config/network-model.ts";
import { resolveUrlTemplate } from "../../../functions/core/config/placeholders.ts";
import { makeScrubber } from "../../../functions/core/config/redact.ts";
import type { ProviderHealth } from "../../../functions/core/health/health.ts";
import { runScheduled } from "../../../functions/core/monitor/loop.ts";
import { createMonitor, type Monitor } from "../../../functions/core/monitor/monitor.ts";
import type { LogLevel, Telemetry } from "../../../functions/core/ports.ts";
import type { QuorumSnapshot } from "../../../functions/core/routing/network-state.ts";
import { createMonitorRuntime } from "../../../functions/monitor/runtime.ts";
import { createProxyRuntime } from "../../../functions/proxy/runtime.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import {
  type ApiGatewayEmulator,
  type ApiGatewayHandler,
  startApiGateway,
} from "../../../local/apigw-emulator.ts";
import {
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
} from "../../../local/dynamodb.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";

/**
 * The monitor end to end on real parts: anvil nodes (each provider behind its own fault
 * shim), dynalite, the real proxy runtime behind the API Gateway emulator, and the monitor,
 * sharing one injected clock. Ticks are driven by calling `tick()`; cooldowns expire by
 * advancing the clock; chains move on by `evm_increaseTime` + `evm_mine` on every node, so
 * a node whose head a shim freezes falls behind by block timestamp without any waiting.
 */

// Quiet Powertools logs from the proxy runtimes; the monitor's are recorded below.
process.env.POWERTOOLS_LOG_LEVEL = "ERROR";

const CHAIN_ID = 31337;
const TABLE = "rpc-gateway-monitor-e2e";
const SECRET = "k3y-0f-th3-pr0v1d3r-5ecret";
const SECRETS = { RPC_KEY: SECRET };
const INTERVAL_MS = 30_000;
const CONNECTION_COOLDOWN_MS = 60_000;
const LAG_SECONDS = 30;

/** Short timeouts and cooldowns: the scenarios run in seconds. */
const SETTINGS = {
  check_interval_seconds: INTERVAL_MS / 1000,
  request_timeout_ms: 2_000,
  cooldown_seconds: { connection: CONNECTION_COOLDOWN_MS / 1000 },
  probe: { timeout_ms: 2_000, max_lag_seconds: LAG_SECONDS },
  quorum: {
    check_timeout_ms: 2_000,
    max_lag_seconds: LAG_SECONDS,
    failed_recently_checks: 2,
    // The anvil nodes are separate chains that mine the same blocks only while nothing sets them
    // apart: the fork check would exclude some as wrong_fork. Forks are tested in fork-check.test.ts.
    fork_check: false,
  },
} satisfies Partial<ConfigInput>;

let nodes: AnvilNode[] = [];
let dynamo: LocalDynamoDb;
let client: DynamoDBClient;
let api: ApiGatewayEmulator;
let upstream: ReturnType<typeof createUpstream>;
let configDir: string;
/** The proxy that serves the emulator's requests: the current scenario's. */
let serve: ApiGatewayHandler | null = null;
const shims: FaultShim[] = [];

beforeAll(async () => {
  [nodes, dynamo] = await Promise.all([
    Promise.all([0, 1, 2].map(() => startAnvil({ chainId: CHAIN_ID }))),
    startDynalite({ tableName: TABLE }),
  ]);
  client = createLocalDynamoDbClient(dynamo.endpoint);
  upstream = createUpstream();
  configDir = await mkdtemp(join(tmpdir(), "monitor-e2e-"));
  api = await startApiGateway({
    handler: (event, context) => {
      if (serve === null) throw new Error("no scenario is running");
      return serve(event, context);
    },
  });
}, 60_000);

afterAll(async () => {
  await api?.close();
  await upstream?.close();
  client?.destroy();
  await dynamo?.close();
  await Promise.all(nodes.map((node) => node.stop()));
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

afterEach(async () => {
  serve = null;
  await Promise.all(shims.splice(0).map((shim) => shim.close()));
});

/** Every node's chain moves on by `seconds` of block time, in lockstep (one block each). */
async function advanceChains(seconds: number): Promise<void> {
  await Promise.all(
    nodes.map(async (node) => {
      await node.rpc("evm_increaseTime", [seconds]);
      await node.rpc("evm_mine", []);
    }),
  );
}

/** A node's latest block as numbers, for comparison with the status route. */
async function latestOf(index: number): Promise<{ number: number; timestamp: number }> {
  const block = (await node(index).rpc("eth_getBlockByNumber", ["latest", false])) as {
    number: string;
    timestamp: string;
  };
  return { number: Number(block.number), timestamp: Number(block.timestamp) };
}

function node(index: number): AnvilNode {
  const found = nodes[index];
  if (!found) throw new Error(`no anvil node ${index}`);
  return found;
}

class FakeClock {
  now: number;
  constructor(start: number) {
    this.now = start;
  }
  readonly read = () => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

interface Recorded {
  readonly logs: Array<{ level: LogLevel; message: string; fields: Record<string, unknown> }>;
  readonly metrics: Array<{ name: string; dimensions: Record<string, string>; value: number }>;
}

function recordingTelemetry(): Telemetry & Recorded {
  const logs: Recorded["logs"] = [];
  const metrics: Recorded["metrics"] = [];
  return {
    logs,
    metrics,
    log: (level, message, fields = {}) => logs.push({ level, message, fields }),
    count: (name, dimensions, value = 1) => metrics.push({ name, dimensions, value }),
    measure: (name, dimensions, value) => metrics.push({ name, dimensions, value }),
  };
}

interface ProviderSpec {
  readonly name: string;
  readonly node: number;
  readonly priority?: number;
  readonly backup?: boolean;
}

interface ProviderStatus {
  name: string;
  url: string;
  state: string;
  in_quorum: boolean;
  quorum_reason: string | null;
  head: { number: number | null; timestamp: number | null; lag_seconds: number | null };
  strikes: number;
  last_probe: { result: string; detail: string } | null;
}

interface StatusJson {
  monitor: { last_tick_at: string | null; stale: boolean };
  quorum: { head: number | null; head_timestamp: number | null; members: string[] };
  active_provider: string | null;
  providers: ProviderStatus[];
}

let scenarios = 0;

/** A network of its own (state shares the table, not the keys), with a shim per provider. */
async function scenario(label: string, providers: readonly ProviderSpec[]) {
  const network = `${label}-${++scenarios}`;
  // An hour ahead: `evm_increaseTime` moves block time past the wall clock, and a block
  // timestamp later than the monitor's clock is implausible (excluded as ahead).
  const clock = new FakeClock(Date.now() + 3_600_000);
  const providerShims: Record<string, FaultShim> = {};
  for (const provider of providers) {
    const shim = await startFaultShim(node(provider.node).url);
    shims.push(shim);
    providerShims[provider.name] = shim;
  }
  const config: ConfigInput = {
    ...SETTINGS,
    networks: {
      [network]: {
        chain_id: CHAIN_ID,
        providers: providers.map((provider) => ({
          name: provider.name,
          // A key in the path, as paid providers have: it must never reach a log or metric.
          url: `${providerShims[provider.name]?.url}/v3/\${RPC_KEY}`,
          priority: provider.priority ?? 1,
          backup: provider.backup ?? false,
        })),
      },
    },
  };
  const configPath = join(configDir, `${network}.json`);
  await writeFile(configPath, JSON.stringify(config));
  const parsed = parseConfig(config);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const values = new Map(Object.entries(SECRETS));
  const model: GatewayModel = buildModel(parsed.config, (template) =>
    resolveUrlTemplate(template, values),
  );

  const tables = { client, tableName: TABLE };
  const store = new DynamoStateStore({ ...tables, clock: clock.read });
  const monitorStore = new DynamoMonitorStore(tables);
  const statsStore = new DynamoStatsStore(tables);
  const telemetry = recordingTelemetry();
  const scrub = makeScrubber(urlRedactions(model), [SECRET]);
  const newMonitor = (recorder: Telemetry = telemetry, stateStore: typeof store = store): Monitor =>
    createMonitor({
      model: () => model,
      store: stateStore,
      monitorStore,
      statsStore,
      upstream,
      clock: clock.read,
      telemetry: recorder,
      scrub,
    });
  const monitor = newMonitor();

  // A fresh proxy container per request: its first state read is always a fresh Query, so
  // what a request sees never depends on a background cache refresh.
  serve = (event, context) =>
    createProxyRuntime({
      configSource: createConfigSource({ kind: "file", path: configPath }),
      secrets: envSecretResolver(SECRETS),
      store,
      upstream,
      clock: clock.read,
      writeMetrics: () => {},
    }).handle(event, context.getRemainingTimeInMillis());

  return {
    network,
    clock,
    shims: providerShims,
    telemetry,
    configPath,
    store,
    monitorStore,
    statsStore,
    newMonitor,
    /** One monitor tick; returns the snapshot it published. */
    async tick(): Promise<QuorumSnapshot> {
      await monitor.tick();
      const state = await store.readNetwork(network);
      if (state.quorum === null) throw new Error("the tick published no quorum");
      return state.quorum;
    },
    /** Which provider answered a proxied `eth_blockNumber` (`x-gateway-provider`). */
    async proxied(): Promise<string> {
      // A read always answered by a provider: never from the served head or a cache.
      const response = await fetch(`${api.url}/${network}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["0x70997970c51812dc3a010c7d01b50e677d4c79c8","pending"]}',
      });
      const body = await response.text();
      expect(response.status, body).toBe(200);
      expect(JSON.parse(body)).toHaveProperty("result");
      return response.headers.get("x-gateway-provider") ?? "";
    },
    async status(): Promise<StatusJson> {
      const response = await fetch(`${api.url}/${network}/status`);
      expect(response.status).toBe(200);
      return (await response.json()) as StatusJson;
    },
    providerStatus(status: StatusJson, name: string): ProviderStatus {
      const found = status.providers.find((provider) => provider.name === name);
      if (!found) throw new Error(`no provider ${name} in the status`);
      return found;
    },
    async health(provider: string): Promise<ProviderHealth> {
      return store.readHealth(network, provider);
    },
    metricValues(name: string, dimensions: Record<string, string> = {}): number[] {
      return telemetry.metrics
        .filter(
          (metric) =>
            metric.name === name &&
            Object.entries(dimensions).every(([key, value]) => metric.dimensions[key] === value),
        )
        .map((metric) => metric.value);
    },
  };
}

type Scenario = Awaited<ReturnType<typeof scenario>>;

/** Nothing the monitor logged or measured carries the provider key or an unredacted URL. */
function expectNoSecrets(s: Scenario): void {
  const text = JSON.stringify(s.telemetry.logs) + JSON.stringify(s.telemetry.metrics);
  expect(text).not.toContain(SECRET);
  for (const shim of Object.values(s.shims)) expect(text).not.toContain(`${shim.url}/v3/`);
}

describe("head-block quorum", () => {
  it("a node whose mining stops leaves quorum within two ticks and gets no traffic", async () => {
    const s = await scenario("stuck", [
      { name: "a", node: 0, priority: 3 },
      { name: "b", node: 1, priority: 2 },
      { name: "c", node: 2, priority: 1 },
    ]);
    await advanceChains(1);
    expect((await s.tick()).members).toEqual(["a", "b", "c"]);
    expect(await s.proxied()).toBe("a");

    await s.shims.a?.setFault({ kind: "stuck_head" });
    const frozen = await latestOf(0);
    await advanceChains(2 * LAG_SECONDS);
    let snapshot: QuorumSnapshot | undefined;
    let ticks = 0;
    while (ticks < 2 && !snapshot?.excluded.a) {
      s.clock.advance(INTERVAL_MS);
      snapshot = await s.tick();
      ticks++;
    }
    expect(snapshot?.excluded).toEqual({ a: "behind" });
    expect(snapshot?.members).toEqual(["b", "c"]);
    expect(await s.proxied()).toBe("b");
    expect(await s.proxied()).toBe("b");

    const status = await s.status();
    expect(s.providerStatus(status, "a")).toMatchObject({
      state: "out_of_quorum",
      in_quorum: false,
      quorum_reason: "behind",
    });
    expect(status.active_provider).toBe("b");
    expect(status.monitor.stale).toBe(false);
    // The values, from the nodes' own blocks: each provider shows its node's latest block (a
    // its frozen one), the quorum head is b's and c's, and the lag is the quorum head's
    // timestamp minus the provider's.
    const [b, c] = [await latestOf(1), await latestOf(2)];
    expect(c.number).toBe(b.number);
    const quorumTimestamp = status.quorum.head_timestamp ?? Number.NaN;
    expect(status.quorum.head).toBe(b.number);
    expect([b.timestamp, c.timestamp]).toContain(quorumTimestamp);
    for (const [name, block] of [
      ["a", frozen],
      ["b", b],
      ["c", c],
    ] as const) {
      expect(s.providerStatus(status, name).head, name).toEqual({
        ...block,
        lag_seconds: Math.max(0, quorumTimestamp - block.timestamp),
      });
    }
    expect(quorumTimestamp - frozen.timestamp).toBeGreaterThanOrEqual(2 * LAG_SECONDS);
    // The lag is measured by block timestamp: at least the time the others moved on.
    expect(
      Math.max(...s.metricValues("head_lag_seconds", { provider: "a" })),
    ).toBeGreaterThanOrEqual(2 * LAG_SECONDS);
    expect(s.metricValues("quorum_size", { network: s.network })).toEqual([
      3,
      ...Array(ticks).fill(2),
    ]);
    expect(s.telemetry.logs).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "quorum membership changed",
        fields: expect.objectContaining({ left: { a: "behind" }, joined: [] }),
      }),
    );
    expectNoSecrets(s);
  });

  it("a node on another chain is excluded (wrong_chain) until the next chain-id check passes", async () => {
    const s = await scenario("chain", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await s.shims.a?.setFault({ kind: "chain_id", id: 999 });
    const first = await s.tick();
    expect(first.excluded).toEqual({ a: "wrong_chain" });
    expect(first.members).toEqual(["b"]);
    expect(await s.proxied()).toBe("b");

    // Between chain-id checks the verdict stands, whatever the node says meanwhile.
    await s.shims.a?.setFault(null);
    s.clock.advance(INTERVAL_MS);
    expect((await s.tick()).excluded).toEqual({ a: "wrong_chain" });
    // chain_id_check_seconds (600) later the check is made again and passes.
    s.clock.advance(600_000);
    expect((await s.tick()).members).toEqual(["a", "b"]);
    expect(await s.proxied()).toBe("a");
  });

  it("a provider dead from the start never enters quorum and never gets traffic", async () => {
    const s = await scenario("dead", [
      { name: "dead", node: 0, priority: 3 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await s.shims.dead?.setFault({ kind: "down" });
    for (let tick = 0; tick < 4; tick++) {
      const snapshot = await s.tick();
      expect(snapshot.members).toEqual(["b"]);
      expect(snapshot.excluded.dead).toMatch(/^(no_answer|failed_recently)$/);
      s.clock.advance(INTERVAL_MS);
    }
    expect(await s.proxied()).toBe("b");
    const status = await s.status();
    expect(s.providerStatus(status, "dead")).toMatchObject({
      in_quorum: false,
      state: "out_of_quorum",
    });
  });

  it("a provider failing most of its proxied requests leaves quorum as failing_often", async () => {
    const s = await scenario("often", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    // What proxy containers flush: 30 requests to a, 20 of them failed (min_requests 20, 50 %).
    const container = createStatsFlusher({
      statsStore: s.statsStore,
      clock: s.clock.read,
      onError: (_network, error) => {
        throw error;
      },
    });
    for (let i = 0; i < 30; i++) container.record(s.network, "a", i >= 20, 50);
    for (let i = 0; i < 30; i++) container.record(s.network, "b", true, 50);
    await container.flush();
    const snapshot = await s.tick();
    expect(snapshot.excluded).toEqual({ a: "failing_often" });
    expect(await s.proxied()).toBe("b");
  });

  it("a monitor that stops makes the proxy fail open, and the status says the monitor is stale", async () => {
    const s = await scenario("stale", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
      { name: "c", node: 2, priority: 1 },
    ]);
    await s.shims.a?.setFault({ kind: "stuck_head" });
    await advanceChains(2 * LAG_SECONDS);
    expect((await s.tick()).excluded).toEqual({ a: "behind" });
    expect(await s.proxied()).not.toBe("a");
    expect((await s.status()).monitor.stale).toBe(false);

    // No tick for more than three check intervals.
    s.clock.advance(3 * INTERVAL_MS + 1);
    const status = await s.status();
    expect(status.monitor.stale).toBe(true);
    expect(s.providerStatus(status, "a").in_quorum).toBe(true);
    expect(await s.proxied()).toBe("a");
  });
});

describe("a served-head publication that fails", () => {
  it("regression: a publication given up after 250 ms (DynamoDB slow) failed the whole tick: no probes, no heartbeat (the monitor looked stalled); now it is logged and the tick goes on", async () => {
    const s = await scenario("slow-publish", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await s.tick();
    // The store as the adapter is when DynamoDB answers the publication late: "Request aborted".
    const slow = new Proxy(s.store, {
      get(target, property) {
        if (property === "publishServed") {
          return () => Promise.reject(new Error("Request aborted"));
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    s.clock.advance(INTERVAL_MS);
    // A new head: the tick publishes it as the served head.
    await advanceChains(INTERVAL_MS / 1000);
    await s.newMonitor(s.telemetry, slow).tick();
    expect(s.telemetry.logs.map((line) => line.message)).not.toContain(
      "monitor tick failed for a network",
    );
    expect((await s.status()).monitor.last_tick_at).toBe(new Date(s.clock.now).toISOString());
  });
});

describe("probe-gated recovery", () => {
  it("an expired blacklist gets no traffic until the probe passes; a node still stuck fails it and its cooldown doubles", async () => {
    const s = await scenario("probe", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await advanceChains(1);
    expect((await s.tick()).members).toEqual(["a", "b"]);
    expect(await s.proxied()).toBe("a");

    // a fails a request (503): blacklisted by the proxy for the connection cooldown.
    await s.shims.a?.setFault({ kind: "http", status: 503 });
    expect(await s.proxied()).toBe("b");
    const blacklisted = await s.health("a");
    expect(blacklisted).toMatchObject({ strikes: 1, reason: "connection", probeGated: true });
    expect(blacklisted.blacklistedUntil).toBe(s.clock.now + CONNECTION_COOLDOWN_MS);

    // It answers again but its head is stuck while the chain moves on.
    await s.shims.a?.setFault({ kind: "stuck_head" });
    await advanceChains(2 * LAG_SECONDS);
    s.clock.advance(CONNECTION_COOLDOWN_MS);
    const awaiting = await s.status();
    expect(s.providerStatus(awaiting, "a").state).toBe("awaiting_probe");
    const requestsBefore = s.shims.a?.requests ?? 0;
    expect(await s.proxied()).toBe("b");
    expect(await s.proxied()).toBe("b");
    expect(s.shims.a?.requests).toBe(requestsBefore);

    // The probe compares with the active provider (b) and fails: next strike, double cooldown.
    await s.tick();
    const failed = await s.health("a");
    expect(failed.lastProbe).toMatchObject({ result: "fail", at: s.clock.now });
    expect(failed.lastProbe?.detail).toMatch(/behind b/);
    expect(failed.strikes).toBe(2);
    expect(failed.blacklistedUntil - s.clock.now).toBe(2 * CONNECTION_COOLDOWN_MS);
    expect(s.metricValues("probe_results", { provider: "a", result: "fail" })).toEqual([1]);
    expect(await s.proxied()).toBe("b");

    // Fixed; after the doubled cooldown it awaits its probe, still without traffic.
    await s.shims.a?.setFault(null);
    s.clock.advance(2 * CONNECTION_COOLDOWN_MS);
    expect(await s.proxied()).toBe("b");
    expect(s.providerStatus(await s.status(), "a").state).toBe("awaiting_probe");

    // The probe passes: traffic returns to a by priority.
    const snapshot = await s.tick();
    expect(snapshot.members).toEqual(["a", "b"]);
    const passed = await s.health("a");
    expect(passed).toMatchObject({ reason: null, probeGated: false, blacklistedUntil: 0 });
    expect(passed.lastProbe).toMatchObject({ result: "pass" });
    expect(s.metricValues("probe_results", { provider: "a", result: "pass" })).toEqual([1]);
    expect(await s.proxied()).toBe("a");
    expect(s.providerStatus(await s.status(), "a")).toMatchObject({
      state: "healthy",
      last_probe: { result: "pass" },
    });
    expect(s.telemetry.logs.map((log) => [log.level, log.message])).toEqual(
      expect.arrayContaining([
        ["warn", "probe failed: provider blacklisted again"],
        ["info", "probe passed: provider back in service"],
      ]),
    );
    expectNoSecrets(s);
  });

  it("regression: a probe answered 429 with Retry-After blacklisted for the escalated base (10 min at strike 2) instead of the seconds the provider asked for, keeping a recovered primary out long after; now the probe honours Retry-After as live traffic does", async () => {
    const s = await scenario("probe-retry-after", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await advanceChains(1);
    await s.tick();
    const rateLimited = {
      kind: "http",
      status: 429,
      body: "Too Many Requests",
      headers: { "retry-after": "8" },
    } as const;
    await s.shims.a?.setFault(rateLimited);
    expect(await s.proxied()).toBe("b");
    const blacklisted = await s.health("a");
    expect(blacklisted).toMatchObject({ strikes: 1, reason: "rate_limit", probeGated: true });
    expect(blacklisted.blacklistedUntil).toBe(s.clock.now + 8_000);

    // Still limited when its probe comes: the provider's word again, 8 s, with the next strike.
    s.clock.advance(8_000);
    await s.tick();
    const failed = await s.health("a");
    expect(failed.lastProbe).toMatchObject({ result: "fail", at: s.clock.now });
    expect(failed).toMatchObject({ strikes: 2, reason: "rate_limit" });
    expect(failed.blacklistedUntil - s.clock.now).toBe(8_000);

    // Its limit over, the next probe passes (the quorum takes it back after its failed checks).
    await s.shims.a?.setFault(null);
    s.clock.advance(8_000);
    await s.tick();
    expect(await s.health("a")).toMatchObject({ reason: null, probeGated: false });
  });

  it("the backup carries traffic while every primary is out; traffic returns to the primary after its probe passes", async () => {
    const s = await scenario("backup", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
      { name: "k", node: 2, backup: true },
    ]);
    await advanceChains(1);
    expect((await s.tick()).members).toEqual(["a", "b", "k"]);
    expect(await s.proxied()).toBe("a");
    expect(s.metricValues("backup_in_use")).toEqual([0]);

    await s.shims.a?.setFault({ kind: "http", status: 503 });
    await s.shims.b?.setFault({ kind: "http", status: 503 });
    expect(await s.proxied()).toBe("k");
    expect(await s.proxied()).toBe("k");

    // The monitor keeps ticking through the outage: both primaries fail their checks too.
    s.clock.advance(INTERVAL_MS);
    expect((await s.tick()).members).toEqual(["k"]);
    expect(s.metricValues("backup_in_use").at(-1)).toBe(1);
    expect(s.metricValues("primaries_available").at(-1)).toBe(0);

    // Both recover; once the cooldown is over they await their probes, and k still serves.
    await s.shims.a?.setFault(null);
    await s.shims.b?.setFault(null);
    s.clock.advance(CONNECTION_COOLDOWN_MS);
    expect(await s.proxied()).toBe("k");

    // The probes pass (compared with k, the active provider). The failed check still keeps
    // them out of quorum for failed_recently_checks (2) ticks; then traffic returns to a.
    let snapshot = await s.tick();
    expect((await s.health("a")).lastProbe?.result).toBe("pass");
    expect((await s.health("a")).lastProbe?.detail).toMatch(/up to date with k/);
    expect((await s.health("b")).lastProbe?.result).toBe("pass");
    expect(snapshot.excluded).toEqual({ a: "failed_recently", b: "failed_recently" });
    expect(await s.proxied()).toBe("k");
    s.clock.advance(INTERVAL_MS);
    snapshot = await s.tick();
    expect(snapshot.excluded).toEqual({ a: "failed_recently", b: "failed_recently" });
    s.clock.advance(INTERVAL_MS);
    snapshot = await s.tick();
    expect(snapshot.members).toEqual(["a", "b", "k"]);
    expect(await s.proxied()).toBe("a");
    expect(s.metricValues("backup_in_use").at(-1)).toBe(0);
    expect(s.metricValues("primaries_available").at(-1)).toBe(2);
  });

  it("with every provider healthy a tick makes zero probe calls", async () => {
    const s = await scenario("calm", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await s.tick(); // first contact: head and chain id
    for (let tick = 0; tick < 3; tick++) {
      const before = Object.values(s.shims).map((shim) => shim.requests);
      s.clock.advance(INTERVAL_MS);
      await s.tick();
      // Exactly the quorum check, one request per provider (the fork check is off here), the
      // head check's one batch to the first member at the head (a), and b's confirmation of
      // its finality (docs/behaviour.md §10.1): no probe.
      expect(Object.values(s.shims).map((shim) => shim.requests)).toEqual(
        before.map((count) => count + 2),
      );
    }
    expect(s.metricValues("probe_results")).toEqual([]);
  });

  it("two overlapping monitors probe a provider once", async () => {
    const s = await scenario("overlap", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    await s.tick();
    await s.shims.a?.setFault({ kind: "http", status: 503 });
    expect(await s.proxied()).toBe("b");
    await s.shims.a?.setFault(null);
    s.clock.advance(CONNECTION_COOLDOWN_MS);

    const before = s.shims.a?.requests ?? 0;
    const other = recordingTelemetry();
    await Promise.all([s.tick(), s.newMonitor(other).tick()]);
    // Two quorum checks, two head checks (a is at the head), one probe.
    expect((s.shims.a?.requests ?? 0) - before).toBe(5);
    const probes = [...s.telemetry.metrics, ...other.metrics].filter(
      (metric) => metric.name === "probe_results",
    );
    expect(probes).toEqual([
      {
        name: "probe_results",
        dimensions: { network: s.network, provider: "a", result: "pass" },
        value: 1,
      },
    ]);
    expect(await s.proxied()).toBe("a");
  });
});

describe("the scheduled Lambda run", () => {
  it("ticks every check interval under the lease until just before the next schedule, with EMF metrics", async () => {
    const s = await scenario("lambda", [
      { name: "a", node: 0, priority: 2 },
      { name: "b", node: 1, priority: 1 },
    ]);
    const lines: string[] = [];
    const runtime = createMonitorRuntime({
      configSource: createConfigSource({ kind: "file", path: s.configPath }),
      secrets: envSecretResolver(SECRETS),
      store: s.store,
      monitorStore: s.monitorStore,
      statsStore: s.statsStore,
      upstream,
      clock: s.clock.read,
      writeMetrics: (line) => lines.push(line),
      serviceName: "rpc-gateway-test",
    });
    const sleeps: number[] = [];
    const run = await runScheduled({
      monitor: runtime.monitor,
      model: runtime.model,
      leaseStore: s.monitorStore,
      holder: "request-1",
      remainingMs: 90_000,
      clock: s.clock.read,
      sleep: async (ms) => {
        sleeps.push(ms);
        s.clock.advance(ms);
      },
    });
    // Ticks at 0 s and 30 s; one at 60 s would not end before the next schedule (58 s).
    expect(run).toEqual({ leased: true, ticks: 2 });
    expect(sleeps).toHaveLength(1);
    expect(await s.proxied()).toBe("a");
    const status = await s.status();
    expect(status.monitor.last_tick_at).toBe(new Date(s.clock.now).toISOString());
    expect(status.quorum.members).toEqual(["a", "b"]);

    const metrics = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const named = (name: string) => metrics.filter((metric) => name in metric);
    expect(named("monitor_ticks")).toHaveLength(2);
    expect(named("quorum_size")[0]).toMatchObject({ network: s.network, quorum_size: 2 });
    expect(
      named("head_lag_seconds")
        .map((metric) => metric.provider)
        .sort(),
    ).toEqual(["a", "a", "b", "b"]);
    expect(lines.join("\n")).not.toContain(SECRET);
    // The lease was released: the next scheduled run starts at once.
    expect(
      await s.monitorStore.acquireMonitorLease("request-2", s.clock.now, s.clock.now + 1),
    ).toBe(true);
  });
});
