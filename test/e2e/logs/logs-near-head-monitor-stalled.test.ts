import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import type { LocalStack } from "../../../local/stack.ts";
import { type FrontAnswer, type LyingFront, startLyingFront } from "../../support/lying-front.ts";
import {
  type MultiContainerStack,
  multiContainerStack,
} from "../../support/multi-container-stack.ts";

/**
 * The near-head eth_getLogs check while the monitor is stalled (docs/behaviour.md §12.9,
 * §12.10; its attacks' fixes are "regression: …"): the monitor's last snapshot
 * (written by hand, clock fixed) is ten minutes old and saw the chain STALE_BY blocks back.
 * `lone` is the network's only provider (anvil behind a front that counts each method and
 * answers the check as each test makes it); four proxy containers.
 */

const NOW = Date.UTC(2026, 11, 1, 6);
const BLOCKS = 40;
const STALE_BY = 5;
const STALLED_MS = 10 * 60_000;

const now = NOW;
let node: AnvilNode;
let chain: LogChain;
let lone: LyingFront;
let scene: MultiContainerStack;
let stack: LocalStack;
const seen = new Map<string, number>();
/** How the front answers eth_getBlockByNumber (the check); by default, as the node does. */
let check: (forward: () => Promise<FrontAnswer>) => Promise<FrontAnswer> | FrontAnswer = (
  forward,
) => forward();

const hex = (n: number) => `0x${n.toString(16)}`;

beforeAll(async () => {
  scene = await multiContainerStack({
    containers: 4,
    monitor: false,
    // The default check interval, as the stalled monitor had it.
    config: { check_interval_seconds: 15 },
    stack: { clock: () => now },
    providers: async (anvil) => {
      node = anvil;
      chain = await buildLogChain(node, { blocks: BLOCKS, every: 2 });
      lone = await startLyingFront(node.url, (call, forward) => {
        seen.set(call.method, (seen.get(call.method) ?? 0) + 1);
        return call.method === "eth_getBlockByNumber" ? check(forward) : forward();
      });
      return [{ name: "lone", url: lone.url }];
    },
    networks: () => ({
      cut: {
        chain_id: 31337,
        block_time_seconds: 1,
        providers: [{ name: "lone", url: lone.url, max_logs_range: 10 }],
      },
    }),
  });
  ({ stack } = scene);
  const { monitorStore } = scene;
  const head = chain.head - STALE_BY;
  const at = { number: head, timestamp: (now - STALLED_MS) / 1000 };
  for (const network of ["devnet", "cut"]) {
    await monitorStore.writeQuorum(network, {
      head,
      headTimestamp: at.timestamp,
      members: ["lone"],
      excluded: {},
      heads: { lone: at },
      computedAt: now - STALLED_MS,
    });
  }
}, 60_000);

afterAll(async () => {
  await scene?.close();
  await lone?.close();
});

async function getLogs(from: number, to: number, id = 1, network = "devnet") {
  const response = await fetch(`${stack.url}/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "eth_getLogs",
      params: [{ fromBlock: hex(from), toBlock: hex(to) }],
    }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: answers of every shape are inspected
  return { status: response.status, body: (await response.json()) as any };
}

describe("the log check with the monitor stalled", () => {
  it("regression: an indexer asking near the head paid a check call on every query while the monitor was stalled; now the check rides in each query's batch", async () => {
    seen.clear();
    const queries = 12;
    const expected = await node.rpc<unknown[]>("eth_getLogs", [
      { fromBlock: hex(chain.head - 3), toBlock: hex(chain.head) },
    ]);
    for (let id = 1; id <= queries; id++) {
      const answer = await getLogs(chain.head - 3, chain.head, id);
      expect(answer.body.result).toEqual(expected);
    }
    expect(seen.get("eth_getLogs")).toBe(queries);
    // The four blocks' headers beside each query, in its batch: no call of their own.
    expect(seen.get("eth_getBlockByNumber")).toBe(4 * queries);
  });

  it("a cut range 400 blocks past the head, within the 600 blocks a snapshot ten minutes old allows: a handful of calls, then a clear error", async () => {
    seen.clear();
    const answer = await getLogs(chain.head - 25, chain.head + 400, 1, "cut");
    const calls = [...seen.values()].reduce((a, b) => a + b, 0);
    expect(answer.body.result).toBeUndefined();
    // The first piece to fail ends the query: one wholly past the head (the node's -32602) or
    // the one across it, whose provider did not show its toBlock (502, -32603: the stalled
    // monitor's head is no reason to blame the caller). Pieces run four at a time, and since
    // the check rides in each piece's batch, either may settle first.
    expect([-32602, -32603]).toContain(answer.body.error.code);
    // The pieces stop at the first one refused: a handful of batches, each the piece and the
    // headers of its newest blocks (at most 8).
    expect(seen.get("eth_getLogs") ?? 0).toBeLessThanOrEqual(8);
    expect(calls).toBeLessThanOrEqual(8 * 9);
  });
  it("a lone provider whose check always fails: a query up to a new block gets 502 naming the missing block (the stalled monitor's head is no reason to blame the caller), after two calls, and never the logs", async () => {
    await node.rpc("evm_mine", []);
    const newest = chain.head + 1;
    check = () => ({ result: null });
    seen.clear();
    const answer = await getLogs(newest - 1, newest);
    check = (forward) => forward();
    expect(answer.status).toBe(502);
    expect(answer.body.result).toBeUndefined();
    expect(answer.body.error.code).toBe(-32603);
    expect(answer.body.error.message).toContain(`its answer came without block ${hex(newest)}`);
    // One batch: the query and the headers of its two blocks.
    expect(Object.fromEntries(seen)).toEqual({ eth_getLogs: 1, eth_getBlockByNumber: 2 });
  });
});
