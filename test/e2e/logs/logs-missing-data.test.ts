import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import {
  type LogFront,
  startLaggingIndexFront,
  startSteppingBackFront,
} from "../../support/log-fronts.ts";
import { type LyingFront, startLyingFront } from "../../support/lying-front.ts";

/**
 * A cursor indexer following the head of a real chain with an event in every block
 * (docs/behaviour.md §12.12), through three providers: the preferred one is a load balancer
 * whose backends stand 0 or 6 blocks behind in turn (the monitor always sees the first) and
 * clamp silently; the next one's log index leaves out the newest blocks (an empty list for
 * them, its blocks current); the last is honest.
 * The indexer (`eth_blockNumber`, then `eth_getLogs` from cursor + 1 to it) must see every log
 * exactly once, none missing, and see no error.
 */

const BLOCKS = 32;
const INDEX_LAG = 8;

let node: AnvilNode;
let chain: LogChain;
let laggingIndex: LogFront;
let steppingBack: LogFront;
let honest: LyingFront;
let stack: LocalStack;
const honestSeen = new Map<string, number>();

const hex = (n: number) => `0x${n.toString(16)}`;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  chain = await buildLogChain(node, { blocks: 4, every: 2 });
  laggingIndex = await startLaggingIndexFront(node.url, INDEX_LAG);
  steppingBack = await startSteppingBackFront(node.url, [0, 6]);
  honest = await startLyingFront(node.url, (call, forward) => {
    honestSeen.set(call.method, (honestSeen.get(call.method) ?? 0) + 1);
    return forward();
  });
  stack = await startLocalStack({
    monitor: true,
    config: {
      check_interval_seconds: 1,
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          // A served head a few hundred ms behind: the indexer asks for 1-3 new blocks a query.
          state_cache_ms: 250,
          providers: [
            { name: "steppingBack", url: steppingBack.url, priority: 3 },
            { name: "laggingIndex", url: laggingIndex.url, priority: 2 },
            { name: "honest", url: honest.url, priority: 1 },
          ],
        },
      },
    },
  });
  for (let wait = 0; wait < 100; wait++) {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      served_head: { served: number | null };
    };
    if (status.served_head.served !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([laggingIndex?.close(), steppingBack?.close(), honest?.close()]);
  await node?.stop();
});

async function rpc<T>(
  method: string,
  params: unknown[],
): Promise<{ body: { result?: T; error?: unknown }; attempts: number }> {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    body: (await response.json()) as { result?: T; error?: unknown },
    attempts: Number(response.headers.get("x-gateway-attempts") ?? 0),
  };
}

interface Log {
  readonly blockNumber: string;
  readonly transactionHash: string;
  readonly logIndex: string;
}

const idOf = (log: Log) => `${log.transactionHash}:${log.logIndex}`;

/** One block with two logs of the contract (anvil mines a block per transaction). */
async function emit(topic: number): Promise<void> {
  const [from] = await node.rpc<string[]>("eth_accounts");
  await node.rpc("eth_sendTransaction", [
    { from, to: chain.contract, data: `0x${topic.toString(16).padStart(64, "0")}`, gas: "0x20000" },
  ]);
}

describe("a cursor indexer near the head while providers lose logs", () => {
  it(`sees every log of ${BLOCKS} blocks exactly once, none missing, no error`, async () => {
    const start = chain.head;
    let cursor = start;
    const got: Log[] = [];
    const errors: unknown[] = [];
    const attempts: number[] = [];
    let mined = 0;
    const deadline = Date.now() + 30_000;
    while ((mined < BLOCKS || cursor < start + BLOCKS) && Date.now() < deadline) {
      if (mined < BLOCKS) await emit(mined++);
      const head = Number((await rpc<string>("eth_blockNumber", [])).body.result);
      if (head > cursor) {
        const answer = await rpc<Log[]>("eth_getLogs", [
          { address: chain.contract, fromBlock: hex(cursor + 1), toBlock: hex(head) },
        ]);
        if (answer.body.error !== undefined) {
          errors.push(answer.body.error);
        } else {
          got.push(...(answer.body.result ?? []));
          attempts.push(answer.attempts);
          cursor = head;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const expected = await node.rpc<Log[]>("eth_getLogs", [
      { address: chain.contract, fromBlock: hex(start + 1), toBlock: hex(cursor) },
    ]);
    expect(cursor).toBeGreaterThanOrEqual(start + BLOCKS);
    // An event in every block.
    expect(new Set(expected.map((log) => log.blockNumber)).size).toBe(cursor - start);
    expect(errors).toEqual([]);
    expect(got.map(idOf)).toEqual(expected.map(idOf));
    expect(new Set(got.map(idOf)).size).toBe(got.length);

    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      providers: Array<{ name: string; strikes: number; log_checks: Record<string, number> }>;
      events: Array<{ kind: string; provider: string | null }>;
    };
    const checks = Object.fromEntries(status.providers.map((p) => [p.name, p.log_checks]));
    expect(checks.laggingIndex?.missing_data).toBeGreaterThan(0);
    expect(checks.steppingBack?.reach_failures).toBeGreaterThan(0);
    expect(status.providers.every((p) => p.strikes === 0)).toBe(true);
    expect(status.events.filter((event) => event.kind === "logs_missing_data")).toEqual([
      expect.objectContaining({ provider: "laggingIndex" }),
    ]);
    console.info(
      `cursor loop: ${attempts.length} queries, upstream calls per query ${(attempts.reduce((a, b) => a + b, 0) / attempts.length).toFixed(2)}, checks ${JSON.stringify(checks)}`,
    );
  }, 40_000);
});
