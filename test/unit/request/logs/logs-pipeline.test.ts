import { describe, expect, it } from "vitest";
import type {
  LogLevel,
  Telemetry,
  Upstream,
  UpstreamRequest,
} from "../../../../functions/core/ports.ts";
import { networkStatus } from "../../../../functions/core/status/status.ts";
import {
  gatewayHarness,
  type HarnessNetwork,
  type HarnessProviders,
} from "../../../support/gateway-harness.ts";

/**
 * eth_getLogs over any range (docs/behaviour.md §12) through the whole request pipeline: fake
 * log nodes that hold logs at known blocks and refuse spans over their cap the way real
 * providers word it, the in-memory state store, and a test clock.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";

type Providers = HarnessProviders;

const hex = (n: number) => `0x${n.toString(16)}`;

/** The logs a node holds: two in every block that is a multiple of 997, one in every 1009th. */
function logsIn(from: number, to: number): string[] {
  const texts: string[] = [];
  for (let block = from; block <= to; block++) {
    const count = (block % 997 === 0 ? 2 : 0) + (block % 1009 === 0 ? 1 : 0);
    for (let index = 0; index < count; index++) {
      texts.push(
        `{"address":"0x5fbdb2315678afecb367f032d93f642f64180aa3","topics":["0x${"ab".repeat(32)}"],"data":"0x","blockNumber":"${hex(block)}","transactionHash":"0x${block.toString(16).padStart(64, "0")}","transactionIndex":"0x0","blockHash":"${blockHashOf(block)}","logIndex":"${hex(index)}","removed":false}`,
      );
    }
  }
  return texts;
}

/** The hash of a block of the fake chain. */
const blockHashOf = (block: number) => `0x${(block + 1).toString(16).padStart(64, "0")}`;

const logsAnswer = (id: unknown, texts: string[]) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":[${texts.join(",")}]}`;

interface LogNode {
  /** Spans over this are refused with `refusal`. */
  readonly cap?: number;
  readonly refusal?: (
    from: number,
    to: number,
  ) => { code: number; message: string; data?: unknown };
  /** Answers this instead, for pieces that overlap `block`. */
  readonly failAt?: number;
  /** Answers with more than the range: logs of the block before and a duplicate. */
  readonly sloppy?: boolean;
  /**
   * Its head (default: every block): a toBlock above it is clamped to it without a word, as
   * anvil and older reth do, and a block above it is null.
   */
  readonly head?: number;
  /** Answers a block lookup with another block (its genesis), whichever was asked, had or not. */
  readonly otherBlock?: boolean;
  /** Answers the check with a block that has its number but no hash. */
  readonly noHash?: boolean;
}

/** A fake upstream of log nodes by URL; counts calls and the most in flight at once. */
class LogNodes implements Upstream {
  readonly #nodes = new Map<string, LogNode>();
  readonly calls: Array<{ url: string; from: number; to: number }> = [];
  inFlight = 0;
  mostInFlight = 0;

  constructor(readonly advance: (ms: number) => void) {}

  node(url: string, node: LogNode): this {
    this.#nodes.set(url, node);
    return this;
  }

  /** The blocks the gateway asked a node for (eth_getBlockByNumber), by URL. */
  readonly blockChecks: Array<{ url: string; block: number }> = [];

  /** Batches the gateway sent (a log query with the headers its check asks beside it). */
  batches = 0;

  async send(request: UpstreamRequest) {
    const node = this.#nodes.get(request.url);
    if (node === undefined) {
      return {
        ok: false as const,
        failure: { kind: "connection" as const, message: "ECONNREFUSED" },
        elapsedMs: 1,
      };
    }
    const asked = JSON.parse(request.body) as LogCall | LogCall[];
    if (!Array.isArray(asked)) {
      return {
        ok: true as const,
        status: 200,
        body: await this.#answer(request.url, node, asked),
        elapsedMs: 5,
      };
    }
    this.batches++;
    const members = await Promise.all(asked.map((call) => this.#answer(request.url, node, call)));
    return { ok: true as const, status: 200, body: `[${members.join(",")}]`, elapsedMs: 5 };
  }

  async #answer(url: string, node: LogNode, asked: LogCall): Promise<string> {
    if (asked.method === "eth_getBlockByNumber") {
      const block = Number.parseInt(String(asked.params[0]), 16);
      this.blockChecks.push({ url, block });
      const has = block <= (node.head ?? Number.POSITIVE_INFINITY);
      const result = node.otherBlock
        ? { number: "0x0" }
        : has
          ? { number: asked.params[0], ...(node.noHash ? {} : { hash: blockHashOf(block) }) }
          : null;
      return JSON.stringify({ jsonrpc: "2.0", id: asked.id, result });
    }
    const call = asked as unknown as {
      id: unknown;
      params: [{ fromBlock: string; toBlock: string }];
    };
    const from = Number.parseInt(call.params[0].fromBlock, 16);
    const to = Number.parseInt(call.params[0].toBlock, 16);
    this.calls.push({ url, from, to });
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    await new Promise((resolve) => setTimeout(resolve, 1));
    this.inFlight--;
    this.advance(5);
    if (node.failAt !== undefined && from <= node.failAt && node.failAt <= to) {
      return JSON.stringify({
        jsonrpc: "2.0",
        id: call.id,
        error: { code: -32000, message: "leveldb: closed" },
      });
    }
    if (node.cap !== undefined && to - from + 1 > node.cap && node.refusal) {
      return JSON.stringify({ jsonrpc: "2.0", id: call.id, error: node.refusal(from, to) });
    }
    const texts = logsIn(from, Math.min(to, node.head ?? to));
    if (node.sloppy && from > 0)
      texts.unshift(...logsIn(from - 1000, from - 1), ...texts.slice(0, 1));
    return logsAnswer(call.id, texts);
  }
}

interface LogCall {
  readonly id: unknown;
  readonly method: string;
  readonly params: unknown[];
}

function recordingTelemetry(): Telemetry & { logs: Array<{ level: LogLevel; message: string }> } {
  const logs: Array<{ level: LogLevel; message: string }> = [];
  return {
    logs,
    log: (level, message) => logs.push({ level, message }),
    count: () => undefined,
    measure: () => undefined,
  };
}

function harness(providers: Providers, overrides: HarnessNetwork = {}) {
  const telemetry = recordingTelemetry();
  const { gateway, store, upstream, rpc, clock, network, model, cache } = gatewayHarness({
    providers,
    network: overrides,
    now: NOW,
    upstream: (advance) => new LogNodes(advance),
    deps: { telemetry },
  });
  return { gateway, store, upstream, rpc, clock, network, model, cache, telemetry };
}

const getLogs = (id: number, from: number | string, to: number | string, extra = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "eth_getLogs",
    params: [
      {
        address: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
        ...extra,
        fromBlock: typeof from === "number" ? hex(from) : from,
        toBlock: typeof to === "number" ? hex(to) : to,
      },
    ],
  });

/** geth-style cap refusal (BSC and many public nodes). */
const GETH_CAP = (cap: number) => () => ({
  code: -32000,
  message: `exceed maximum block range: ${cap}`,
});

describe("a query a provider in use takes whole", () => {
  it("goes upstream once and is answered with the provider's text, byte for byte, with the caller's id", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }]);
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(7, 100, 9_000));
    expect(response.status).toBe(200);
    expect(response.body).toBe(logsAnswer(7, logsIn(100, 9_000)));
    expect(h.upstream.calls).toEqual([{ url: P1, from: 100, to: 9_000 }]);
  });

  it("goes to a provider whose range covers it before one whose range is smaller", async () => {
    const h = harness([
      { name: "p1", url: P1, priority: 3, max_logs_range: 1_000 },
      { name: "p2", url: P2, priority: 1 },
    ]);
    h.upstream.node(P1, {}).node(P2, {});
    const response = await h.rpc(getLogs(1, 0, 4_999));
    expect(JSON.parse(response.body).result).toHaveLength(logsIn(0, 4_999).length);
    expect(h.upstream.calls.map((c) => c.url)).toEqual([P2]);
    expect(response.headers["x-gateway-provider"]).toBe("p2");
  });
});

/**
 * A quorum snapshot with every named provider a member seen at `head`, computed `agoMs` ago:
 * routing then takes each to have reached `head` plus the blocks made since (a block a
 * second with `FAST_BLOCKS`), which a provider that stopped has not.
 */
function quorumAt(
  head: number,
  members: readonly string[],
  agoMs = 0,
  heads: Readonly<Record<string, number>> = {},
) {
  const timestamp = (NOW - agoMs) / 1000;
  return {
    head,
    headTimestamp: timestamp,
    members,
    excluded: {},
    heads: Object.fromEntries(
      members.map((name) => [name, { number: heads[name] ?? head, timestamp }]),
    ),
    computedAt: NOW - agoMs,
  };
}

/** A block a second; blooms off: each attempt near the head asks `toBlock`'s header alone beside the query. */
const FAST_BLOCKS = { block_time_seconds: 1, logs_bloom: "off" } as const;

/** Two providers, p1 preferred. */
const P1_THEN_P2 = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];

const resultOf = (body: string) =>
  JSON.parse(body) as { result?: unknown; error?: { code: number; message: string } };

describe("a provider that clamps toBlock to its head without a word (anvil, older reth)", () => {
  it("regression: a provider a few blocks behind answered a near-head query with the logs up to its own head, and the caller got them as the whole range; now it is behind, and the next provider's logs are the answer", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    // Both seen at 7,960 twenty seconds ago: routing takes both to be at 7,980 by now, but
    // p1 stopped at 7,970, before the logs of block 7,976.
    h.store.setQuorum("net", quorumAt(7_960, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 7_970 }).node(P2, {});
    const response = await h.rpc(getLogs(1, 5_000, 7_979));
    expect(response.status).toBe(200);
    expect(response.body).toBe(logsAnswer(1, logsIn(5_000, 7_979)));
    expect(logsIn(5_000, 7_970)).not.toEqual(logsIn(5_000, 7_979));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.upstream.calls.map((call) => call.url)).toEqual([P1, P2]);
    expect(h.upstream.blockChecks).toEqual([
      { url: P1, block: 7_979 },
      { url: P2, block: 7_979 },
    ]);
    // One batch per provider: the logs, and the header of toBlock beside them.
    expect(h.upstream.batches).toBe(2);
    expect(response.headers["x-gateway-attempts"]).toBe("2");
    // Behind is no strike.
    const { providers } = await h.store.readNetwork("net");
    expect(providers.get("p1")?.strikes ?? 0).toBe(0);
  });

  it("when no provider has reached toBlock, the caller gets an error naming why, never the logs up to a provider's head", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    // Block 8,005 is known to exist (the quorum's head); p1 was seen at 7,990 and stopped at 8,000.
    h.store.setQuorum("net", quorumAt(8_005, ["p1"], 20_000, { p1: 7_990 }));
    h.upstream.node(P1, { head: 8_000 });
    const response = await h.rpc(getLogs(1, 7_000, 8_005));
    expect(response.status).toBe(502);
    const body = resultOf(response.body);
    expect(body.result).toBeUndefined();
    expect(body.error?.message).toContain(
      "p1: its answer came without block 0x1f45 (toBlock): its logs may end before the range does",
    );
    expect(h.upstream.blockChecks).toEqual([{ url: P1, block: 8_005 }]);
  });

  it("a toBlock above the chain head the gateway knows, which no provider shows: the caller's invalid params, not a provider failure", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(7_990, ["p1", "p2"]));
    h.upstream.node(P1, { head: 7_990 }).node(P2, { head: 7_990 });
    const response = await h.rpc(getLogs(1, 7_000, 0xffff_ffff));
    expect(response.status).toBe(200);
    expect(resultOf(response.body).error).toEqual({
      code: -32602,
      message:
        "toBlock 0xffffffff is above the chain head this gateway knows (0x1f36): ask for blocks up to it",
    });
    expect(h.upstream.blockChecks).toHaveLength(2);
  });

  it("regression: a toBlock the chain can have made since the monitor's snapshot (another container's newer copy served it), no provider showing it yet, was the caller's invalid params (-32602, fatal to viem); now the providers' failure (502, retried)", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    // The snapshot is 5 s old at 7,990: blocks up to 7,995 can exist by now.
    h.store.setQuorum("net", quorumAt(7_990, ["p1", "p2"], 5_000));
    h.upstream.node(P1, { head: 7_992 }).node(P2, { head: 7_992 });
    const response = await h.rpc(getLogs(1, 7_990, 7_994));
    expect(response.status).toBe(502);
    expect(resultOf(response.body).error?.code).toBe(-32603);
  });

  it("a dropped answer is never cached: asked again once the provider has the block, the caller gets the whole range", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(8_005, ["p1"], 20_000, { p1: 7_960 }));
    h.upstream.node(P1, { head: 7_970 });
    const first = await h.rpc(getLogs(1, 7_900, 7_979));
    expect(resultOf(first.body).result).toBeUndefined();
    h.upstream.node(P1, {});
    const again = await h.rpc(getLogs(1, 7_900, 7_979));
    expect(again.body).toBe(logsAnswer(1, logsIn(7_900, 7_979)));
    expect(h.upstream.calls).toHaveLength(2);
  });

  it("a provider that answers the check with another block has not shown toBlock", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(7_960, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 7_970, otherBlock: true }).node(P2, {});
    const response = await h.rpc(getLogs(1, 7_900, 7_979));
    expect(response.body).toBe(logsAnswer(1, logsIn(7_900, 7_979)));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
  });

  it("near the head, every answer carries toBlock's header in its own batch: a provider's reach is what it shows now, not the highest it once showed", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.upstream.node(P1, {});
    h.store.setQuorum("net", quorumAt(7_990, ["p1"]));
    // 3 blocks over the quorum's head: as far as a head seen in answers counts
    // (observed_head_max_ahead_blocks).
    const first = await h.rpc(getLogs(1, 7_000, 7_993));
    expect(first.body).toBe(logsAnswer(1, logsIn(7_000, 7_993)));
    await h.rpc(getLogs(2, 7_500, 7_993));
    const third = await h.rpc(getLogs(3, 7_993, 7_993));
    expect(h.upstream.blockChecks).toEqual(
      [7_993, 7_993, 7_993].map((block) => ({ url: P1, block })),
    );
    // In the batch of each query: no upstream call of its own.
    expect(h.upstream.batches).toBe(3);
    expect(third.headers["x-gateway-attempts"]).toBe("1");
  });

  it("no check for a final range up to a block the provider was seen at, nor of an error answer", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.upstream.node(P1, { failAt: 8_003 });
    h.store.setQuorum("net", quorumAt(8_000, ["p1"]));
    // Final: more than logs_check_window_blocks (128) under the head, the chain's finality unknown.
    const old = await h.rpc(getLogs(2, 100, 7_872));
    expect(old.body).toBe(logsAnswer(2, logsIn(100, 7_872)));
    expect(h.upstream.blockChecks).toEqual([]);
    // Near the head the header rides along, but an error answer is the provider's as it is.
    const failed = await h.rpc(getLogs(3, 8_001, 8_003));
    expect(resultOf(failed.body).error?.message).toBe("leveldb: closed");
  });

  it("no check before the monitor's first snapshot: no head is known, and every query would pay", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.upstream.node(P1, { head: 8_000 });
    const response = await h.rpc(getLogs(1, 7_000, 8_005));
    expect(response.body).toBe(logsAnswer(1, logsIn(7_000, 8_000)));
    expect(h.upstream.blockChecks).toEqual([]);
  });

  it("regression: with the monitor stalled (its snapshot older than three check intervals) a clamped answer went to the caller unchecked; now it is checked", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.upstream.node(P1, { head: 8_000 });
    h.store.setQuorum("net", quorumAt(7_990, ["p1"], 46_000));
    const response = await h.rpc(getLogs(2, 7_000, 8_005));
    expect(h.upstream.blockChecks).toEqual([{ url: P1, block: 8_005 }]);
    expect(resultOf(response.body).result).toBeUndefined();
    // The stalled monitor's head is old news: the providers' failure (502), not the caller's.
    expect(response.status).toBe(502);
    expect(resultOf(response.body).error?.message).toContain("came without block 0x1f45");
  });

  it("regression: with the monitor stalled, an indexer paid a check call on every query; now the check rides in the query's batch", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    // 46 blocks made since the stalled monitor's last snapshot.
    h.upstream.node(P1, { head: 8_036 });
    h.store.setQuorum("net", quorumAt(7_990, ["p1"], 46_000));
    for (const id of [1, 2, 3]) {
      const response = await h.rpc(getLogs(id, 8_030, 8_035));
      expect(response.body).toBe(logsAnswer(id, logsIn(8_030, 8_035)));
      expect(response.headers["x-gateway-attempts"]).toBe("1");
    }
    expect(h.upstream.blockChecks).toHaveLength(3);
    expect(h.upstream.batches).toBe(3);
  });

  it("regression: with the monitor stalled, a batch of near-head queries paid a check call per query; now each check rides in its query's batch", async () => {
    const h = harness([{ name: "p1", url: P1 }], FAST_BLOCKS);
    h.upstream.node(P1, { head: 8_036 });
    h.store.setQuorum("net", quorumAt(7_990, ["p1"], 46_000));
    const batch = `[${[1, 2, 3, 4].map((id) => getLogs(id, 8_030 + id, 8_035)).join(",")}]`;
    const response = await h.rpc(batch);
    expect(JSON.parse(response.body)).toEqual(
      [1, 2, 3, 4].map((id) => JSON.parse(logsAnswer(id, logsIn(8_030 + id, 8_035)))),
    );
    expect(h.upstream.blockChecks).toHaveLength(4);
    expect(response.headers["x-gateway-attempts"]).toBe("4");
  });

  it("regression: a check answered with a block that had no hash was believed; now it is not", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(7_990, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 8_000, noHash: true }).node(P2, {});
    const response = await h.rpc(getLogs(1, 7_000, 8_000));
    expect(response.body).toBe(logsAnswer(1, logsIn(7_000, 8_000)));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
  });

  it("regression: a cut query up to a block made since the monitor's snapshot (another container may have served that head) was refused as above the head; now it is served, its last piece checked", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 1_000 }], FAST_BLOCKS);
    h.upstream.node(P1, { head: 8_003 });
    h.store.setQuorum("net", quorumAt(7_999, ["p1"], 5_000));
    const response = await h.rpc(getLogs(1, 5_000, 8_003));
    expect(response.body).toBe(logsAnswer(1, logsIn(5_000, 8_003)));
    // The pieces near the head (within 128 blocks, finality unknown) carry their toBlock's header.
    expect(h.upstream.blockChecks).toEqual([
      { url: P1, block: 7_999 },
      { url: P1, block: 8_003 },
    ]);
    // Past what the chain can have made since, it is refused before any call.
    const far = await h.rpc(getLogs(2, 5_000, 8_100));
    expect(resultOf(far.body).error?.code).toBe(-32602);
    expect(h.upstream.blockChecks).toHaveLength(2);
  });

  it("a query cut in pieces: only the pieces near the head are checked, and one found behind goes to the next provider", async () => {
    const h = harness(
      [
        { name: "p1", url: P1, priority: 2, max_logs_range: 1_000 },
        { name: "p2", url: P2, priority: 1, max_logs_range: 1_000 },
      ],
      { ...FAST_BLOCKS, logs_concurrency: 1 },
    );
    // p2 was seen at the head; p1 at 7,960, and routing takes it to be at 8,000 by now.
    h.store.setQuorum("net", quorumAt(7_999, ["p1", "p2"], 40_000, { p1: 7_960 }));
    h.upstream.node(P1, { head: 7_970 }).node(P2, {});
    const response = await h.rpc(getLogs(5, 5_000, 7_999));
    expect(response.body).toBe(logsAnswer(5, logsIn(5_000, 7_999)));
    expect(h.upstream.blockChecks).toEqual([
      { url: P1, block: 7_999 },
      { url: P2, block: 7_999 },
    ]);
    expect(h.upstream.calls.map((call) => [call.url, call.to])).toEqual([
      [P1, 5_999],
      [P1, 6_999],
      [P1, 7_999],
      [P2, 7_999],
    ]);
  });

  it("a check a batch cannot carry is an upstream call of the request: with none left, the logs are not used", async () => {
    const h = harness(
      [
        // Takes no batches: the header is asked on its own call.
        { name: "p1", url: P1, priority: 2, max_batch: 1 },
        { name: "p2", url: P2, priority: 1 },
      ],
      { ...FAST_BLOCKS, max_attempts: 1, max_upstream_calls: 1 },
    );
    h.store.setQuorum("net", quorumAt(7_990, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 8_000 }).node(P2, {});
    const response = await h.rpc(getLogs(1, 7_000, 8_005));
    const body = resultOf(response.body);
    expect(body.result).toBeUndefined();
    expect(body.error?.message).toContain("max_upstream_calls");
    expect(h.upstream.blockChecks).toEqual([]);
  });

  it("in one request, a provider found without a block is not asked for it again: its answers up to it are dropped", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(7_960, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 7_970 }).node(P2, {});
    const response = await h.rpc(
      `[${getLogs(1, 7_900, 7_975)},${getLogs(2, 7_950, 7_979)},${getLogs(3, 7_971, 7_979)}]`,
    );
    const answers = JSON.parse(response.body) as Array<{ id: number; result: unknown[] }>;
    expect(answers.map((answer) => answer.result)).toEqual(
      [
        [7_900, 7_975],
        [7_950, 7_979],
        [7_971, 7_979],
      ].map(([from, to]) => JSON.parse(logsAnswer(0, logsIn(from ?? 0, to ?? 0))).result),
    );
    // p1 is asked for block 7,975 once, and not asked again; p2 shows each query's toBlock.
    expect(h.upstream.blockChecks).toEqual([
      { url: P1, block: 7_975 },
      { url: P2, block: 7_975 },
      { url: P2, block: 7_979 },
      { url: P2, block: 7_979 },
    ]);
  });

  it("in a batch, the checked log query keeps its place and id among the other calls", async () => {
    const h = harness(P1_THEN_P2, FAST_BLOCKS);
    h.store.setQuorum("net", quorumAt(7_960, ["p1", "p2"], 20_000));
    h.upstream.node(P1, { head: 7_970 }).node(P2, {});
    const response = await h.rpc(
      `[${getLogs(11, 7_000, 7_979)},${getLogs(12, 100, 200)},${getLogs(13, 7_975, 7_979)}]`,
    );
    const answers = JSON.parse(response.body) as Array<{ id: number; result: unknown[] }>;
    expect(answers.map((answer) => answer.id)).toEqual([11, 12, 13]);
    expect(answers[0]?.result).toEqual(JSON.parse(logsAnswer(0, logsIn(7_000, 7_979))).result);
    expect(answers[2]?.result).toEqual(JSON.parse(logsAnswer(0, logsIn(7_975, 7_979))).result);
    expect(answers[2]?.result).toHaveLength(2);
  });
});

describe("a query no provider in use takes: cut into aligned pieces", () => {
  it("a 100,000-block query on providers capped at 10,000 returns exactly the node's logs, from 10 aligned pieces", async () => {
    const h = harness(
      [
        { name: "p1", url: P1, max_logs_range: 10_000 },
        { name: "p2", url: P2, max_logs_range: 10_000 },
      ],
      { logs_concurrency: 3 },
    );
    h.upstream.node(P1, {}).node(P2, {});
    // The monitor saw both at the head: no piece needs their head checked.
    h.store.setQuorum("net", quorumAt(100_000, ["p1", "p2"]));
    const response = await h.rpc(getLogs(3, 0, 99_999));
    expect(response.status).toBe(200);
    expect(response.body).toBe(logsAnswer(3, logsIn(0, 99_999)));
    const ranges = h.upstream.calls
      .map((c) => [c.from, c.to])
      .sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
    expect(ranges).toEqual(Array.from({ length: 10 }, (_, k) => [k * 10_000, k * 10_000 + 9_999]));
    expect(h.upstream.mostInFlight).toBe(3);
    expect(response.headers["x-gateway-attempts"]).toBe("10");
  });

  it("cuts at multiples of the piece size, so the ends are partial pieces", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }]);
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(1, 5, 30_004));
    expect(response.body).toBe(logsAnswer(1, logsIn(5, 30_004)));
    expect(h.upstream.calls.map((c) => [c.from, c.to])).toEqual([
      [5, 9_999],
      [10_000, 19_999],
      [20_000, 29_999],
      [30_000, 30_004],
    ]);
  });

  it("keeps each log once, in block then log index order, dropping logs a provider sent from outside the piece", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 5_000 }]);
    h.upstream.node(P1, { sloppy: true });
    const response = await h.rpc(getLogs(1, 0, 19_999));
    expect(response.body).toBe(logsAnswer(1, logsIn(0, 19_999)));
  });

  it("a batch: the log query is served in pieces, the other calls as usual, in the caller's order", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }]);
    h.upstream.node(P1, {});
    const response = await h.rpc(`[${getLogs(1, 0, 1_000)},${getLogs(2, 0, 25_000)}]`);
    const answers = JSON.parse(response.body) as Array<{ id: number; result: unknown[] }>;
    expect(answers.map((a) => [a.id, a.result.length])).toEqual([
      [1, logsIn(0, 1_000).length],
      [2, logsIn(0, 25_000).length],
    ]);
  });
});

describe("limits learned from refusals", () => {
  it("learns each provider's stated cap from its refusal, shares it, and cuts the next query at once", async () => {
    const h = harness([
      { name: "p1", url: P1, priority: 2 },
      { name: "p2", url: P2, priority: 1 },
    ]);
    h.upstream.node(P1, { cap: 10_000, refusal: GETH_CAP(10_000) }).node(P2, {
      cap: 10_000,
      refusal: () => ({ code: -32602, message: "eth_getLogs is limited to a 10,000 range" }),
    });
    const first = await h.rpc(getLogs(1, 0, 99_999));
    expect(first.body).toBe(logsAnswer(1, logsIn(0, 99_999)));
    // Whole to p1 (refused), whole to p2 (refused), then ten pieces.
    expect(h.upstream.calls.slice(0, 2)).toEqual([
      { url: P1, from: 0, to: 99_999 },
      { url: P2, from: 0, to: 99_999 },
    ]);
    expect(h.upstream.calls).toHaveLength(12);
    const stored = await h.store.readNetwork("net");
    expect([...stored.logsRanges].map(([name, limit]) => [name, limit.value])).toEqual([
      ["p1", 10_000],
      ["p2", 10_000],
    ]);
    h.upstream.calls.length = 0;
    await h.rpc(getLogs(2, 0, 99_999));
    expect(h.upstream.calls).toHaveLength(10);
    const status = networkStatus({
      network: h.network,
      state: stored,
      now: h.clock(),
      model: h.model,
      configSource: { kind: "file", loaded_at: "" },
      stats: () => ({
        window_seconds: 300,
        requests: 0,
        errors: 0,
        latency_ms: { p50: null, p95: null },
      }),
    });
    expect(status.providers.map((p) => p.limits.max_logs_range)).toEqual([10_000, 10_000]);
  });

  it("halves on a refusal that states no cap, learning half the refused span", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.node(P1, {
      cap: 3_000,
      refusal: () => ({ code: -32600, message: "block range is too wide" }),
    });
    const response = await h.rpc(getLogs(1, 0, 15_999));
    expect(response.body).toBe(logsAnswer(1, logsIn(0, 15_999)));
    // 16,000 refused → 8,000 refused → 4,000 refused → 2,000-block pieces.
    expect((await h.store.readNetwork("net")).logsRanges.get("p1")?.value).toBe(2_000);
  });

  it("takes a provider's hinted range on a result-count refusal, and learns nothing from it", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.node(P1, {
      cap: 4_000,
      refusal: (from) => ({
        code: -32005,
        message: `query returned more than 10000 results. Try with this block range [${hex(from)}, ${hex(from + 3_999)}].`,
        data: { from: hex(from), limit: 10_000, to: hex(from + 3_999) },
      }),
    });
    const response = await h.rpc(getLogs(1, 0, 9_999));
    expect(response.body).toBe(logsAnswer(1, logsIn(0, 9_999)));
    expect(h.upstream.calls.map((c) => [c.from, c.to]).slice(0, 3)).toEqual([
      [0, 9_999],
      [0, 3_999],
      [4_000, 9_999],
    ]);
    expect((await h.store.readNetwork("net")).logsRanges.size).toBe(0);
  });
});

describe("what the caller gets when the query cannot be served", () => {
  it("a piece answered with an error fails the whole call: the provider's code, the range named", async () => {
    const h = harness([
      { name: "p1", url: P1, max_logs_range: 10_000 },
      { name: "p2", url: P2, max_logs_range: 10_000 },
    ]);
    h.upstream.node(P1, { failAt: 45_000 }).node(P2, { failAt: 45_000 });
    const response = await h.rpc(getLogs(9, 0, 99_999));
    expect(response.status).toBe(200);
    const error = JSON.parse(response.body) as {
      id: number;
      error: { code: number; message: string };
    };
    expect(error.id).toBe(9);
    expect(error.error.code).toBe(-32000);
    expect(error.error.message).toContain("blocks 0x9c40-0xc34f of 0x0-0x1869f were not served");
    expect(error.error.message).toContain("leveldb: closed");
  });

  it("a piece no provider answers fails the whole call with 502, naming the range", async () => {
    const down = harness([{ name: "p1", url: "http://down.test/", max_logs_range: 10_000 }]);
    const failed = await down.rpc(getLogs(5, 0, 15_000));
    expect(failed.status).toBe(502);
    const error = JSON.parse(failed.body) as {
      id: number;
      error: { code: number; message: string };
    };
    expect(error.id).toBe(5);
    expect(error.error.code).toBe(-32603);
    expect(error.error.message).toMatch(
      /^all providers failed for eth_getLogs; last error: blocks 0x0-0x270f of 0x0-0x3a98 were not served/,
    );
  });

  it("a query a provider takes whole keeps the provider's error answer as it is", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.node(P1, { failAt: 5 });
    const response = await h.rpc(getLogs(6, 0, 10));
    expect(response.status).toBe(200);
    expect(response.body).toBe(
      '{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"leveldb: closed"}}',
    );
  });

  it("regression: a range of 2^53 blocks is refused without making its pieces", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }]);
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(1, 0, "0x1fffffffffffff"));
    const error = (JSON.parse(response.body) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32005);
    expect(h.upstream.calls).toHaveLength(0);
  });

  it("toBlock above the chain head the gateway knows is refused, not cut", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }]);
    h.upstream.node(P1, {});
    h.store.setQuorum("net", {
      head: 50_000,
      headTimestamp: NOW / 1000,
      members: ["p1"],
      excluded: {},
      heads: { p1: { number: 50_000, timestamp: NOW / 1000 } },
      computedAt: NOW,
    });
    const response = await h.rpc(getLogs(1, 0, 60_000));
    const error = (JSON.parse(response.body) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32602);
    expect(error.message).toContain("above the chain head");
    expect(h.upstream.calls).toHaveLength(0);
  });

  it("a query needing more pieces than max_upstream_calls is refused before any is sent", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 1_000 }], { max_upstream_calls: 20 });
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(1, 0, 99_999));
    const error = (JSON.parse(response.body) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32005);
    expect(error.message).toContain("need 100 upstream calls of at most 1000 blocks");
    expect(h.upstream.calls).toHaveLength(0);
  });

  it("regression: its words were not those indexers narrow a range on (subsquid's processor gave up); now 'response is too big', and the first part whose pieces fit", async () => {
    const h = harness([{ name: "p1", url: P1, max_logs_range: 1_000 }], { max_upstream_calls: 20 });
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(1, 500, 99_999));
    const { message } = (JSON.parse(response.body) as { error: { message: string } }).error;
    expect(message).toMatch(/^response is too big for one request: /);
    // Pieces are cut at multiples of 1,000: 500-999 and 19 more make 20 calls.
    expect(message).toContain("Try with this block range [0x1f4, 0x4e1f].");
  });

  it("logs over the response limit get the gateway's 'narrow your range' error with a range that fits", async () => {
    const perLog = logsIn(0, 0)[0]?.length ?? 0;
    const h = harness([{ name: "p1", url: P1, max_logs_range: 10_000 }], {
      // About 45 logs fit; the first 10,000 blocks hold 31.
      max_response_bytes: perLog * 45,
      logs_concurrency: 1,
    });
    h.upstream.node(P1, {});
    const response = await h.rpc(getLogs(1, 0, 99_999));
    const error = (JSON.parse(response.body) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32005);
    expect(error.message).toMatch(/^response is too big: /);
    expect(error.message).toContain("narrow your range");
    expect(error.message).toContain("Try with this block range [0x0, 0x270f]");
  });
});

describe("a batch whose log queries spend the request's calls", () => {
  it("regression: the query left without calls was told its own share as the limit ('max_upstream_calls (1 upstream calls)'); now the configured limit", async () => {
    const h = harness(
      [
        { name: "p1", url: P1 },
        { name: "p2", url: P2 },
        { name: "p3", url: "http://p3.test/" },
      ],
      { max_attempts: 3, max_upstream_calls: 4 },
    );
    // No node answers: the first query spends three calls, the second has one left.
    const response = await h.rpc(`[${getLogs(1, 0, 99)},${getLogs(2, 100, 199)}]`);
    const [first, second] = JSON.parse(response.body) as Array<{
      error: { code: number; message: string };
    }>;
    expect(first?.error.message).toContain("all providers failed for eth_getLogs");
    // Its one call failed, and its retries found the budget spent: the providers' failure
    // (retryable), naming the configured limit.
    expect(second?.error.code).toBe(-32603);
    expect(second?.error.message).toContain("all providers failed for eth_getLogs");
    expect(second?.error.message).toContain(
      "then this request reached max_upstream_calls (4 upstream calls)",
    );
  });
});
