import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import type { GatewayEvent } from "../../../../functions/core/status/events.ts";
import { everyoneInQuorum, gatewayHarness } from "../../../support/gateway-harness.ts";
import {
  CONTRACT,
  chainScript,
  FakeChain,
  hashOf,
  type MethodCounts,
  type Misbehaviour,
} from "../../../support/log-chain-script.ts";
import { answer } from "../../../support/scripted-upstream.ts";

/**
 * Log answers checked against their blocks' headers through the whole pipeline
 * (docs/behaviour.md §12.12): a provider whose log index leaves out the newest blocks, a bloom
 * that lies, a stale fork's logs, and a provider whose head steps back behind a load balancer.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const HEAD = 100;

const hex = (n: number) => `0x${n.toString(16)}`;

function setup(
  misbehaviour: Misbehaviour,
  options: {
    readonly chain?: FakeChain;
    readonly honest?: Misbehaviour;
    readonly network?: Record<string, unknown>;
    /** Each provider's log range: a query over more is cut into pieces. */
    readonly maxLogsRange?: number;
  } = {},
) {
  const events: GatewayEvent[] = [];
  const metrics: Array<{ name: string; dimensions: Record<string, string> }> = [];
  const cap = options.maxLogsRange === undefined ? {} : { max_logs_range: options.maxLogsRange };
  const providers = [
    { name: "p1", url: P1, priority: 2, ...cap },
    { name: "p2", url: P2, priority: 1, ...cap },
  ];
  const h = gatewayHarness({
    providers,
    network: { block_time_seconds: 1, ...(options.network as object) },
    now: NOW,
    deps: {
      events: { record: (event) => events.push(event) },
      telemetry: {
        log: () => undefined,
        count: (name, dimensions) => metrics.push({ name, dimensions }),
        measure: () => undefined,
      },
    },
  });
  const chain = options.chain ?? new FakeChain(HEAD);
  const seen = { p1: new Map() as MethodCounts, p2: new Map() as MethodCounts };
  h.upstream.script(P1, chainScript(chain, misbehaviour, seen.p1));
  h.upstream.script(P2, chainScript(chain, options.honest ?? {}, seen.p2));
  everyoneInQuorum(h.store, providers, { head: HEAD, timestamp: NOW / 1000, computedAt: NOW });
  const position = { number: HEAD, hash: hashOf(HEAD) };
  const head: ChainHead = {
    latest: position,
    safe: { number: HEAD - 32, hash: hashOf(HEAD - 32) },
    finalized: { number: HEAD - 64, hash: hashOf(HEAD - 64) },
    served: null,
    previousServed: null,
    updatedAt: NOW,
    reorgSeenAt: 0,
  };
  h.store.setHead("net", head);
  return { ...h, events, metrics, seen, chain };
}

const getLogs = (id: number, from: number, to: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "eth_getLogs",
    params: [{ address: CONTRACT, fromBlock: hex(from), toBlock: hex(to) }],
  });

const byHash = (id: number, block: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "eth_getLogs",
    params: [{ address: CONTRACT, blockHash: hashOf(block) }],
  });

const blocksOf = (body: string) =>
  ((JSON.parse(body) as { result: Array<{ blockNumber: string }> }).result ?? []).map((log) =>
    Number(log.blockNumber),
  );
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, index) => from + index);

describe("a provider whose log index leaves out the newest blocks (an empty list for blocks that hold logs)", () => {
  it("regression: its short answer was the caller's; now the blooms show the blocks it left out, its answer is dropped, and the next provider's is the answer", async () => {
    const h = setup({ logsMissingFrom: () => 98 });
    const response = await h.rpc(getLogs(1, 95, HEAD));
    expect(response.status).toBe(200);
    expect(blocksOf(response.body)).toEqual(range(95, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    // p1's batch (the logs and six headers), p2's receipts of block 100, p2's batch.
    expect(response.headers["x-gateway-attempts"]).toBe("3");
    expect(h.seen.p1.get("eth_getBlockByNumber")).toBe(6);
    expect(h.seen.p2.get("eth_getBlockReceipts")).toBe(1);
    // Missing data is "behind": no strike.
    expect((await h.store.readNetwork("net")).providers.get("p1")?.strikes ?? 0).toBe(0);
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")).toMatchObject({
      missing_data: 1,
      reach_failures: 0,
    });
    expect(h.metrics).toContainEqual({
      name: "logs_answers_dropped",
      dimensions: { network: "net", provider: "p1", reason: "missing_data" },
    });
    expect(h.events).toEqual([
      expect.objectContaining({
        provider: "p1",
        kind: "logs_missing_data",
        reason: "missing_data",
        detail: expect.stringContaining("no log of block 0x64"),
      }),
    ]);
  });

  it("its dropped answer is never cached, and the event is recorded once per provider in a few minutes, not once per answer", async () => {
    const h = setup({ logsMissingFrom: () => 98 });
    await h.rpc(getLogs(1, 95, HEAD));
    // Another range, so the cache (which holds p2's whole answer) does not answer it.
    const again = await h.rpc(getLogs(2, 96, HEAD));
    expect(blocksOf(again.body)).toEqual(range(96, HEAD));
    expect(h.seen.p1.get("eth_getLogs")).toBe(2);
    expect(h.events).toHaveLength(1);
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.missing_data).toBe(2);
  });

  it("when every provider leaves the blocks out, the caller gets a retryable -32603 naming why, never the short list", async () => {
    const h = setup({ logsMissingFrom: () => 98 }, { honest: { logsMissingFrom: () => 99 } });
    const response = await h.rpc(getLogs(1, 95, HEAD));
    expect(response.status).toBe(502);
    const error = (JSON.parse(response.body) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32603);
    expect(error.message).toBe(
      "all providers failed for eth_getLogs; last error: blocks 0x5f-0x64 of 0x5f-0x64 were not served (p2: its answer has no log of block 0x64, whose logsBloom and receipts hold the filter's logs: it is missing data); no logs of the range are returned",
    );
  });

  it("a member of a batch: dropped alone, the other calls and the ids kept", async () => {
    const h = setup({ logsMissingFrom: () => 99 });
    const response = await h.rpc(`[${getLogs(7, 97, HEAD)},${getLogs(8, 40, 50)}]`);
    const answers = JSON.parse(response.body) as Array<{ id: number }>;
    expect(answers.map((answer) => answer.id)).toEqual([7, 8]);
    expect(blocksOf(JSON.stringify(answers[0]))).toEqual(range(97, HEAD));
    expect(blocksOf(JSON.stringify(answers[1]))).toEqual(range(40, 50));
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.missing_data).toBe(1);
  });

  it("a piece of a query cut to the providers' log range: that piece goes to the next provider", async () => {
    const h = setup(
      { logsMissingFrom: () => 98 },
      { maxLogsRange: 8, network: { logs_concurrency: 1 } },
    );
    const response = await h.rpc(getLogs(1, 80, HEAD));
    expect(blocksOf(response.body)).toEqual(range(80, HEAD));
    // Pieces 80-87, 88-95 and 96-100: p1 served the first two; the last went to p2.
    expect(h.seen.p1.get("eth_getLogs")).toBe(3);
    expect(h.seen.p2.get("eth_getLogs")).toBe(1);
  });

  it("a blockHash filter: the block's header, asked beside the query, shows the logs left out", async () => {
    const h = setup({ logsMissingFrom: () => 98 });
    const response = await h.rpc(byHash(3, 99));
    expect(blocksOf(response.body)).toEqual([99]);
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.seen.p1.get("eth_getBlockByHash")).toBe(1);
  });

  it("regression: a provider whose receipts leave out the same logs settled its own bloom hit as a false positive, and its short answer was the caller's; now the tie-break asks another provider first", async () => {
    const h = setup({ logsMissingFrom: () => 99, receiptsAsItsLogs: true });
    const response = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(response.body)).toEqual(range(97, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.seen.p2.get("eth_getBlockReceipts")).toBe(1);
    expect(h.seen.p1.get("eth_getBlockReceipts")).toBeUndefined();
  });

  it("regression: a stale fork's logs (another block hash at the height) were believed; now dropped", async () => {
    const h = setup({ staleHash: `0x${"99".repeat(32)}` });
    const response = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(response.body)).toEqual(range(97, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.events[0]).toMatchObject({ kind: "logs_missing_data", reason: "stale_log" });
  });
});

describe("fresh blocks the chain position calls final (a chain of instant finality, or one provider claiming its head as finalized)", () => {
  const finalAtHead = (h: ReturnType<typeof setup>) =>
    h.store.setHead("net", {
      latest: { number: HEAD, hash: hashOf(HEAD) },
      safe: { number: HEAD, hash: hashOf(HEAD) },
      finalized: { number: HEAD, hash: hashOf(HEAD) },
      served: null,
      previousServed: null,
      updatedAt: NOW,
      reorgSeenAt: 0,
    });

  it("regression: a log index that leaves out the newest blocks answered [] for them and, the blocks being final, nothing was checked (the indexer scene's lost log); now a block within logs_check_window_blocks of the head is checked as near the head is", async () => {
    const h = setup({ logsMissingFrom: () => 99 });
    finalAtHead(h);
    const response = await h.rpc(getLogs(1, 99, HEAD));
    expect(blocksOf(response.body)).toEqual(range(99, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.missing_data).toBe(1);
  });

  it("regression: a backend behind, clamping, was believed for a final toBlock (its provider had once been seen there); now it must show toBlock in the same batch", async () => {
    let backend = HEAD;
    const h = setup({ head: () => backend });
    finalAtHead(h);
    backend = HEAD - 2;
    const response = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(response.body)).toEqual(range(97, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.reach_failures).toBe(1);
  });
});

describe("a bloom that says a filter may be in a block that has none of its logs (a false positive)", () => {
  const quiet = new FakeChain(HEAD, (block) => (block === 99 ? 0 : 1), new Set([99]));

  it("the block's receipts settle it: the answer is used, and the next query over that block asks no receipts again", async () => {
    const h = setup({}, { chain: quiet });
    const first = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(first.body)).toEqual([97, 98, 100]);
    expect(first.headers["x-gateway-provider"]).toBe("p1");
    // Asked of the next provider: the answer's own would vouch for itself.
    expect(h.seen.p2.get("eth_getBlockReceipts")).toBe(1);
    await h.rpc(getLogs(2, 98, 99));
    expect(h.seen.p2.get("eth_getBlockReceipts")).toBe(1);
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")).toMatchObject({
      bloom_false_positives: 2,
      missing_data: 0,
    });
  });

  it("with no receipts to be had from any provider, the answer is used: a lying bloom never makes every provider fail", async () => {
    const h = setup({ noReceipts: true }, { chain: quiet, honest: { noReceipts: true } });
    const response = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(response.body)).toEqual([97, 98, 100]);
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.bloom_unresolved).toBe(1);
  });

  it("logs_bloom off (a chain whose blooms mean something else): only the header of toBlock is asked, and no receipts", async () => {
    const h = setup({ logsMissingFrom: () => 98 }, { network: { logs_bloom: "off" } });
    const response = await h.rpc(getLogs(1, 95, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    expect(h.seen.p1.get("eth_getBlockByNumber")).toBe(1);
    expect(h.seen.p1.get("eth_getBlockReceipts")).toBeUndefined();
  });
});

describe("a provider whose head steps back (a load balancer switching to a backend a few blocks behind)", () => {
  it("regression: it showed block 61 earlier, then a backend at 58 answered a query up to 61 with the logs up to 58, and that was believed; now the header of 61 in the same batch is missing, and the next provider answers", async () => {
    const chain = new FakeChain(61);
    let backend = 61;
    const h = setup({ head: () => backend }, { chain });
    // The monitor saw p1 at 61: the highest it ever showed.
    h.store.setQuorum("net", {
      head: 61,
      headTimestamp: NOW / 1000,
      members: ["p1", "p2"],
      excluded: {},
      heads: {
        p1: { number: 61, timestamp: NOW / 1000 },
        p2: { number: 61, timestamp: NOW / 1000 },
      },
      computedAt: NOW,
    });
    h.store.setHead("net", {
      latest: { number: 61, hash: hashOf(61) },
      safe: null,
      finalized: { number: 20, hash: hashOf(20) },
      served: null,
      previousServed: null,
      updatedAt: NOW,
      reorgSeenAt: 0,
    });
    backend = 58;
    const response = await h.rpc(getLogs(1, 55, 61));
    expect(blocksOf(response.body)).toEqual(range(55, 61));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.gateway.logAttempts.checks.counts("net").get("p1")?.reach_failures).toBe(1);
  });
});

describe("what the checks never do to a provider or a caller", () => {
  it("regression: a provider that takes no batches got the query batched with its headers and answered an error for the whole; now the query goes again alone, the header on a call of its own", async () => {
    const h = setup({});
    const honest = chainScript(h.chain, {}, h.seen.p1);
    h.upstream.script(P1, (request, call) =>
      request.body.startsWith("[")
        ? answer(
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}',
          )
        : honest(request, call),
    );
    const response = await h.rpc(getLogs(1, 97, HEAD));
    expect(blocksOf(response.body)).toEqual(range(97, HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    // The refused batch, the query alone, and toBlock's header on its own call.
    expect(h.upstream.callsTo(P1)).toBe(3);
    expect(response.headers["x-gateway-attempts"]).toBe("3");
  });

  it("a caller's batch of blockHash filters with few calls left: each answered, none dropped for want of a header call", async () => {
    const h = setup({}, { network: { max_upstream_calls: 2, max_attempts: 1 } });
    const response = await h.rpc(`[${byHash(1, 97)},${byHash(2, 98)},${byHash(3, 99)}]`);
    const answers = JSON.parse(response.body) as Array<{ id: number; result?: unknown[] }>;
    expect(answers.map((one) => [one.id, one.result?.length])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });
});
