import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { findFreePort } from "../../../local/child-process.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";

/**
 * A chain restarted under the same chain id (docs/behaviour.md §10.7): a devnet at block 360
 * is stopped and started again on the same port, 300 blocks lower, behind two providers, four
 * proxy containers and the monitor every 2 s. The gateway follows the new chain (its
 * `eth_blockNumber`, and no answer of the old chain kept in the cache), and says so in an
 * event and on the status route. Before that, a third provider alone shows such a chain (a
 * devnet of its own, live, 300 blocks lower) for many checks: the quorum does not follow it.
 */

const CHAIN_ID = 31337;
const OLD_HEAD = 360;
const NEW_HEAD = 60;
const CACHED_BLOCK = 0x20;
const hex = (n: number) => `0x${n.toString(16)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let port: number;
let lonePort: number;
let node: AnvilNode;
let lone: AnvilNode;
let stack: LocalStack;
const client = new GatewayClient();

async function devnet(): Promise<AnvilNode> {
  return startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1, port });
}

async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const answer = await client.send(`${stack.url}/devnet`, rpcCall(method, params));
  return (JSON.parse(answer.text) as { result?: unknown }).result;
}

async function servedBlockNumber(): Promise<number> {
  return Number.parseInt(String(await rpc("eth_blockNumber", [])), 16);
}

async function hashAt(number: number): Promise<unknown> {
  const block = (await rpc("eth_getBlockByNumber", [hex(number), false])) as { hash?: string };
  return block?.hash ?? null;
}

beforeAll(async () => {
  port = await findFreePort();
  lonePort = await findFreePort();
  node = await devnet();
  lone = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1, port: lonePort });
  await Promise.all([
    node.rpc("anvil_mine", [hex(OLD_HEAD)]),
    lone.rpc("anvil_mine", [hex(NEW_HEAD)]),
  ]);
  stack = await startLocalStack({
    containers: 4,
    monitor: true,
    config: {
      check_interval_seconds: 2,
      networks: {
        devnet: {
          chain_id: CHAIN_ID,
          block_time_seconds: 1,
          providers: [
            { name: "a", url: node.url },
            { name: "b", url: `${node.url}/` },
            { name: "lone", url: lone.url },
          ],
        },
      },
    },
  });
  for (let wait = 0; wait < 100 && (await servedBlockNumber()) < OLD_HEAD; wait++) await sleep(100);
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([node?.stop(), lone?.stop()]);
  await client.close();
});

describe("a devnet restarted 300 blocks lower under the same chain id", () => {
  it("one provider alone on a live chain 300 blocks lower moves nothing, however many checks", async () => {
    await sleep(10_000);
    const status = await client.status(stack.url, "devnet");
    expect(status.served_head.chain_reset_at).toBeNull();
    expect(await servedBlockNumber()).toBeGreaterThanOrEqual(OLD_HEAD);
    await lone.stop();
  }, 20_000);

  it("is followed within a minute: eth_blockNumber, no old answer from the cache, an event and the status", async () => {
    const oldHash = await hashAt(CACHED_BLOCK);
    // Every container keeps the old chain's block (finalized: cached as immutable).
    for (let container = 0; container < 4; container++) await hashAt(CACHED_BLOCK);
    await node.stop();
    node = await devnet();
    await node.rpc("anvil_mine", [hex(NEW_HEAD)]);
    const restartedAt = Date.now();
    let followedAfterMs: number | null = null;
    // Followed: two rounds over the four containers all answer the new chain's head.
    while (Date.now() - restartedAt < 60_000) {
      const served: number[] = [];
      for (let call = 0; call < 8; call++) served.push(await servedBlockNumber());
      const head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
      if (served.every((number) => number <= head && number >= head - 4)) {
        followedAfterMs = Date.now() - restartedAt;
        break;
      }
      await sleep(200);
    }
    expect(followedAfterMs).not.toBeNull();
    expect(followedAfterMs).toBeLessThan(60_000);
    const newHash = (
      (await node.rpc("eth_getBlockByNumber", [hex(CACHED_BLOCK), false])) as {
        hash: string;
      }
    ).hash;
    expect(newHash).not.toBe(oldHash);
    const seen: unknown[] = [];
    for (let container = 0; container < 8; container++) seen.push(await hashAt(CACHED_BLOCK));
    expect(seen).toEqual(Array(8).fill(newHash));
    const status = await client.status(stack.url, "devnet");
    expect(status.served_head.chain_reset_at).not.toBeNull();
    expect(status.events.map((event) => event.kind)).toContain("chain_reset");
    if (process.env.REPORT_FIGURES)
      console.info("chain restart followed after ms", followedAfterMs);
  }, 90_000);

  it("regression: one provider alone on a live chain far lower, while the others were down for a few checks, reset the chain position to its chain (its block at the finalized height 'broke finality', confirmed by nobody); now a reset needs a second provider while the network has one", async () => {
    const before = (await client.status(stack.url, "devnet")).served_head;
    expect(before.chain_reset_at).not.toBeNull();
    // The only one answering: a devnet of its own, live, far below the recorded head.
    lone = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1, port: lonePort });
    await node.stop();
    // More than CHAIN_RESTART_CHECKS (3) checks of 2 s with only the lone provider answering.
    await sleep(10_000);
    const after = (await client.status(stack.url, "devnet")).served_head;
    expect(after.chain_reset_at).toBe(before.chain_reset_at);
    expect(after.latest).toBeGreaterThanOrEqual(before.latest ?? 0);
  }, 30_000);
});
