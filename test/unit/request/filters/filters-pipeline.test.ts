import { describe, expect, it } from "vitest";
import type { LogLevel, Telemetry } from "../../../../functions/core/ports.ts";
import { CONTRACT, FakeChain, FakeChainUpstream, OTHER } from "../../../support/fake-chain.ts";
import { gatewayHarness, type HarnessNetwork } from "../../../support/gateway-harness.ts";
import { MemoryFilterStore } from "../../../support/memory-filter-store.ts";

/**
 * Filters served by the gateway (docs/behaviour.md §14) through the whole request pipeline: a
 * chain in memory behind fake providers, the in-memory filter store and a test clock. Every
 * log once across polls, `latest` moving, bounded polls, reorgs, node-shaped errors.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";

interface Setup {
  readonly chain?: FakeChain;
  readonly network?: HarnessNetwork;
  readonly providers?: Array<{ name: string; url: string; max_logs_range?: number }>;
  readonly store?: MemoryFilterStore;
}

function setup(options: Setup = {}) {
  const chain = options.chain ?? new FakeChain(10);
  const store = options.store ?? new MemoryFilterStore();
  const lines: Array<{ level: LogLevel; message: string; fields?: Record<string, unknown> }> = [];
  const telemetry: Telemetry = {
    log: (level, message, fields) => lines.push({ level, message, ...(fields ? { fields } : {}) }),
    count: () => undefined,
    measure: () => undefined,
  };
  const providers = options.providers ?? [
    { name: "p1", url: P1 },
    { name: "p2", url: P2 },
  ];
  const h = gatewayHarness({
    providers,
    network: { block_time_seconds: 1, ...options.network },
    now: NOW,
    upstream: (advance) => {
      const upstream = new FakeChainUpstream(chain, advance);
      for (const provider of providers) upstream.provider(provider.url);
      return upstream;
    },
    deps: { filters: store, telemetry },
  });
  let id = 0;
  const call = async (method: string, params: unknown[] = []) => {
    const response = await h.rpc(JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }));
    return JSON.parse(response.body) as {
      id: number;
      result?: unknown;
      error?: { code: number; message: string };
    };
  };
  const changes = async (filter: unknown) => (await call("eth_getFilterChanges", [filter])).result;
  return { ...h, chain, filters: store, lines, call, changes };
}

const logsText = (logs: unknown) => (logs as unknown[]).map((log) => JSON.stringify(log));

describe("a log filter the gateway holds", () => {
  it("reports each new log once, poll after poll, from the block after the head at install", async () => {
    const t = setup();
    const { result: id } = await t.call("eth_newFilter", [{ address: CONTRACT }]);
    expect(id).toMatch(/^0x[0-9a-f]{36}$/);
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(3);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 13));
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(2, 2);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(14, 15));
    // No provider holds the filter: none was asked to install one.
    expect(t.upstream.callsOf("eth_newFilter")).toBe(0);
    expect(t.upstream.callsOf("eth_getFilterChanges")).toBe(0);
  });

  it("matches only the criteria's address and topics", async () => {
    const t = setup();
    const { result: id } = await t.call("eth_newFilter", [{ address: OTHER }]);
    t.chain.mine(2);
    const got = logsText(await t.changes(id));
    expect(got).toEqual(t.chain.logsOf(11, 12, OTHER));
    expect(got.every((text) => text.includes(OTHER))).toBe(true);
  });
});

describe("tags in a filter keep their meaning", () => {
  it("a numbered fromBlock with toBlock left out reports from that block up to the head, then each new block; a numbered toBlock stops there", async () => {
    const t = setup();
    const open = (await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "0x3" }])).result;
    const closed = (
      await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "0x3", toBlock: "0xc" }])
    ).result;
    t.chain.mine(1, 0);
    expect(logsText(await t.changes(open))).toEqual(t.chain.logsOf(3, 11));
    expect(logsText(await t.changes(closed))).toEqual(t.chain.logsOf(3, 11));
    t.chain.mine(3);
    expect(logsText(await t.changes(open))).toEqual(t.chain.logsOf(12, 14));
    expect(logsText(await t.changes(closed))).toEqual(t.chain.logsOf(12, 12));
    t.chain.mine(1);
    expect(await t.changes(closed)).toEqual([]);
  });

  it("regression: eth_newFilter {latest, latest} was installed with the served head's number and never reported a log; now latest moves with the served head", async () => {
    const chain = new FakeChain(20);
    const t = setup({ chain });
    const everyone = ["p1", "p2"];
    t.store.setQuorum("net", {
      head: 20,
      headTimestamp: NOW / 1000,
      members: everyone,
      excluded: {},
      heads: {
        p1: { number: 20, timestamp: NOW / 1000 },
        p2: { number: 20, timestamp: NOW / 1000 },
      },
      computedAt: NOW,
    });
    const served = (block: number) =>
      t.store.setHead("net", {
        latest: { number: block, hash: chain.block(block)?.hash ?? null },
        safe: null,
        finalized: null,
        served: { block, at: t.clock() - 3000 },
        previousServed: null,
        updatedAt: t.clock(),
        reorgSeenAt: 0,
      });
    served(15);
    t.advance(2000);
    const id = (
      await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "latest", toBlock: "latest" }])
    ).result;
    // Tags were pinned to block 15 on their way in: the filter still follows the head.
    const [stored] = [...t.filters.held("net", "*").values()];
    expect(stored?.logs?.to).toEqual({ kind: "tag", tag: "latest" });
    expect(stored?.cursor).toBe(16);
    // Up to the served head, never past it, though the chain is at 20.
    served(18);
    t.advance(2000);
    expect(logsText(await t.changes(id))).toEqual(chain.logsOf(16, 18));
    chain.mine(2);
    served(22);
    t.advance(2000);
    expect(logsText(await t.changes(id))).toEqual(chain.logsOf(19, 22));
  });

  it("eth_getFilterLogs returns the filter's whole range up to the head, and moves nothing", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "earliest" }]))
      .result;
    t.chain.mine(2);
    expect(logsText((await t.call("eth_getFilterLogs", [id])).result)).toEqual(
      t.chain.logsOf(0, 12),
    );
    expect(logsText((await t.call("eth_getFilterLogs", [id])).result)).toEqual(
      t.chain.logsOf(0, 12),
    );
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(0, 12));
    const latest = (await t.call("eth_newFilter", [{}])).result;
    expect((await t.call("eth_getFilterLogs", [latest])).result).toEqual([]);
    t.chain.mine(1);
    expect(logsText((await t.call("eth_getFilterLogs", [latest])).result)).toEqual(
      t.chain.logsOf(13, 13, ""),
    );
  });
});

describe("a block filter the gateway holds", () => {
  it("reports the hash of each new block once, in order, at most 100 a poll", async () => {
    const t = setup();
    const { result: id } = await t.call("eth_newBlockFilter");
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(3, 0);
    expect(await t.changes(id)).toEqual([11, 12, 13].map((n) => t.chain.block(n)?.hash));
    t.chain.mine(150, 0);
    const first = (await t.changes(id)) as string[];
    const second = (await t.changes(id)) as string[];
    expect(first).toHaveLength(100);
    expect([...first, ...second]).toEqual(
      Array.from({ length: 150 }, (_, index) => t.chain.block(14 + index)?.hash),
    );
    expect(await t.changes(id)).toEqual([]);
  });

  it("has no logs to give: eth_getFilterLogs answers geth's filter not found", async () => {
    const t = setup();
    const { result: id } = await t.call("eth_newBlockFilter");
    expect((await t.call("eth_getFilterLogs", [id])).error).toEqual({
      code: -32000,
      message: "filter not found",
    });
  });
});

describe("bounds on a poll", () => {
  it("a filter from block 0 on a long chain covers at most a provider's log range a poll, and every log arrives once", async () => {
    const chain = new FakeChain(0).mine(2600, 1);
    const t = setup({
      chain,
      providers: [
        { name: "p1", url: P1, max_logs_range: 1000 },
        { name: "p2", url: P2, max_logs_range: 500 },
      ],
    });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "0x0" }])).result;
    const polls: string[][] = [];
    for (let poll = 0; poll < 5; poll++) polls.push(logsText(await t.changes(id)));
    expect(polls.map((logs) => logs.length)).toEqual([999, 1000, 601, 0, 0]);
    expect(polls.flat()).toEqual(chain.logsOf(0, 2600));
  });

  it("a provider's refusal of the span lowers the filter's polls, and nothing is lost", async () => {
    const chain = new FakeChain(0).mine(700, 1);
    const t = setup({ chain });
    t.upstream.provider(P1, { maxLogsRange: 300 }).provider(P2, { maxLogsRange: 300 });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT, fromBlock: "0x0" }])).result;
    const polls: string[][] = [];
    for (let poll = 0; poll < 4; poll++) polls.push(logsText(await t.changes(id)));
    expect(polls.map((logs) => logs.length)).toEqual([299, 300, 101, 0]);
    expect(polls.flat()).toEqual(chain.logsOf(0, 700));
    expect([...t.filters.held("net", "*").values()][0]?.span).toBe(300);
  });

  it("a poll stops at the request's deadline: nothing reported, nothing moved", async () => {
    // Each upstream call takes 5 ms of the test's clock: the head, the logs, then no time left.
    const t = setup({ network: { request_timeout_ms: 9, request_deadline_ms: 9 } });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const answer = await t.call("eth_getFilterChanges", [id]);
    expect(answer.error?.code).toBe(-32603);
    expect(answer.error?.message).toContain("nothing was reported and the filter did not move");
    expect([...t.filters.held("net", "*").values()][0]?.cursor).toBe(11);
    expect(t.upstream.callsOf("eth_getBlockByNumber")).toBe(0);
  });

  it("a poll whose upstream calls run out reports nothing and moves nothing", async () => {
    const t = setup({ network: { max_attempts: 1, max_upstream_calls: 2 } });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const answer = await t.call("eth_getFilterChanges", [id]);
    expect(answer.error?.message).toMatch(
      /could not be read: nothing was reported and the filter did not move/,
    );
    expect([...t.filters.held("net", "*").values()][0]?.cursor).toBe(11);
  });
});

describe("a filter outlives its providers", () => {
  it("the provider polled first goes down: the polls go on through the other, every log once", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const first = logsText(await t.changes(id));
    t.upstream.provider(P1, { down: true });
    t.chain.mine(3);
    const second = logsText(await t.changes(id));
    t.upstream.provider(P1).provider(P2, { down: true });
    t.chain.mine(1);
    const third = logsText(await t.changes(id));
    expect([...first, ...second, ...third]).toEqual(t.chain.logsOf(11, 16));
  });

  it("no provider answers: the poll fails with an error the caller retries, and reports the logs later", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    t.upstream.provider(P1, { down: true }).provider(P2, { down: true });
    const failed = await t.call("eth_getFilterChanges", [id]);
    expect(failed.error?.code).toBe(-32603);
    // Not "filter not found" (-32000): viem would install a new filter from the head.
    expect(failed.error?.message).not.toMatch(/filter not found/);
    t.upstream.provider(P1).provider(P2);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 12));
  });
});

describe("a chain restarted under the same chain id (docs/behaviour.md §10.7)", () => {
  it("regression: a filter installed before the restart waited, reporting [], until the new chain passed its old blocks, and never reported the new chain's logs below them; now it is gone (geth's filter not found, as the restarted node answers), and the client installs a new one", async () => {
    const t = setup({ chain: new FakeChain(40) });
    /** The chain position at `block`, as the monitor and the publications leave it. */
    const at = (block: number, resetAt = 0) => {
      t.store.setHead("net", {
        latest: { number: block, hash: t.chain.block(block)?.hash ?? null },
        safe: null,
        finalized: null,
        served: { block, at: t.clock() - 3000 },
        previousServed: null,
        updatedAt: t.clock(),
        reorgSeenAt: resetAt,
        resetAt,
      });
      t.advance(2000);
    };
    at(40);
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(3);
    at(43);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(41, 43));
    // The devnet restarts 30 blocks lower: every block replaced, the chain shorter.
    t.chain.reorg(43, { grow: -30 });
    const reset = t.clock();
    at(t.chain.head, reset);
    const after = await t.call("eth_getFilterChanges", [id]);
    expect(after.error).toEqual({ code: -32000, message: "filter not found" });
    const fresh = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    at(t.chain.head, reset);
    expect(logsText(await t.changes(fresh))).toEqual(
      t.chain.logsOf(t.chain.head - 1, t.chain.head),
    );
  });
});

describe("errors in nodes' shapes", () => {
  it("an unknown id, one a digit off, an expired filter and an uninstalled one are geth's filter not found", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{}])).result as string;
    const off = `${id.slice(0, -1)}${id.endsWith("0") ? "1" : "0"}`;
    const notFound = { code: -32000, message: "filter not found" };
    expect((await t.call("eth_getFilterChanges", [off])).error).toEqual(notFound);
    expect((await t.call("eth_getFilterLogs", [off])).error).toEqual(notFound);
    expect((await t.call("eth_uninstallFilter", [off])).result).toBe(false);
    expect(await t.changes(id)).toEqual([]);
    expect((await t.call("eth_uninstallFilter", [id])).result).toBe(true);
    expect((await t.call("eth_uninstallFilter", [id])).result).toBe(false);
    expect((await t.call("eth_getFilterChanges", [id])).error).toEqual(notFound);
    const idle = (await t.call("eth_newBlockFilter")).result;
    t.advance(299_000);
    expect(await t.changes(idle)).toEqual([]);
    t.advance(299_000);
    expect(await t.changes(idle)).toEqual([]);
    t.advance(301_000);
    expect((await t.call("eth_getFilterChanges", [idle])).error).toEqual(notFound);
  });

  it.each([
    ["pending", [{ fromBlock: "pending" }], -32000, "pending logs are not supported"],
    [
      "latest to a number",
      [{ fromBlock: "latest", toBlock: "0x20" }],
      -32000,
      "invalid from and to block combination",
    ],
    [
      "an inverted range",
      [{ fromBlock: "0x9", toBlock: "0x8" }],
      -32000,
      "invalid from and to block combination",
    ],
    ["five topics", [{ topics: [null, null, null, null, null] }], -32000, "exceed max topics"],
    ["a bad address", [{ address: "0x12" }], -32602, "address must be an address"],
    ["a bad topic", [{ topics: ["0x12"] }], -32602, "each topic must be"],
    ["a block hash", [{ blockHash: `0x${"1".repeat(64)}` }], -32602, "not blockHash"],
    ["no filter object", [], -32602, "takes a filter object"],
    ["a block past 2^53", [{ fromBlock: "0xffffffffffffffff" }], -32602, "fromBlock must be"],
  ])(
    "eth_newFilter with %s is refused as a node would refuse it",
    async (_case, params, code, words) => {
      const t = setup();
      const { error } = await t.call("eth_newFilter", params);
      expect(error?.code).toBe(code);
      expect(error?.message).toContain(words);
      expect(t.filters.held("net", "*").size).toBe(0);
    },
  );

  it("an API key holds at most max_filters_per_key live filters per network; another key has its own", async () => {
    const t = setup({ network: { max_filters_per_key: 2 } });
    const install = (caller: string) =>
      t.gateway
        .handleRpc("net", '{"jsonrpc":"2.0","id":1,"method":"eth_newBlockFilter"}', { caller })
        .then(
          (response) =>
            JSON.parse(response.body) as {
              result?: string;
              error?: { code: number; message: string };
            },
        );
    const [a1, a2] = [await install("a"), await install("a")];
    const a3 = await install("a");
    expect(a3.error?.code).toBe(-32005);
    expect(a3.error?.message).toContain(
      'API key "a" holds 2 live filters on net (max_filters_per_key)',
    );
    expect((await install("b")).result).toMatch(/^0x/);
    // A key cannot poll another's filter, even knowing its id.
    const poll = await t.gateway.handleRpc(
      "net",
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getFilterChanges",
        params: [a1.result],
      }),
      { caller: "b" },
    );
    expect(JSON.parse(poll.body).error).toEqual({ code: -32000, message: "filter not found" });
    await t.gateway.handleRpc(
      "net",
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_uninstallFilter", params: [a2.result] }),
      { caller: "a" },
    );
    expect((await install("a")).result).toMatch(/^0x/);
  });
});

describe("filters the gateway does not hold", () => {
  it("eth_newPendingTransactionFilter and its polls go to a provider, as before", async () => {
    const t = setup();
    expect((await t.call("eth_newPendingTransactionFilter")).result).toBe("0x1234");
    expect(await t.changes("0x1234")).toEqual([]);
    expect(t.upstream.callsOf("eth_newPendingTransactionFilter")).toBe(1);
    expect(t.upstream.callsOf("eth_getFilterChanges")).toBe(1);
  });

  it("without a filter store every filter call goes upstream", async () => {
    const chain = new FakeChain(3);
    const h = gatewayHarness({
      providers: [{ name: "p1", url: P1 }],
      now: NOW,
      upstream: (advance) => new FakeChainUpstream(chain, advance).provider(P1),
    });
    await h.rpc('{"jsonrpc":"2.0","id":1,"method":"eth_newBlockFilter"}');
    expect(h.upstream.callsOf("eth_newBlockFilter")).toBe(1);
  });
});

describe("a poll reports its changes only once they are written", () => {
  it("a notification consumes nothing", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const silent = await t.rpc(
      JSON.stringify({ jsonrpc: "2.0", method: "eth_getFilterChanges", params: [id] }),
    );
    expect(silent.status).toBe(204);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 12));
  });

  it("a poll that lost the race to another container's reports nothing; the blocks come once", async () => {
    const store = new MemoryFilterStore();
    const t = setup({ store });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const real = store.advance.bind(store);
    let raced = false;
    store.advance = async (...args) => {
      if (!raced) {
        raced = true;
        // The other container's poll lands first, with the same blocks.
        const [network, owner, filter, version, next] = args;
        expect(await real(network, owner, filter, version, next)).toBe(true);
        return real(...args);
      }
      return real(...args);
    };
    expect(await t.changes(id)).toEqual([]);
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(1);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(13, 13));
  });

  it("a store that fails the write reports nothing, and the next poll reports the blocks", async () => {
    const store = new MemoryFilterStore();
    const t = setup({ store });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const real = store.advance.bind(store);
    store.advance = async () => {
      throw new Error("ProvisionedThroughputExceededException");
    };
    const failed = await t.call("eth_getFilterChanges", [id]);
    expect(failed.error?.code).toBe(-32603);
    expect(failed.error?.message).toContain("filter store did not answer");
    store.advance = real;
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 12));
  });
});

describe("a provider's answers are checked before they are reported", () => {
  it("regression: logs a provider returned that the filter does not select were reported; now they are left out", async () => {
    const t = setup();
    t.upstream.provider(P1, { anyAddress: true }).provider(P2, { anyAddress: true });
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 12));
  });

  it("a provider that claims a head past its blocks and clamps the range: nothing is reported until the blocks exist, and then all of them", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.upstream
      .provider(P1, { claimsHead: 15, clamps: true })
      .provider(P2, { claimsHead: 15, clamps: true });
    t.chain.mine(2);
    expect(await t.changes(id)).toEqual([]);
    expect([...t.filters.held("net", "*").values()][0]?.cursor).toBe(11);
    t.chain.mine(3);
    expect(logsText(await t.changes(id))).toEqual(t.chain.logsOf(11, 15));
  });
});
