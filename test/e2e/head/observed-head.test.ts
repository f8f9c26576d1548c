import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * docs/behaviour.md §5.4 and §10: the proxy raises its known head from block numbers in
 * answers, so between two monitor ticks a null for a block it has already seen is not an
 * answer: the provider is behind, and the call goes elsewhere without a strike. Two quorum
 * members: `ahead` at block 10, `lagging` at block 5 and preferred for block lookups.
 */
let ahead: AnvilNode;
let lagging: AnvilNode;
let stack: LocalStack;
const NOW = Date.UTC(2026, 10, 29, 12);

async function rpc(method: string, params: unknown[]) {
  const response = await fetch(`${stack.url}/devnet`, {
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
  stack = await startLocalStack({
    clock: () => NOW,
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
      },
    },
  });
  // The monitor's last snapshot is recent but a few blocks old: its head is 7, and `ahead`
  // stands at 10, within the 3 blocks (observed_head_max_ahead_blocks) an answer may add.
  await new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  }).writeQuorum("devnet", {
    head: 7,
    headTimestamp: 0,
    members: ["ahead", "lagging"],
    excluded: {},
    heads: {},
    computedAt: NOW,
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
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
