import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { type LyingFront, startLyingFront } from "../../support/lying-front.ts";

/**
 * docs/behaviour.md §5.4 and §10: the proxy raises its known head from block numbers in
 * answers, so between two monitor ticks a null for a block it has already seen is not an
 * answer: the provider is behind, and the call goes elsewhere without a strike. Two quorum
 * members: `ahead` at block 10, `lagging` at block 5 and preferred for block lookups.
 *
 * On network `claimed`, a quorum member lies about its head to the proxy, honest to nobody:
 * its `eth_blockNumber` says 30 while the chain (`ahead`'s, behind both providers) stands at
 * 10, and it makes up block 28. The monitor's snapshot says 10 at NOW, on 1 s blocks; the
 * clock is injected. `honest` is asked first for block lookups.
 */
let ahead: AnvilNode;
let lagging: AnvilNode;
let liar: LyingFront;
let stack: LocalStack;
const NOW = Date.UTC(2026, 10, 29, 12);
let now = NOW;
const MADE_UP = `0x${"de".repeat(32)}`;

async function rpc(method: string, params: unknown[], network = "devnet") {
  const response = await fetch(`${stack.url}/${network}`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    body: (await response.json()) as { result?: { number?: string } | string | null },
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
  };
}

beforeAll(async () => {
  [ahead, lagging] = await Promise.all([
    startAnvil({ chainId: 31337 }),
    startAnvil({ chainId: 31337 }),
  ]);
  await Promise.all([ahead.rpc("anvil_mine", ["0xa"]), lagging.rpc("anvil_mine", ["0x5"])]);
  liar = await startLyingFront(ahead.url, (call, forward) => {
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
          providers: [
            { name: "ahead", url: ahead.url, priority: 2 },
            {
              name: "lagging",
              url: lagging.url,
              priority: 1,
              priority_match: { eth_getBlockByNumber: 5 },
            },
          ],
        },
        claimed: {
          chain_id: 31337,
          block_time_seconds: 1,
          providers: [
            { name: "liar", url: liar.url, priority: 2 },
            {
              name: "honest",
              url: ahead.url,
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
  // The monitor's last snapshot is recent but a few blocks old: its head is 7, and `ahead`
  // stands at 10, within the 3 blocks (observed_head_max_ahead_blocks) an answer may add.
  await monitorStore.writeQuorum("devnet", {
    head: 7,
    headTimestamp: 0,
    members: ["ahead", "lagging"],
    excluded: {},
    heads: {},
    computedAt: NOW,
  });
  await monitorStore.writeQuorum("claimed", {
    head: 10,
    headTimestamp: 0,
    members: ["liar", "honest"],
    excluded: {},
    heads: { liar: { number: 10, timestamp: 0 }, honest: { number: 10, timestamp: 0 } },
    computedAt: NOW,
  });
  await monitorStore.writeHead("claimed", {
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
  await Promise.all([ahead?.stop(), lagging?.stop()]);
});

describe("known head raised from answers", () => {
  it("a null for a block already seen elsewhere is retried, not served", async () => {
    const head = await rpc("eth_blockNumber", []);
    expect(head).toMatchObject({ provider: "ahead", body: { result: "0xa" } });
    const block = await rpc("eth_getBlockByNumber", ["0x8", false]);
    // `lagging` was asked first (priority_match) and answered null: stale, so `ahead` served it.
    expect(block.attempts).toBe("2");
    expect(block.provider).toBe("ahead");
    expect((block.body.result as { number: string }).number).toBe("0x8");
  });

  it("the lagging provider is behind, not broken: no strike; a block above every head seen is a valid null", async () => {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      providers: Array<{ name: string; strikes: number; blacklist: { reason: string } | null }>;
    };
    expect(status.providers.find((p) => p.name === "lagging")).toMatchObject({
      strikes: 0,
      blacklist: null,
    });
    const block = await rpc("eth_getBlockByNumber", ["0x64", false]);
    // Above every head: a valid null, from the first provider asked (lagging, by priority_match).
    expect(block).toMatchObject({ provider: "lagging", attempts: "1", body: { result: null } });
  });
});

describe("a head claimed far ahead", () => {
  it("regression: a claim of 30 at NOW+1 s, 16 past what the chain allowed then, raised the known head 26 s later, so the honest null for block 28 was judged behind and the liar's made-up block served; now the honest null stands", async () => {
    now = NOW + 1_000;
    const claimed = await rpc("eth_blockNumber", [], "claimed");
    expect(claimed.provider).toBe("liar");
    // Beyond the reachable head (19 is the furthest the chain can be): neither published nor
    // handed to this caller, who gets the newest block known to exist.
    expect(claimed.body.result).toBe("0xa");
    now = NOW + 27_000;
    const block = await rpc("eth_getBlockByNumber", ["0x1c", false], "claimed");
    expect(block).toMatchObject({ provider: "honest", attempts: "1", body: { result: null } });
  });
});
