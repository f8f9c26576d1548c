import { rm, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DynamoFollowerStore } from "../../functions/adapters/subscriptions/follower-store.ts";
import { Outbox } from "../../functions/core/follower/delivery/outbox.ts";
import { followerSettingsOf } from "../../functions/core/follower/follow-settings.ts";
import { NetworkFollower } from "../../functions/core/follower/network-follower.ts";
import { METRICS_NAMESPACE } from "../../infra/monitoring.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { synthGateway } from "./synth.ts";

/**
 * The metric contract between the code and the alarms: an alarm or dashboard metric matches
 * only a metric emitted with exactly its name and dimension set. This runs the gateway end to
 * end (proxy and monitor on anvil nodes, dynalite), drives it through every path that emits a
 * metric (traffic, an upstream failure and its blacklist, a probe, a missing secret, a config
 * that does not validate, one that cannot be read, a state store that is down), captures the
 * EMF lines, and checks every metric of the synthesized templates' alarms and dashboards
 * against them.
 */

process.env.POWERTOOLS_LOG_LEVEL = "CRITICAL";

interface Emitted {
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

/** A metric of our namespace as the template names it. */
interface Watched {
  readonly where: string;
  readonly name: string;
  /** Dimension name → value (`*` for a SEARCH, which matches every value). */
  readonly dimensions: Readonly<Record<string, string>>;
}

const lines: string[] = [];
let nodes: AnvilNode[] = [];
let shim: FaultShim;
let stack: LocalStack;
let clockNow = Date.now() + 3_600_000;

async function rpc(method = "eth_blockNumber", params: unknown[] = []) {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return { status: response.status, provider: response.headers.get("x-gateway-provider") };
}

function emitted(): Emitted[] {
  return lines.flatMap((line) => {
    const emf = JSON.parse(line) as Record<string, unknown> & {
      _aws: {
        CloudWatchMetrics: Array<{
          Namespace: string;
          Dimensions: string[][];
          Metrics: Array<{ Name: string }>;
        }>;
      };
    };
    return emf._aws.CloudWatchMetrics.flatMap((directive) =>
      directive.Metrics.flatMap((metric) =>
        directive.Dimensions.map((names) => ({
          name: metric.Name,
          dimensions: Object.fromEntries(names.map((name) => [name, String(emf[name])])),
        })),
      ),
    );
  });
}

/** The HTTP status a WebSocket connect to devnet gets (101: opened, then closed again). */
function connectStatus(): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${stack.wsUrl}/devnet`);
    socket.once("unexpected-response", (_req, res) => resolve(res.statusCode));
    socket.once("open", () => {
      socket.close();
      resolve(101);
    });
    socket.once("error", () => resolve(undefined));
  });
}

beforeAll(async () => {
  nodes = await Promise.all([0, 1, 2].map(() => startAnvil({ chainId: 31337 })));
  const [first, second, third] = nodes as [AnvilNode, AnvilNode, AnvilNode];
  shim = await startFaultShim(first.url);
  stack = await startLocalStack({
    clock: () => clockNow,
    env: {},
    monitor: true,
    writeMetrics: (line) => lines.push(line),
    config: {
      // The timer ticks once at start; the test ticks the monitor itself after that.
      check_interval_seconds: 3600,
      config_refresh_seconds: 30,
      // A hedge fires after 100 ms, so the run can show one without waiting 2 s.
      hedge: { min_ms: 100, max_ms: 100 },
      networks: {
        devnet: {
          chain_id: 31337,
          providers: [
            { name: "primary", url: shim.url, priority: 2 },
            { name: "secondary", url: second.url, priority: 1 },
            { name: "backup", url: third.url, backup: true },
            { name: "keyed", url: `${second.url}/?key=\${MISSING_KEY}` },
          ],
        },
      },
    },
  });
  const monitor = stack.monitor;
  if (monitor === null) throw new Error("the stack has no monitor");
  const flush = () => {
    stack.runtime.telemetry.flush();
    monitor.telemetry.flush();
  };

  // Traffic, then an upstream failure: retried elsewhere, the primary blacklisted.
  expect((await rpc()).provider).toBe("primary");
  // The answer cache: a miss, then a hit from memory.
  await rpc("eth_chainId");
  expect((await rpc("eth_chainId")).provider).toBe("");
  // A slow read is hedged: ten reads earn one hedge (max_ratio 0.1), then the primary stalls.
  const balanceOf = (n: number) => rpc("eth_getBalance", [`0x${n.toString(16).padStart(40, "0")}`]);
  for (let n = 0; n < 10; n++) await balanceOf(n);
  await shim.setFault({ kind: "slow", ms: 2_000 });
  expect((await balanceOf(10)).provider).toBe("secondary");
  await shim.setFault({ kind: "http", status: 503 });
  expect((await rpc()).provider).toBe("secondary");
  await shim.setFault(null);
  // The cooldown runs out; the monitor probes the primary back in.
  clockNow += 3_600_000;
  await monitor.monitor.tick();
  expect((await rpc()).provider).toBe("primary");

  // The socket function loads its config while the file is there.
  expect(await connectStatus()).toBe(101);

  // A config that does not validate, then one that cannot be read: both rejected.
  await writeFile(stack.configPath, '{ "networks": {} }');
  clockNow += 31_000;
  await rpc();
  await monitor.monitor.tick();
  await rm(stack.configPath);
  clockNow += 31_000;
  await rpc();

  // The head follower: a step (its lag behind the served head), and a push that fails (a
  // delivery failure, and the notification's outcome).
  const follower = stack.follower;
  if (follower === null) throw new Error("the stack has no follower");
  const devnet = (await follower.proxy.current()).model.networks.get("devnet");
  if (devnet === undefined) throw new Error("no devnet");
  const networkFollower = new NetworkFollower({
    network: "devnet",
    holder: "metric-contract",
    handle: (body, remainingMs) =>
      follower.proxy.gateway.handleRpc("devnet", body, { remainingMs }),
    servedHead: () => follower.proxy.gateway.servedHead("devnet"),
    probeHead: (timeoutMs) => follower.proxy.gateway.pollHead("devnet", timeoutMs),
    subscriptions: stack.subscriptions,
    push: stack.push,
    store: new DynamoFollowerStore({
      client: stack.store.client,
      tableName: stack.store.tableName,
      clock: () => clockNow,
    }),
    clock: () => clockNow,
    wait: async () => undefined,
    telemetry: follower.proxy.telemetry,
    settings: followerSettingsOf(devnet),
  });
  expect(await networkFollower.begin(clockNow + 60_000)).toBe(true);
  await networkFollower.step();
  await networkFollower.end();
  const outbox = new Outbox({
    network: "devnet",
    push: { post: async () => "failed", close: async () => undefined },
    forget: async () => undefined,
    telemetry: follower.proxy.telemetry,
    concurrency: 1,
    dropped: new Set(),
  });
  outbox.add("a-broken-connection", "newHeads", { text: "{}", fits: true });
  await outbox.flush();
  follower.proxy.telemetry.flush();

  // The state store goes down: every network's monitor tick fails, and a WebSocket connect
  // is refused because its connection cannot be registered.
  await stack.dynamo.close();
  await monitor.monitor.tick();
  const refused = await connectStatus();
  expect(refused).toBe(503);
  flush();
  for (const socket of stack.sockets) socket.proxy.telemetry.flush();
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await shim?.close();
  await Promise.all(nodes.map((node) => node.stop()));
});

/** Every metric of our namespace in the template's alarms and dashboard. */
function watchedMetrics(env: "dev" | "prod"): Watched[] {
  const synth = synthGateway(env);
  const resources = Object.values(
    synth.template.toJSON().Resources as Record<string, never>,
  ) as Array<{
    Type: string;
    Properties: Record<string, unknown>;
  }>;
  const watched: Watched[] = [];
  for (const alarm of resources.filter((resource) => resource.Type === "AWS::CloudWatch::Alarm")) {
    const queries = (alarm.Properties.Metrics ?? []) as Array<{
      MetricStat?: {
        Metric: {
          Namespace: string;
          MetricName: string;
          Dimensions: Array<{ Name: string; Value: string }>;
        };
      };
    }>;
    for (const query of queries) {
      const metric = query.MetricStat?.Metric;
      if (metric?.Namespace !== METRICS_NAMESPACE) continue;
      watched.push({
        where: `alarm ${String(alarm.Properties.AlarmName)}`,
        name: metric.MetricName,
        dimensions: Object.fromEntries(metric.Dimensions.map((d) => [d.Name, d.Value])),
      });
    }
  }
  const dashboard = resources.find((resource) => resource.Type === "AWS::CloudWatch::Dashboard");
  if (dashboard === undefined) throw new Error(`${env} has no dashboard`);
  const join = (dashboard.Properties.DashboardBody as { "Fn::Join": [string, unknown[]] })[
    "Fn::Join"
  ];
  const body = JSON.parse(
    join[1].map((part) => (typeof part === "string" ? part : "TOKEN")).join(""),
  ) as {
    widgets: Array<{ properties: { title?: string; metrics?: unknown[][] } }>;
  };
  for (const widget of body.widgets) {
    const where = `dashboard "${widget.properties.title ?? ""}"`;
    for (const entry of widget.properties.metrics ?? []) {
      const [first] = entry;
      if (first === METRICS_NAMESPACE) {
        const parts = entry.filter((part): part is string => typeof part === "string");
        const dimensions: Record<string, string> = {};
        for (let index = 2; index + 1 < parts.length; index += 2) {
          dimensions[parts[index] ?? ""] = parts[index + 1] ?? "";
        }
        watched.push({ where, name: parts[1] ?? "", dimensions });
      } else if (typeof first === "object" && first !== null && "expression" in first) {
        const expression = String((first as { expression: string }).expression);
        const search = /\{([^}]*)\}\s+MetricName="([^"]+)"/.exec(expression);
        if (!search) continue;
        const [namespace, ...names] = (search[1] ?? "").split(",");
        if (namespace !== METRICS_NAMESPACE) continue;
        watched.push({
          where,
          name: search[2] ?? "",
          dimensions: Object.fromEntries(names.map((name) => [name, "*"])),
        });
      }
    }
  }
  return watched;
}

const dimensionSet = (dimensions: Readonly<Record<string, string>>) =>
  Object.keys(dimensions).sort().join(",");

describe.each(["dev", "prod"] as const)("metric contract of %s", (env) => {
  it("every alarm and dashboard metric is one the code emits: same name, same dimension set, and any fixed dimension value seen", () => {
    const seen = emitted();
    const watched = watchedMetrics(env);
    expect(watched.filter((metric) => metric.where.startsWith("alarm")).length).toBeGreaterThan(5);
    expect(watched.filter((metric) => metric.where.startsWith("dashboard")).length).toBeGreaterThan(
      5,
    );

    const problems: string[] = [];
    for (const metric of watched) {
      const sameSet = seen.filter(
        (candidate) =>
          candidate.name === metric.name &&
          dimensionSet(candidate.dimensions) === dimensionSet(metric.dimensions),
      );
      if (sameSet.length === 0) {
        const sets = [
          ...new Set(
            seen
              .filter((c) => c.name === metric.name)
              .map((c) => `[${dimensionSet(c.dimensions)}]`),
          ),
        ];
        problems.push(
          `${metric.where}: ${metric.name} [${dimensionSet(metric.dimensions)}] is never emitted (emitted with: ${sets.join(" ") || "nothing"})`,
        );
        continue;
      }
      // `service` differs by environment and `network` by config; other fixed values must match.
      for (const [dimension, value] of Object.entries(metric.dimensions)) {
        if (value === "*" || dimension === "service" || dimension === "network") continue;
        if (!sameSet.some((candidate) => candidate.dimensions[dimension] === value)) {
          problems.push(`${metric.where}: ${metric.name} ${dimension}="${value}" is never emitted`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("what the run emitted", () => {
  it("covered every path: failures, blacklists, probes, rejections, left-out providers, monitor errors", () => {
    const names = new Set(emitted().map((metric) => metric.name));
    for (const name of [
      "requests",
      "retried_errors",
      "blacklist_events",
      "probe_results",
      "config_rejected",
      "providers_left_out",
      "monitor_ticks",
      "monitor_errors",
      "quorum_size",
      "primaries_available",
      "backup_in_use",
      "head_lag_seconds",
    ]) {
      expect(names, name).toContain(name);
    }
    const reasons = emitted()
      .filter((metric) => metric.name === "config_rejected")
      .map((metric) => metric.dimensions.reason);
    expect(new Set(reasons)).toEqual(new Set(["invalid", "unreachable"]));
    expect(emitted().every((metric) => metric.dimensions.service !== undefined)).toBe(true);
  });
});
