import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../functions/core/config/network-model.ts";
import { findFreePort } from "../../../local/child-process.ts";
import { devnetFor } from "../../../local/devnet.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { statusReader } from "../../support/status-after-tick.ts";

/**
 * `npm start`'s devnet is one chain: config/local.json as shipped (its ports moved to free
 * ones, so tests never collide with a running `npm start`), one anvil behind a front per
 * provider, the monitor ticking with every safety feature on, the fork check included.
 */

const ROOT = join(import.meta.dirname, "..", "..", "..");
const shipped = JSON.parse(readFileSync(join(ROOT, "config", "local.json"), "utf8")) as {
  networks: Record<string, { providers: Array<{ url: string }>; quorum?: unknown }>;
};

describe("devnetFor: the chains a config points at on this machine", () => {
  it.each<[string, unknown, unknown]>([
    [
      "config/local.json",
      shipped,
      [{ chainId: 31337, blockTimeSeconds: 1, fronts: [8546, 8547, 8548] }],
    ],
    [
      "remote and https providers left out",
      {
        networks: {
          a: {
            chain_id: 1,
            providers: [
              { url: "https://eth.example.com" },
              { url: "https://127.0.0.1:9000" },
              { url: "http://localhost:9001" },
            ],
          },
        },
      },
      [{ chainId: 1, blockTimeSeconds: 1, fronts: [9001] }],
    ],
    [
      "one chain per network; a port named twice is fronted once",
      {
        networks: {
          a: {
            chain_id: 1,
            block_time_seconds: 2,
            providers: [{ url: "http://127.0.0.1:9100" }, { url: "http://127.0.0.1:9100/x" }],
          },
          b: {
            chain_id: 2,
            providers: [{ url: "http://127.0.0.1:9100" }, { url: "http://127.0.0.1:9101" }],
          },
        },
      },
      [
        { chainId: 1, blockTimeSeconds: 2, fronts: [9100] },
        { chainId: 2, blockTimeSeconds: 1, fronts: [9101] },
      ],
    ],
    [
      "no local provider",
      { networks: { a: { chain_id: 1, providers: [{ url: "https://x.io" }] } } },
      [],
    ],
    ["not a config", "nonsense", []],
    ["null", null, []],
  ])("%s", (_name, config, chains) => {
    expect(devnetFor(config)).toEqual(chains);
  });

  it("config/local.json turns no safety feature off", () => {
    const parsed = parseConfig(shipped);
    expect(parsed.ok).toBe(true);
    for (const network of Object.values(shipped.networks)) expect(network.quorum).toBeUndefined();
  });
});

describe("npm start's devnet", () => {
  let stack: LocalStack;

  beforeAll(async () => {
    // config/local.json with each provider moved to a free port.
    const config = structuredClone(shipped);
    for (const network of Object.values(config.networks)) {
      for (const provider of network.providers) {
        provider.url = `http://127.0.0.1:${await findFreePort()}`;
      }
    }
    stack = await startLocalStack({
      config: config as never,
      devnet: devnetFor(config),
      // The monitor on its timer, as npm start runs it.
      monitor: true,
      writeMetrics: () => undefined,
    });
  }, 60_000);
  afterAll(() => stack?.close());

  const rpc = async (port: number, method: string, params: unknown[] = []) => {
    const response = await fetch(`http://127.0.0.1:${port}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return ((await response.json()) as { result: unknown }).result;
  };

  it("is one anvil behind three fronts: a transaction sent to one is in the blocks of all", async () => {
    const [chain] = stack.devnet?.chains ?? [];
    const ports = chain?.fronts.map((front) => front.port) ?? [];
    expect(stack.devnet?.chains).toHaveLength(1);
    expect(ports).toHaveLength(3);
    const [from] = (await rpc(ports[0] as number, "eth_accounts")) as string[];
    const hash = await rpc(ports[0] as number, "eth_sendTransaction", [
      { from, to: from, value: "0x1" },
    ]);
    // Mined past anvil's finalized lag (64), so the monitor's fork check compares a block
    // holding that transaction.
    await rpc(ports[1] as number, "anvil_mine", ["0x50"]);
    const receipts = await Promise.all(
      ports.map((port) => rpc(port, "eth_getTransactionReceipt", [hash])),
    );
    const blocks = await Promise.all(
      ports.map((port) => rpc(port, "eth_getBlockByNumber", ["0x5", false])),
    );
    expect(new Set(receipts.map((receipt) => JSON.stringify(receipt))).size).toBe(1);
    expect(new Set(blocks.map((block) => (block as { hash: string }).hash)).size).toBe(1);
  });

  it("with the fork check on, every provider stays in quorum through the monitor's ticks", async () => {
    const { statusAfter } = statusReader<{
      monitor: { last_tick_at: string | null };
      providers: Array<{ name: string; in_quorum: boolean; quorum_reason: string | null }>;
      served_head: { finalized: number | null };
    }>(stack.url, "devnet");
    const { model } = await stack.runtime.current();
    expect(model.networks.get("devnet")?.settings.quorum.fork_check).toBe(true);
    await stack.monitor?.monitor.tick();
    const first = await statusAfter(null);
    await stack.monitor?.monitor.tick();
    const second = await statusAfter(first.monitor.last_tick_at);
    expect(second.served_head.finalized).toBeGreaterThan(0);
    expect(second.providers.map((p) => [p.name, p.in_quorum, p.quorum_reason])).toEqual([
      ["anvil-a", true, null],
      ["anvil-b", true, null],
      ["anvil-backup", true, null],
    ]);
  });
});
