import { createPublicClient, http, type PublicClient } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { applyProbePass } from "../../functions/core/health/health.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type Fault, type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";

/**
 * The health model end to end (docs/behaviour.md §4, §6): a real anvil behind a fault-injecting shim as
 * the primary of each network, a healthy anvil as the secondary. A viem client sees every
 * read succeed while the fault is on; the status route and the metrics show why the primary
 * was blacklisted, with its strikes and cooldown.
 */

const MIN = 60_000;
const ERPC_NESTED = {
  code: -32603,
  message: "failsafe retry exceeded: all upstream attempts failed",
  data: {
    code: "ErrFailsafeRetryExceeded",
    cause: {
      code: "ErrUpstreamsExhausted",
      cause: [
        {
          code: "ErrUpstreamRequest",
          cause: { code: "ErrEndpointCapacityExceeded", message: "capacity exceeded" },
        },
      ],
    },
  },
};
const CLOUDFLARE_PAGE = (code: number) =>
  `<!DOCTYPE html><html><head><title>${code}: error</title></head><body><h1>Error ${code}</h1><p>cloudflare</p></body></html>`;

interface Scenario {
  readonly name: string;
  readonly fault: Fault;
  readonly kind: string;
  readonly reason: string;
  readonly cooldownMs: number;
}

const scenarios: Scenario[] = [
  {
    name: "refuse",
    fault: { kind: "refuse" },
    kind: "connection",
    reason: "connection",
    cooldownMs: 2 * MIN,
  },
  {
    name: "hang",
    fault: { kind: "hang" },
    kind: "timeout",
    reason: "timeout",
    cooldownMs: 3 * MIN,
  },
  {
    name: "429-retry-after",
    fault: {
      kind: "http",
      status: 429,
      body: "Too Many Requests",
      headers: { "retry-after": "30" },
    },
    kind: "rate_limit",
    reason: "rate_limit",
    // The provider's Retry-After, not the 5-minute base.
    cooldownMs: 30_000,
  },
  {
    name: "503",
    fault: { kind: "http", status: 503, body: "Service Unavailable" },
    kind: "http",
    reason: "connection",
    cooldownMs: 2 * MIN,
  },
  {
    name: "520-html",
    fault: { kind: "http", status: 520, body: CLOUDFLARE_PAGE(520) },
    kind: "http",
    reason: "connection",
    cooldownMs: 2 * MIN,
  },
  {
    name: "522-html",
    fault: { kind: "http", status: 522, body: CLOUDFLARE_PAGE(522) },
    kind: "http",
    reason: "timeout",
    cooldownMs: 3 * MIN,
  },
  {
    name: "524-html",
    fault: { kind: "http", status: 524, body: CLOUDFLARE_PAGE(524) },
    kind: "timeout",
    reason: "timeout",
    cooldownMs: 3 * MIN,
  },
  {
    name: "in-body-32429",
    fault: {
      kind: "jsonrpc_error",
      code: -32429,
      message: "Throughput limit of 100 CUs/sec exceeded",
    },
    kind: "rate_limit",
    reason: "rate_limit",
    cooldownMs: 5 * MIN,
  },
  {
    name: "erpc-nested",
    fault: { kind: "jsonrpc_error", ...ERPC_NESTED },
    kind: "rate_limit",
    reason: "rate_limit",
    cooldownMs: 5 * MIN,
  },
  {
    name: "text-result",
    fault: { kind: "result", value: "You've been rate limited, please slow down" },
    kind: "no_result",
    reason: "transient",
    cooldownMs: 1 * MIN,
  },
  {
    name: "malformed",
    fault: { kind: "malformed" },
    kind: "http",
    reason: "transient",
    cooldownMs: 1 * MIN,
  },
];

const START = Date.UTC(2026, 10, 29, 12);
let now = START;
let primaryNode: AnvilNode;
let healthyNode: AnvilNode;
const shims = new Map<string, FaultShim>();
let stack: LocalStack;
const metrics: string[] = [];

function client(network: string): PublicClient {
  return createPublicClient({
    chain: foundry,
    transport: http(`${stack.url}/${network}`, { batch: true, retryCount: 0 }),
  });
}

interface ProviderStatus {
  name: string;
  state: string;
  strikes: number;
  blacklist: { reason: string; until: string } | null;
}

async function primaryStatus(network: string): Promise<ProviderStatus> {
  const status = (await fetch(`${stack.url}/${network}/status`).then((r) => r.json())) as {
    providers: ProviderStatus[];
  };
  const primary = status.providers.find((provider) => provider.name === "primary");
  if (!primary) throw new Error("no primary in status");
  return primary;
}

const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/** What the healthy node itself says: the answers every read must match. */
interface Truth {
  readonly blockNumber: bigint;
  readonly latestHash: string;
  readonly balance: bigint;
}
let healthyTruth: Truth;

async function truthOf(node: AnvilNode): Promise<Truth> {
  const block = (await node.rpc("eth_getBlockByNumber", ["latest", false])) as {
    number: string;
    hash: string;
  };
  return {
    blockNumber: BigInt(block.number),
    latestHash: block.hash,
    balance: BigInt((await node.rpc("eth_getBalance", [DEPLOYER, "latest"])) as string),
  };
}

/**
 * A bounded stream of mixed reads, like an indexer's: all must succeed, with the healthy
 * node's answers (the faulty primary's node has another head, hash and balance).
 */
async function mixedReads(viem: PublicClient): Promise<number> {
  let ok = 0;
  for (let round = 0; round < 4; round++) {
    const [blockNumber, block, chainId, logs, balance] = await Promise.all([
      viem.getBlockNumber({ cacheTime: 0 }),
      viem.getBlock({ blockTag: "latest" }),
      viem.getChainId(),
      viem.getLogs({ fromBlock: 0n, toBlock: "latest" }),
      viem.getBalance({ address: DEPLOYER }),
    ]);
    expect(blockNumber).toBe(healthyTruth.blockNumber);
    expect(block.hash).toBe(healthyTruth.latestHash);
    expect(chainId).toBe(31337);
    expect(logs).toEqual([]);
    expect(balance).toBe(healthyTruth.balance);
    ok += 5;
    expect(await viem.getBlockNumber({ cacheTime: 0 })).toBe(healthyTruth.blockNumber);
    ok++;
  }
  return ok;
}

beforeAll(async () => {
  [primaryNode, healthyNode] = await Promise.all([
    startAnvil({ chainId: 31337 }),
    startAnvil({ chainId: 31337 }),
  ]);
  // Another head and balance on each node, so an answer says which node gave it.
  await Promise.all([
    primaryNode.rpc("anvil_mine", ["0x3"]),
    healthyNode.rpc("anvil_mine", ["0x6"]),
    healthyNode.rpc("anvil_setBalance", [DEPLOYER, "0x4242"]),
  ]);
  healthyTruth = await truthOf(healthyNode);
  const networks: Record<string, ConfigInput["networks"][string]> = {};
  for (const scenario of [...scenarios.map((s) => s.name), "escalation"]) {
    const shim = await startFaultShim(primaryNode.url);
    shims.set(scenario, shim);
    networks[scenario] = {
      chain_id: 31337,
      providers: [
        { name: "primary", url: shim.url, priority: 2 },
        { name: "secondary", url: healthyNode.url, priority: 1 },
      ],
    };
  }
  stack = await startLocalStack({
    config: { request_timeout_ms: 400, networks },
    clock: () => now,
    writeMetrics: (line) => metrics.push(line),
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([...shims.values()].map((shim) => shim.close()));
  await Promise.all([primaryNode?.stop(), healthyNode?.stop()]);
});

describe("with one healthy provider left, every read succeeds", () => {
  it.each(scenarios)(
    "$name → $kind, blacklisted for $reason",
    async ({ name, fault, kind, reason, cooldownMs }) => {
      await shims.get(name)?.setFault(fault);
      const viem = client(name);
      expect(await mixedReads(viem)).toBe(24);
      const primary = await primaryStatus(name);
      expect(primary).toMatchObject({ state: "blacklisted", strikes: 1, blacklist: { reason } });
      expect(Date.parse(primary.blacklist?.until ?? "") - now).toBe(cooldownMs);
      // After the blacklist, the primary gets no more traffic.
      const seen = shims.get(name)?.requests ?? 0;
      await mixedReads(viem);
      expect(shims.get(name)?.requests).toBe(seen);

      stack.runtime.telemetry.flush();
      const emitted = metrics.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(emitted).toContainEqual(
        expect.objectContaining({
          network: name,
          provider: "primary",
          kind,
          retried_errors: expect.any(Number),
        }),
      );
      expect(emitted).toContainEqual(
        expect.objectContaining({
          network: name,
          provider: "primary",
          reason,
          blacklist_events: expect.any(Number),
        }),
      );
    },
  );
});

describe("escalation: cooldown doubles per incident, capped at max_blacklist_minutes", () => {
  it("429 incidents escalate 5 → 10 → 20 → 30 → 30 min, one strike each", async () => {
    const shim = shims.get("escalation");
    await shim?.setFault({ kind: "http", status: 429, body: "slow down" });
    const viem = client("escalation");
    const expected = [5, 10, 20, 30, 30];
    for (const [index, minutes] of expected.entries()) {
      expect(await viem.getBlockNumber({ cacheTime: 0 })).toBeGreaterThan(0n);
      const primary = await primaryStatus("escalation");
      expect(primary.strikes).toBe(index + 1);
      expect(primary.blacklist?.reason).toBe("rate_limit");
      expect(Date.parse(primary.blacklist?.until ?? "") - now).toBe(minutes * MIN);
      // The cooldown runs out; the monitor's probe passes (written as the monitor does) and
      // the provider is back in service, still failing: the next incident is the next strike.
      now += minutes * MIN;
      const health = await stack.store.readHealth("escalation", "primary");
      await stack.store.writeHealth(
        "escalation",
        "primary",
        health.version,
        applyProbePass(health, { at: now, result: "pass", detail: "test" }),
      );
      now += 2000;
    }
  });
});
