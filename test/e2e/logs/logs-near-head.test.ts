import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import {
  type FrontAnswer,
  type LyingFront,
  startClampingFront,
  startLyingFront,
} from "../../support/lying-front.ts";

/**
 * An indexer's eth_getLogs near the head (docs/behaviour.md §12.9, §12.10), on a real node
 * with logs in most blocks, behind two providers: `lagging`, preferred, which stands BEHIND
 * blocks back and answers a `toBlock` above its head with the logs up to its head and no error
 * (as anvil and older reth do), and answers the check (`eth_getBlockByNumber(toBlock)`) as each
 * test makes it (null by default: it has no such block); `upToDate` is honest. The monitor's
 * snapshot (written by hand, clock fixed, 10 s old) saw both at the lagging one's head, so
 * routing takes both to have reached the blocks asked. The indexer must get exactly the
 * node's logs of the range, never the lagging provider's short list; then the check is
 * attacked (answered badly, hostile `toBlock`s, batches, pieces, a hang). Fixed bugs are
 * "regression: …".
 */

const NOW = Date.UTC(2026, 11, 1, 5);
const BLOCKS = 40;
const BEHIND = 4;
const TIMEOUT_MS = 700;

let now = NOW;
let node: AnvilNode;
let chain: LogChain;
let laggingHead: number;
let lagging: LyingFront;
let upToDate: LyingFront;
let stack: LocalStack;
/** How the lagging provider answers a check of a block above its head. */
let check: (
  asked: number,
  forward: () => Promise<FrontAnswer>,
) => Promise<FrontAnswer> | FrontAnswer = () => ({ result: null });
const calls = { lagging: new Map<string, number>(), upToDate: new Map<string, number>() };

const hex = (n: number) => `0x${n.toString(16)}`;
const count = (seen: Map<string, number>, method: string) =>
  seen.set(method, (seen.get(method) ?? 0) + 1);
const sum = (seen: Map<string, number>) => [...seen.values()].reduce((a, b) => a + b, 0);
const reset = () => {
  calls.lagging.clear();
  calls.upToDate.clear();
};

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  chain = await buildLogChain(node, { blocks: BLOCKS, every: 2 });
  laggingHead = chain.head - BEHIND;
  lagging = await startClampingFront(node.url, () => laggingHead, {
    seen: calls.lagging,
    aboveHead: (asked, forward) => check(asked, forward),
  });
  upToDate = await startLyingFront(node.url, (call, forward) => {
    count(calls.upToDate, call.method);
    return forward();
  });
  stack = await startLocalStack({
    clock: () => now,
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          request_timeout_ms: TIMEOUT_MS,
          providers: [
            { name: "lagging", url: lagging.url, priority: 2 },
            { name: "upToDate", url: upToDate.url, priority: 1 },
          ],
        },
        split: {
          chain_id: 31337,
          block_time_seconds: 1,
          request_timeout_ms: TIMEOUT_MS,
          max_upstream_calls: 12,
          providers: [
            { name: "lagging", url: lagging.url, priority: 2, max_logs_range: 10 },
            { name: "upToDate", url: upToDate.url, priority: 1, max_logs_range: 10 },
          ],
        },
      },
    },
  });
  await freshSnapshot();
}, 60_000);

/**
 * A new monitor snapshot, 10 s old, both members at the lagging provider's head: heads seen
 * before it (earlier checks) no longer count, so each attack starts from the same knowledge.
 */
async function freshSnapshot(): Promise<void> {
  now += 60_000;
  const monitorStore = new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  });
  const at = (number: number) => ({ number, timestamp: (now - 10_000) / 1000 });
  await monitorStore.writeQuorum("devnet", {
    head: laggingHead,
    headTimestamp: (now - 10_000) / 1000,
    members: ["lagging", "upToDate"],
    excluded: {},
    heads: { lagging: at(laggingHead), upToDate: at(laggingHead) },
    computedAt: now - 10_000,
  });
  // On `split` the monitor saw the chain's head, and the lagging provider at its own.
  await monitorStore.writeQuorum("split", {
    head: chain.head,
    headTimestamp: (now - 10_000) / 1000,
    members: ["lagging", "upToDate"],
    excluded: {},
    heads: { lagging: at(laggingHead), upToDate: at(chain.head) },
    computedAt: now - 10_000,
  });
}

afterAll(async () => {
  await stack?.close();
  await Promise.all([lagging?.close(), upToDate?.close()]);
  await node?.stop();
});

async function rpc(body: unknown, network = "devnet") {
  const started = performance.now();
  const response = await fetch(`${stack.url}/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    // biome-ignore lint/suspicious/noExplicitAny: answers of every shape are inspected
    body: JSON.parse(text) as any,
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
    ms: performance.now() - started,
  };
}
const getLogs = (filter: Record<string, unknown>, id: unknown = 7) =>
  rpc({ jsonrpc: "2.0", id, method: "eth_getLogs", params: [filter] });
const nodeLogs = (from: number, to: number) =>
  node.rpc<unknown[]>("eth_getLogs", [{ fromBlock: hex(from), toBlock: hex(to) }]);

const block = (n: number) =>
  node.rpc<Record<string, unknown>>("eth_getBlockByNumber", [hex(n), false]);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

describe("an indexer's eth_getLogs up to the head, with the preferred provider behind", () => {
  it("regression: the lagging provider's logs up to its own head were the answer for the whole range; now the indexer gets exactly the node's logs", async () => {
    const from = chain.head - 10;
    const expected = await nodeLogs(from, chain.head);
    // The blocks the lagging provider has not reached hold logs: a short list would show.
    expect(expected.length).toBeGreaterThan((await nodeLogs(from, chain.head - BEHIND)).length);
    const answer = await getLogs({ fromBlock: hex(from), toBlock: hex(chain.head) });
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
    const again = await getLogs({ fromBlock: hex(chain.head - 3), toBlock: hex(chain.head) });
    expect(again.body.result).toEqual(await nodeLogs(chain.head - 3, chain.head));
    // The lagging provider's batch, dropped, then the other's: two upstream calls, not four.
    expect(again.attempts).toBe("2");
    expect(again.provider).toBe("upToDate");
    expect(calls.upToDate.get("eth_getLogs")).toBe(logsBefore + 1);

    const under = await getLogs({ fromBlock: hex(0), toBlock: hex(chain.head - BEHIND) });
    expect(under.provider).toBe("lagging");
    expect(under.attempts).toBe("1");
    expect(under.body.result).toEqual(await nodeLogs(0, chain.head - BEHIND));
  });
});

describe("the check answered badly by a provider that clamps", () => {
  const modes: Record<string, typeof check> = {
    null: () => ({ result: null }),
    "another block": async () => ({ result: await block(laggingHead) }),
    "garbage number": async (asked) => ({
      result: { ...(await block(laggingHead)), number: `${hex(asked)}zz` },
    }),
    "number as a JSON number": (asked) => ({ result: { number: asked } }),
    "its number but no hash": (asked) => ({ result: { number: hex(asked) } }),
    "an error": () => ({ error: { code: -32000, message: "boom" } }),
  };
  for (const [name, mode] of Object.entries(modes)) {
    it(`holds: a check answered with ${name} drops the short list; the caller gets the node's logs`, async () => {
      check = mode;
      await freshSnapshot();
      reset();
      const from = chain.head - 10;
      const answer = await getLogs({ fromBlock: hex(from), toBlock: hex(chain.head) });
      expect(answer.body.result).toEqual(await nodeLogs(from, chain.head));
      expect(answer.provider).toBe("upToDate");
      expect(calls.lagging.get("eth_getLogs")).toBe(1);
      // The headers of the range's 8 newest blocks, in the query's own batch.
      expect(calls.lagging.get("eth_getBlockByNumber")).toBe(8);
    });
  }

  it("limit: a provider that shows the block to the check but clamps its logs is believed (no second opinion)", async () => {
    check = (asked) => ({ result: { number: hex(asked), hash: `0x${"cd".repeat(32)}` } });
    await freshSnapshot();
    const from = chain.head - 10;
    const answer = await getLogs({ fromBlock: hex(from), toBlock: hex(chain.head) });
    expect(answer.provider).toBe("lagging");
    expect(answer.body.result).toEqual(await nodeLogs(from, laggingHead));
    check = () => ({ result: null });
  });
});

describe("a hostile caller's toBlock", () => {
  it("regression: a toBlock past 2^53 (0xffffffffffffffff) was no log query the gateway checked, and a clamping provider's logs up to its head came back; now -32602", async () => {
    await freshSnapshot();
    for (const toBlock of ["0xffffffffffffffff", `0x${"0".repeat(17)}${chain.head.toString(16)}`]) {
      reset();
      const answer = await getLogs({ fromBlock: hex(chain.head - 10), toBlock });
      expect(answer.body.id).toBe(7);
      expect(answer.body.error.code).toBe(-32602);
      expect(answer.body.error.message).toContain("is not a block number this gateway serves");
      expect(sum(calls.lagging) + sum(calls.upToDate)).toBe(0);
    }
  });

  it("holds: a toBlock far above the head gets -32602 naming the head after one batch per provider", async () => {
    await freshSnapshot();
    reset();
    const answer = await getLogs({
      fromBlock: hex(chain.head - 10),
      toBlock: hex(chain.head + 1000),
    });
    expect(answer.body.error).toMatchObject({ code: -32602 });
    expect(answer.body.error.message).toContain(`(${hex(laggingHead)})`);
    // Each provider: the query and the headers of its 8 newest blocks, one batch.
    expect(sum(calls.lagging) + sum(calls.upToDate)).toBe(18);
  });

  it("holds: leading zeros and an empty result are checked like any toBlock", async () => {
    await freshSnapshot();
    const from = chain.head - 10;
    const zeros = await getLogs({
      fromBlock: hex(from),
      toBlock: `0x000${chain.head.toString(16)}`,
    });
    expect(zeros.body.result).toEqual(await nodeLogs(from, chain.head));
    const empty = await getLogs({
      fromBlock: hex(from),
      toBlock: hex(chain.head),
      address: "0x000000000000000000000000000000000000dead",
    });
    expect(empty.provider).toBe("upToDate");
    expect(empty.body.result).toEqual([]);
  });
});

describe("many near-head queries in one request", () => {
  const query = (i: number) => ({
    fromBlock: hex(chain.head - 1 - (i % 5)),
    toBlock: hex(chain.head - (i % 3)),
  });

  it("regression: each query of a batch went to the lagging provider first and was dropped, spending max_upstream_calls until most failed; now it is skipped once found without the block", async () => {
    await freshSnapshot();
    reset();
    const batch = Array.from({ length: 30 }, (_, i) => ({
      jsonrpc: "2.0",
      id: `q${i}`,
      method: "eth_getLogs",
      params: [query(i)],
    }));
    const answer = await rpc(batch);
    expect(answer.body.map((member: { id: string }) => member.id)).toEqual(
      batch.map((call) => call.id),
    );
    for (const [i, member] of (answer.body as Array<{ result?: unknown }>).entries()) {
      const { fromBlock, toBlock } = query(i);
      expect(same(member.result, await nodeLogs(Number(fromBlock), Number(toBlock)))).toBe(true);
    }
    // Not one log query per batch member: found without a block, the lagging provider is
    // skipped by the later queries up to it.
    expect(calls.lagging.get("eth_getLogs") ?? 0).toBeLessThanOrEqual(6);
  });

  it("regression: a batch member left without calls was told it needed '1 upstream calls … over max_upstream_calls (50)'; now it is told the batch spent them; nothing partial", async () => {
    await freshSnapshot();
    reset();
    const batch = Array.from({ length: 50 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "eth_getLogs",
      params: [query(i)],
    }));
    const answer = await rpc(batch);
    const members = answer.body as Array<{
      id: number;
      result?: unknown;
      error?: { message: string };
    }>;
    expect(members.map((member) => member.id)).toEqual(batch.map((call) => call.id));
    const refused = members.filter((member) => member.error !== undefined);
    expect(refused.length).toBeGreaterThan(0);
    for (const member of refused)
      expect(member.error?.message).toContain("send fewer calls per batch");
    for (const member of members.filter((m) => m.error === undefined)) {
      const { fromBlock, toBlock } = query(member.id);
      expect(same(member.result, await nodeLogs(Number(fromBlock), Number(toBlock)))).toBe(true);
    }
  });

  it("regression: after a monitor tick a provider shown again at the block it was seen at before paid a check call on every query; now the check rides in each query's batch", async () => {
    await freshSnapshot();
    await getLogs({ fromBlock: hex(chain.head - 2), toBlock: hex(chain.head) });
    await freshSnapshot();
    reset();
    for (let i = 0; i < 3; i++) {
      const answer = await getLogs({ fromBlock: hex(chain.head - 2), toBlock: hex(chain.head) });
      // The lagging provider's batch, dropped, then the other's: no call of a check's own.
      expect(answer.attempts).toBe("2");
    }
    // Three headers (the range's blocks) beside each of the three queries.
    expect(calls.upToDate.get("eth_getBlockByNumber")).toBe(9);
  });
});

describe("a query cut into pieces, only the last near the head", () => {
  it("regression: with max_upstream_calls 12 the pieces in flight reserved every call (two checks' worth each) and the third piece failed after 2 calls; now it waits and the caller gets the node's logs", async () => {
    await freshSnapshot();
    reset();
    const from = chain.head - 35;
    const answer = await rpc(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [{ fromBlock: hex(from), toBlock: hex(chain.head) }],
      },
      "split",
    );
    expect(answer.body.result).toEqual(await nodeLogs(from, chain.head));
    expect(Number(answer.attempts)).toBeLessThanOrEqual(12);
    // The pieces under its head stay with the preferred provider.
    expect(calls.lagging.get("eth_getLogs") ?? 0).toBeGreaterThanOrEqual(3);
  });
});

describe("a check that hangs (last: it costs the provider a timeout strike)", () => {
  it("holds: a header that never comes holds up the whole batch, which times out; the caller gets the node's logs from the next provider", async () => {
    check = async () => {
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 2));
      return { result: null };
    };
    await freshSnapshot();
    reset();
    const from = chain.head - 10;
    const answer = await getLogs({ fromBlock: hex(from), toBlock: hex(chain.head) });
    expect(answer.body.result).toEqual(await nodeLogs(from, chain.head));
    expect(answer.provider).toBe("upToDate");
    expect(calls.lagging.get("eth_getLogs")).toBe(1);
    check = () => ({ result: null });
  });
});
