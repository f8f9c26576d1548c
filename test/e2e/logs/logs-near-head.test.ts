import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { type LyingFront, startClampingFront, startLyingFront } from "../../support/lying-front.ts";

/**
 * An indexer's eth_getLogs near the head, on a real node with logs in most blocks, behind two
 * providers: `lagging`, preferred, which stands a few blocks back and answers a `toBlock`
 * above its head with the logs up to its head and no error (as anvil and older reth do), and
 * `upToDate`. The monitor saw both at the lagging one's head a while ago, so routing takes
 * both to have reached the blocks asked. The indexer must get exactly the node's logs of
 * the range, never the lagging provider's short list.
 */

const NOW = Date.UTC(2026, 10, 30, 12);
const BLOCKS = 40;
const BEHIND = 4;

let node: AnvilNode;
let chain: LogChain;
let lagging: LyingFront;
let upToDate: LyingFront;
let stack: LocalStack;
/** Calls each front received, by method. */
const calls = { lagging: new Map<string, number>(), upToDate: new Map<string, number>() };

const hex = (n: number) => `0x${n.toString(16)}`;
const count = (seen: Map<string, number>, method: string) =>
  seen.set(method, (seen.get(method) ?? 0) + 1);

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  chain = await buildLogChain(node, { blocks: BLOCKS, every: 2 });
  const laggingHead = chain.head - BEHIND;
  lagging = await startClampingFront(node.url, () => laggingHead, { seen: calls.lagging });
  upToDate = await startLyingFront(node.url, (call, forward) => {
    count(calls.upToDate, call.method);
    return forward();
  });
  stack = await startLocalStack({
    clock: () => NOW,
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          providers: [
            { name: "lagging", url: lagging.url, priority: 2 },
            { name: "upToDate", url: upToDate.url, priority: 1 },
          ],
        },
      },
    },
  });
  // The monitor's snapshot, 10 s old: both members at the lagging provider's head, so routing
  // takes both to be 10 blocks further by now.
  await new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  }).writeQuorum("devnet", {
    head: laggingHead,
    headTimestamp: (NOW - 10_000) / 1000,
    members: ["lagging", "upToDate"],
    excluded: {},
    heads: {
      lagging: { number: laggingHead, timestamp: (NOW - 10_000) / 1000 },
      upToDate: { number: laggingHead, timestamp: (NOW - 10_000) / 1000 },
    },
    computedAt: NOW - 10_000,
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([lagging?.close(), upToDate?.close()]);
  await node?.stop();
});

async function getLogs(from: number, to: number) {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "eth_getLogs",
      params: [{ fromBlock: hex(from), toBlock: hex(to) }],
    }),
  });
  return {
    body: (await response.json()) as { id: number; result?: unknown[]; error?: unknown },
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
  };
}

const nodeLogs = (from: number, to: number) =>
  node.rpc<unknown[]>("eth_getLogs", [{ fromBlock: hex(from), toBlock: hex(to) }]);

describe("an indexer's eth_getLogs up to the head, with the preferred provider behind", () => {
  it("regression: the lagging provider's logs up to its own head were the answer for the whole range; now the indexer gets exactly the node's logs", async () => {
    const from = chain.head - 10;
    const expected = await nodeLogs(from, chain.head);
    // The blocks the lagging provider has not reached hold logs: a short list would show.
    expect(expected.length).toBeGreaterThan((await nodeLogs(from, chain.head - BEHIND)).length);
    const answer = await getLogs(from, chain.head);
    expect(answer.body.id).toBe(7);
    expect(answer.body.result).toEqual(expected);
    expect(answer.provider).toBe("upToDate");
    // One batch to each: the logs with the headers of the range's newest blocks (at most
    // logs_check_headers, 8): the lagging one's has no block past its head.
    expect(answer.attempts).toBe("2");
    expect(calls.lagging.get("eth_getLogs")).toBe(1);
    expect(calls.lagging.get("eth_getBlockByNumber")).toBe(8);
  });

  it("the lagging provider is behind, not broken: no strike, no blacklist", async () => {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      providers: Array<{ name: string; strikes: number; blacklist: unknown }>;
    };
    expect(status.providers.find((p) => p.name === "lagging")).toMatchObject({
      strikes: 0,
      blacklist: null,
    });
  });

  it("near the head every answer brings its headers in its own batch, never a call of their own; a range up to the lagging provider's head is its to answer", async () => {
    const logsBefore = calls.upToDate.get("eth_getLogs") ?? 0;
    const again = await getLogs(chain.head - 3, chain.head);
    expect(again.body.result).toEqual(await nodeLogs(chain.head - 3, chain.head));
    // The lagging provider's batch, dropped, then the other's: two upstream calls, not four.
    expect(again.attempts).toBe("2");
    expect(again.provider).toBe("upToDate");
    expect(calls.upToDate.get("eth_getLogs")).toBe(logsBefore + 1);

    const under = await getLogs(0, chain.head - BEHIND);
    expect(under.provider).toBe("lagging");
    expect(under.attempts).toBe("1");
    expect(under.body.result).toEqual(await nodeLogs(0, chain.head - BEHIND));
  });
});
