import { rm, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { type EmfMetric, metricsNamed, parseEmf, valuesOf } from "../../support/emf.ts";

/**
 * The metrics docs/behaviour.md §7.2 lists, with their dimensions, and the status route's traffic
 * figures, from a known sequence of requests on the local stack: five to the primary (the
 * last one failing over), then three more to the secondary, which answers 300 ms late. The
 * clock is real time plus jumps the test makes, so latencies are real while the stats flush
 * and the config re-read happen when the test says.
 */

const CHAIN_ID = 31337;
const SLOW_MS = 300;

/** Added to real time by the test, to pass intervals without waiting. */
let skipped = 0;
const clock = () => Date.now() + skipped;
let primaryNode: AnvilNode;
let secondaryNode: AnvilNode;
let primary: FaultShim;
let slowSecondary: FaultShim;
let stack: LocalStack;
const lines: string[] = [];

function config(): ConfigInput {
  return {
    config_refresh_seconds: 1,
    networks: {
      devnet: {
        chain_id: CHAIN_ID,
        providers: [
          { name: "primary", url: primary.url, priority: 2 },
          { name: "secondary", url: slowSecondary.url, priority: 1 },
        ],
      },
    },
  };
}

async function blockNumber(id: number): Promise<{ status: number; provider: string | null }> {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: `{"jsonrpc":"2.0","id":${id},"method":"eth_blockNumber","params":[]}`,
  });
  await response.text();
  return { status: response.status, provider: response.headers.get("x-gateway-provider") };
}

function emitted(): EmfMetric[] {
  stack.runtime.telemetry.flush();
  return parseEmf(lines);
}

interface ProviderStats {
  window_seconds: number;
  requests: number;
  errors: number;
  latency_ms: { p50: number | null; p95: number | null };
}

async function statsOf(): Promise<Record<string, ProviderStats>> {
  const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
    providers: Array<{ name: string; stats: ProviderStats }>;
  };
  return Object.fromEntries(status.providers.map((p) => [p.name, p.stats]));
}

beforeAll(async () => {
  [primaryNode, secondaryNode] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID }),
    startAnvil({ chainId: CHAIN_ID }),
  ]);
  [primary, slowSecondary] = await Promise.all([
    startFaultShim(primaryNode.url),
    startFaultShim(secondaryNode.url),
  ]);
  await slowSecondary.setFault({ kind: "slow", ms: SLOW_MS });
  stack = await startLocalStack({
    config: config(),
    clock,
    writeMetrics: (line) => lines.push(line),
  });

  for (let id = 1; id <= 4; id++) expect(await blockNumber(id)).toMatchObject({ status: 200 });
  await primary.setFault({ kind: "http", status: 503 });
  expect(await blockNumber(5)).toEqual({ status: 200, provider: "secondary" });
  for (let id = 6; id <= 7; id++) {
    expect(await blockNumber(id)).toEqual({ status: 200, provider: "secondary" });
  }
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([primary?.close(), slowSecondary?.close()]);
  await Promise.all([primaryNode?.stop(), secondaryNode?.stop()]);
});

describe("request metrics (network dimension)", () => {
  it("requests counts every proxied request, latency_ms measures each, attempts counts upstream calls", () => {
    const metrics = emitted();
    const devnet = { network: "devnet" };
    const requests = metricsNamed(metrics, "requests", devnet);
    expect(valuesOf(requests).reduce((sum, value) => sum + value, 0)).toBe(7);
    const latency = metricsNamed(metrics, "latency_ms", devnet);
    expect(valuesOf(latency)).toHaveLength(7);
    // Three requests waited for the slow secondary.
    expect(valuesOf(latency).filter((ms) => ms >= SLOW_MS)).toHaveLength(3);
    const attempts = metricsNamed(metrics, "attempts", devnet);
    expect(valuesOf(attempts).sort()).toEqual([1, 1, 1, 1, 1, 1, 2]);
    for (const metric of [...requests, ...latency, ...attempts]) {
      expect(metric.namespace).toBe("RpcGateway");
      expect(Object.keys(metric.dimensions).sort()).toEqual(["network", "service"]);
    }
    expect(requests[0]?.unit).toBe("Count");
    expect(latency[0]?.unit).toBe("Milliseconds");
    expect(attempts[0]?.unit).toBe("Count");
  });
});

describe("the status route's traffic figures", () => {
  it("shows each provider's requests, errors and latency over the window", async () => {
    // The stats are flushed to DynamoDB with the first request in a new flush slot (10 s
    // while all succeeds, 5 s with a failure), beside it: wait for the flush to land.
    skipped += 10_000;
    await fetch(`${stack.url}/health`).then((response) => response.text());
    let stats: Record<string, ProviderStats> = {};
    await vi.waitFor(
      async () => {
        stats = await statsOf();
        expect(stats.primary?.requests).toBeGreaterThanOrEqual(5);
      },
      { timeout: 5_000, interval: 50 },
    );
    expect(stats.primary).toMatchObject({ window_seconds: 300, requests: 5, errors: 1 });
    expect(stats.secondary).toMatchObject({ window_seconds: 300, requests: 3, errors: 0 });
    const fast = stats.primary?.latency_ms;
    const slow = stats.secondary?.latency_ms;
    // The histogram is log-spaced (bins double): estimates are good to a factor of two.
    expect(slow?.p50).toBeGreaterThanOrEqual(SLOW_MS / 2);
    expect(slow?.p95).toBeGreaterThanOrEqual(slow?.p50 ?? Number.POSITIVE_INFINITY);
    expect(fast?.p50).toBeLessThan(SLOW_MS / 2);
    expect(fast?.p95).toBeGreaterThanOrEqual(fast?.p50 ?? Number.POSITIVE_INFINITY);
  });
});

describe("config metrics (source, reason)", () => {
  it("config_loaded at start; config_rejected for an invalid and for an unreadable config, which keep the last good one", async () => {
    const loaded = metricsNamed(emitted(), "config_loaded");
    expect(loaded.map((metric) => metric.dimensions.source)).toEqual(["file"]);
    expect(valuesOf(loaded)).toEqual([1]);

    await writeFile(stack.configPath, '{ "networks": {}, "no_such_key": 1 }');
    skipped += 1_000;
    await primary.setFault(null);
    expect((await blockNumber(8)).status).toBe(200);
    expect(metricsNamed(emitted(), "config_rejected", { reason: "invalid" })).toHaveLength(1);

    await rm(stack.configPath);
    skipped += 1_000;
    expect((await blockNumber(9)).status).toBe(200);
    expect(metricsNamed(emitted(), "config_rejected", { reason: "unreachable" })).toHaveLength(1);

    // A good config again: loaded (and counted) once more.
    await writeFile(stack.configPath, JSON.stringify({ ...config(), request_timeout_ms: 9000 }));
    skipped += 1_000;
    expect((await blockNumber(10)).status).toBe(200);
    const all = emitted();
    expect(valuesOf(metricsNamed(all, "config_loaded", { source: "file" }))).toEqual([1, 1]);
    for (const metric of metricsNamed(all, "config_rejected")) {
      expect(Object.keys(metric.dimensions).sort()).toEqual(["reason", "service"]);
    }
  });
});
