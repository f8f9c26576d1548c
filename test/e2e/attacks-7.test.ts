import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { type LyingFront, startLyingFront } from "../support/lying-front.ts";

/**
 * A quorum member lying about its head to the proxy, honest to nobody: its `eth_blockNumber`
 * says 30 while the chain (one anvil behind both providers) stands at 10, and it makes up
 * block 28. The monitor's snapshot says 10 at NOW, on 1 s blocks; the clock is injected.
 * `honest` is asked first for block lookups.
 */
let node: AnvilNode;
let liar: LyingFront;
let stack: LocalStack;
const NOW = Date.UTC(2026, 11, 1, 6);
let now = NOW;
const MADE_UP = `0x${"de".repeat(32)}`;

async function rpc(method: string, params: unknown[]) {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    body: (await response.json()) as { result?: unknown },
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
  };
}

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  await node.rpc("anvil_mine", ["0xa"]);
  liar = await startLyingFront(node.url, (call, forward) => {
    if (call.method === "eth_blockNumber") return { result: "0x1e" };
    const [block] = (call.params ?? []) as unknown[];
    if (call.method === "eth_getBlockByNumber" && block === "0x1c") {
      return { result: { number: "0x1c", hash: MADE_UP, parentHash: MADE_UP, transactions: [] } };
    }
    return forward();
  });
  stack = await startLocalStack({
    clock: () => now,
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          providers: [
            { name: "liar", url: liar.url, priority: 2 },
            {
              name: "honest",
              url: node.url,
              priority: 1,
              priority_match: { eth_getBlockByNumber: 5 },
            },
          ],
        },
      },
    },
  });
  const monitorStore = new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  });
  await monitorStore.writeQuorum("devnet", {
    head: 10,
    headTimestamp: 0,
    members: ["liar", "honest"],
    excluded: {},
    heads: { liar: { number: 10, timestamp: 0 }, honest: { number: 10, timestamp: 0 } },
    computedAt: NOW,
  });
  await monitorStore.writeHead("devnet", {
    latest: { number: 10, hash: null },
    safe: null,
    finalized: null,
    served: null,
    previousServed: null,
    updatedAt: NOW,
    reorgSeenAt: 0,
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await node?.stop();
});

describe("a head claimed far ahead", () => {
  it("regression: a claim of 30 at NOW+1 s, 16 past what the chain allowed then, raised the known head 26 s later, so the honest null for block 28 was judged behind and the liar's made-up block served; now the honest null stands", async () => {
    now = NOW + 1_000;
    const claimed = await rpc("eth_blockNumber", []);
    expect(claimed.provider).toBe("liar");
    // Beyond the reachable head (19 is the furthest the chain can be): neither published nor
    // handed to this caller, who gets the newest block known to exist.
    expect(claimed.body.result).toBe("0xa");
    now = NOW + 27_000;
    const block = await rpc("eth_getBlockByNumber", ["0x1c", false]);
    expect(block).toMatchObject({ provider: "honest", attempts: "1", body: { result: null } });
  });
});
