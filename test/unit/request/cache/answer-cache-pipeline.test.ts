import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import { answerKey } from "../../../../functions/core/request/cache/cache-class.ts";
import { readRawTransaction } from "../../../../functions/core/request/send/transactions.ts";
import { gatewayHarness, type HarnessNetwork } from "../../../support/gateway-harness.ts";
import { MemoryAnswerStore } from "../../../support/memory-answer-store.ts";
import { recordingTelemetry } from "../../../support/recording-telemetry.ts";
import { answer, ScriptedUpstream } from "../../../support/scripted-upstream.ts";

/**
 * The answer cache in the request pipeline (docs/behaviour.md §11), with a scripted upstream,
 * the in-memory state store holding the chain position, the in-memory shared answer store and
 * a test clock: what is served from memory or the shared tier, what goes upstream, what is
 * kept, and what the caller sees of it.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const hash = (digit: string) => `0x${digit.repeat(64)}`;
const hex = (n: number) => `0x${n.toString(16)}`;
const TX = hash("7");

/** finalized 100, safe 110, latest 120, confirmed a second ago; block time 12 s. */
const HEAD: ChainHead = {
  latest: { number: 120, hash: hash("c") },
  safe: { number: 110, hash: hash("b") },
  finalized: { number: 100, hash: hash("a") },
  served: { block: 120, at: NOW - 1000 },
  previousServed: null,
  updatedAt: NOW - 1000,
  reorgSeenAt: 0,
};

/**
 * A node that answers each call of a request from `results` (by method), keeping the id the
 * gateway sent; blocks by number name themselves with `blockHash(number)`.
 */
function node(results: (method: string, params: unknown[]) => unknown) {
  return (request: { body: string }) => {
    const parsed = JSON.parse(request.body) as
      | { id: unknown; method: string; params: unknown[] }
      | Array<{ id: unknown; method: string; params: unknown[] }>;
    const one = (call: { id: unknown; method: string; params: unknown[] }) =>
      `{"jsonrpc":"2.0", "id":${JSON.stringify(call.id)}, "result":${JSON.stringify(results(call.method, call.params))}}`;
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}

/** The chain the scripted node serves: block n has hash `hashOf(n)`. */
const hashOf = (n: number) =>
  n === 100 ? hash("a") : n === 110 ? hash("b") : n === 120 ? hash("c") : hash("d");
const chain = (method: string, params: unknown[]): unknown => {
  switch (method) {
    case "eth_chainId":
      return "0x1";
    case "eth_gasPrice":
      return "0x3b9aca00";
    case "eth_blockNumber":
      return hex(120);
    case "eth_getBlockByNumber": {
      const number = Number.parseInt(String(params[0]).slice(2), 16);
      return Number.isNaN(number) ? null : { number: params[0], hash: hashOf(number) };
    }
    case "eth_getTransactionByHash":
      return { hash: TX, blockNumber: hex(100), blockHash: hash("a") };
    case "eth_getTransactionReceipt":
      return null;
    case "eth_sendRawTransaction":
      // A node answers the hash of the signed bytes.
      return readRawTransaction(params[0])?.hash ?? TX;
    default:
      return "0x";
  }
};

function harness(
  overrides: HarnessNetwork = {},
  options: {
    shared?: MemoryAnswerStore;
    memoryBytes?: number;
    head?: ChainHead | null;
    results?: (method: string, params: unknown[]) => unknown;
  } = {},
) {
  const telemetry = recordingTelemetry();
  // Made with the harness's clock, when the test brings none.
  let shared!: MemoryAnswerStore;
  const { gateway, container, store, upstream, rpc, advance, clock } = gatewayHarness({
    providers: [{ name: "p1", url: P1 }],
    network: overrides,
    config: options.memoryBytes === undefined ? {} : { cache_memory_bytes: options.memoryBytes },
    // No state caching: each request reads the chain position as the test set it.
    stateCache: { ttlMs: 0, maxStaleMs: -1 },
    now: NOW,
    upstream: () => new ScriptedUpstream().script(P1, node(options.results ?? chain)),
    deps: ({ clock }) => {
      shared = options.shared ?? new MemoryAnswerStore(clock);
      return { telemetry, sharedAnswers: shared };
    },
  });
  if (options.head !== null) store.setHead("net", options.head ?? HEAD);
  const logs = () => telemetry.logs.map((line) => line.message);
  return { gateway, container, store, upstream, shared, telemetry, rpc, advance, clock, logs };
}

const call = (id: unknown, method: string, params: unknown[] = []) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const batch = (...calls: string[]) => `[${calls.join(",")}]`;
const blockCall = (id: unknown, number: number | string) =>
  call(id, "eth_getBlockByNumber", [typeof number === "number" ? hex(number) : number, false]);

describe("served from memory: the provider's text with the caller's id", () => {
  it("params JavaScript cannot hold exactly (over 2^53) are never cached: two such calls would share a key", async () => {
    const h = harness();
    const raw = (id: number, param: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[${param}]}`;
    const first = await h.rpc(raw(1, "9007199254740993"));
    const second = await h.rpc(raw(2, "9007199254740992"));
    expect([first, second].map((r) => r.headers["x-gateway-cache"])).toEqual(["bypass", "bypass"]);
    expect(h.upstream.callsTo(P1)).toBe(2);
  });

  it("a finalized block is asked of a provider once, then served from memory byte for byte", async () => {
    const h = harness();
    const first = await h.rpc(blockCall(1, 100));
    const second = await h.rpc(blockCall("again", 100));
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(first.headers["x-gateway-cache"]).toBe("miss");
    expect(second.headers["x-gateway-cache"]).toBe("hit-memory");
    // The node's own spacing kept; only the id is the caller's.
    expect(second.body).toBe(first.body.replace('"id":1', '"id":"again"'));
    expect(second.body).toBe(
      `{"jsonrpc":"2.0", "id":"again", "result":{"number":"0x64","hash":"${hash("a")}"}}`,
    );
    expect(second.headers["x-gateway-provider"]).toBe("");
    expect(second.headers["x-gateway-attempts"]).toBe("0");
    expect(second.cacheClass).toBe("immutable");
  });

  it("a batch gets one status per member in the caller's order", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 90));
    const response = await h.rpc(
      batch(
        blockCall("a", 90),
        blockCall("b", 91),
        call("c", "eth_sendRawTransaction", ["0x02"]),
        "5",
        call("d", "eth_chainId"),
        JSON.stringify({ jsonrpc: "2.0", method: "eth_chainId", params: [] }),
      ),
    );
    expect(response.headers["x-gateway-cache"]).toBe("hit-memory,miss,bypass,bypass,miss,bypass");
    const members = JSON.parse(response.body) as Array<{ id: unknown; result?: unknown }>;
    expect(members.map((member) => member.id)).toEqual(["a", "b", "c", null, "d"]);
    // Only the calls that were not hits went upstream, as one batch.
    const sent = JSON.parse(h.upstream.bodiesTo(P1).at(-1) ?? "[]") as Array<{ method: string }>;
    expect(sent.map((c) => c.method)).toEqual([
      "eth_getBlockByNumber",
      "eth_sendRawTransaction",
      "eth_chainId",
      "eth_chainId",
    ]);
  });

  it("a hit of a batch member keeps the caller's id whatever id the provider saw", async () => {
    const h = harness();
    await h.rpc(batch(blockCall(7, 95), blockCall(8, 96)));
    const response = await h.rpc(batch(blockCall("x", 96), blockCall("y", 95)));
    expect(response.headers["x-gateway-cache"]).toBe("hit-memory,hit-memory");
    const members = JSON.parse(response.body) as Array<{ id: unknown; result: { number: string } }>;
    expect(members.map((member) => [member.id, member.result.number])).toEqual([
      ["x", "0x60"],
      ["y", "0x5f"],
    ]);
  });
});

describe("the shared tier: immutable answers for every container", () => {
  it("a fresh container serves a finalized block from the shared tier with one read, then from its memory", async () => {
    const first = harness();
    await first.rpc(blockCall(1, 100));
    expect(first.shared.writes).toEqual([{ network: "net", key: expect.stringContaining("0x64") }]);
    const fresh = harness({}, { shared: first.shared });
    const reads = first.shared.reads.length;
    const shared = await fresh.rpc(blockCall(2, 100));
    expect(shared.headers["x-gateway-cache"]).toBe("hit-shared");
    expect(fresh.upstream.callsTo(P1)).toBe(0);
    expect(first.shared.reads.length).toBe(reads + 1);
    const memory = await fresh.rpc(blockCall(3, 100));
    expect(memory.headers["x-gateway-cache"]).toBe("hit-memory");
    expect(first.shared.reads.length).toBe(reads + 1);
    expect(memory.body).toBe(shared.body.replace('"id":2', '"id":3'));
  });

  it("a shared hit counts as a hit, and is not written back", async () => {
    const first = harness();
    await first.rpc(blockCall(1, 100));
    const fresh = harness({}, { shared: first.shared });
    await fresh.rpc(blockCall(2, 100));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fresh.container.answerCache("net").classes.immutable).toEqual({
      hits: 1,
      misses: 0,
      ratio: 1,
    });
    expect(first.shared.writes).toHaveLength(1);
  });

  it("a shared answer is found for cache_shared_ttl_seconds, and not after", async () => {
    const first = harness({ cache_shared_ttl_seconds: 60 });
    await first.rpc(blockCall(1, 100));
    first.advance(59_000);
    const within = await harness({}, { shared: first.shared }).rpc(blockCall(2, 100));
    first.advance(2_000);
    const after = await harness({}, { shared: first.shared }).rpc(blockCall(3, 100));
    expect([within, after].map((r) => r.headers["x-gateway-cache"])).toEqual([
      "hit-shared",
      "miss",
    ]);
  });

  it("a shared write that fails loses nothing: the caller has the answer, a warning names the network and the error", async () => {
    class RefusingWrites extends MemoryAnswerStore {
      override async write(): Promise<boolean> {
        throw new Error("ProvisionedThroughputExceededException");
      }
    }
    const h = harness({}, { shared: new RefusingWrites(() => NOW) });
    const response = await h.rpc(blockCall(1, 100));
    await new Promise((resolve) => setImmediate(resolve));
    expect(JSON.parse(response.body)).toMatchObject({ id: 1, result: { number: "0x64" } });
    expect(h.telemetry.logs).toContainEqual({
      level: "warn",
      message: "answer not kept in the shared cache",
      fields: { network: "net", error: "ProvisionedThroughputExceededException" },
    });
    expect((await h.rpc(blockCall(2, 100))).headers["x-gateway-cache"]).toBe("hit-memory");
  });

  it("a batch's shared lookups are one read", async () => {
    const first = harness();
    await first.rpc(
      batch(blockCall(1, 10), blockCall(2, 11), call(3, "eth_getTransactionByHash", [TX])),
    );
    const fresh = harness({}, { shared: first.shared });
    const before = first.shared.reads.length;
    const response = await fresh.rpc(
      batch(
        blockCall(1, 10),
        blockCall(2, 11),
        blockCall(3, 12),
        call(4, "eth_getTransactionByHash", [TX]),
      ),
    );
    expect(response.headers["x-gateway-cache"]).toBe("hit-shared,hit-shared,miss,hit-shared");
    expect(first.shared.reads.length).toBe(before + 1);
    expect(first.shared.reads.at(-1)?.keys).toHaveLength(4);
    expect(fresh.upstream.callsTo(P1)).toBe(1);
  });

  it("unfinalized, realtime and tag-naming answers never reach the shared tier", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 115));
    await h.rpc(blockCall(3, "latest"));
    await h.rpc(call(4, "eth_gasPrice"));
    expect(h.shared.writes).toEqual([]);
    expect(h.shared.reads).toEqual([]);
  });

  it("the finalized tag, pinned to the finalized block (docs/behaviour.md §10), is immutable", async () => {
    const h = harness();
    await h.rpc(blockCall(2, "finalized"));
    expect(h.shared.writes).toHaveLength(1);
    expect(h.upstream.bodiesTo(P1)).toEqual([expect.stringContaining('"0x64"')]);
  });

  it("a shared item that is not a result (corrupt, or written by something else) is a miss, never an answer", async () => {
    const shared = new MemoryAnswerStore(() => NOW);
    const key = answerKey(1, "eth_getBlockByNumber", ["0x64", false]);
    await shared.write("net", key, "<html>not json</html>", NOW + 60_000, 65_536);
    const h = harness({}, { shared });
    const response = await h.rpc(blockCall(1, 100));
    expect(JSON.parse(response.body)).toMatchObject({ id: 1, result: { number: "0x64" } });
    expect(response.headers["x-gateway-cache"]).toBe("miss");
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.telemetry.logs).toContainEqual({
      level: "warn",
      message: "shared answer cache item is not an answer: ignored",
      fields: { network: "net" },
    });
  });

  it("an unreadable shared tier is a miss: the provider answers, and a warning says why", async () => {
    const shared = new MemoryAnswerStore(() => NOW);
    shared.failing = true;
    const h = harness({}, { shared });
    const response = await h.rpc(blockCall(1, 100));
    expect(JSON.parse(response.body)).toMatchObject({ id: 1, result: { number: "0x64" } });
    expect(response.headers["x-gateway-cache"]).toBe("miss");
    expect(h.telemetry.logs).toContainEqual({
      level: "warn",
      message: "shared answer cache unreadable: asking providers",
      fields: { network: "net", error: "connect ECONNREFUSED (shared answer store)" },
    });
  });
});

describe("unfinalized answers: memory, a block time, gone after a reorg", () => {
  it("is served within a block time and asked again after it", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 120));
    h.advance(11_000);
    expect((await h.rpc(blockCall(2, 120))).headers["x-gateway-cache"]).toBe("hit-memory");
    h.advance(1_000);
    expect((await h.rpc(blockCall(3, 120))).headers["x-gateway-cache"]).toBe("miss");
    expect(h.upstream.callsTo(P1)).toBe(2);
  });

  it("is dropped once the chain position shows a reorg seen after it was stored", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 115));
    h.advance(500);
    h.store.setHead("net", { ...HEAD, reorgSeenAt: NOW + 400 });
    const response = await h.rpc(blockCall(2, 115));
    expect(response.headers["x-gateway-cache"]).toBe("miss");
    expect(h.upstream.callsTo(P1)).toBe(2);
  });

  it("is dropped once the chain position names another block at its height", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 120));
    h.store.setHead("net", { ...HEAD, latest: { number: 120, hash: hash("e") } });
    expect((await h.rpc(blockCall(2, 120))).headers["x-gateway-cache"]).toBe("miss");
  });

  it("an immutable answer never expires from memory: ten block times later it is still a memory hit", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 100));
    h.advance(120_000);
    h.store.setHead("net", { ...HEAD, updatedAt: NOW + 119_000 });
    expect((await h.rpc(blockCall(2, 100))).headers["x-gateway-cache"]).toBe("hit-memory");
  });

  it("a block above the served head is never kept (it may not exist yet)", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 121));
    const again = await h.rpc(blockCall(2, 121));
    expect(again.headers["x-gateway-cache"]).toBe("bypass");
    expect(h.upstream.callsTo(P1, { headPolls: false })).toBe(2);
  });
});

describe("realtime and never", () => {
  it("the gas price is kept a block time", async () => {
    const h = harness();
    await h.rpc(call(1, "eth_gasPrice"));
    expect((await h.rpc(call(2, "eth_gasPrice"))).headers["x-gateway-cache"]).toBe("hit-memory");
    h.advance(12_000);
    expect((await h.rpc(call(3, "eth_gasPrice"))).headers["x-gateway-cache"]).toBe("miss");
  });

  it.each<[string, string, number]>([
    ["a send", call(1, "eth_sendRawTransaction", ["0x02"]), 2],
    // Published a second ago: the served head answers, no provider.
    ["the block number (the served head answers it)", call(1, "eth_blockNumber"), 0],
    ["the pending block", blockCall(1, "pending"), 2],
    ["a made-up method", call(1, "eth_madeUp"), 2],
  ])("%s is bypassed, every time", async (_name, body, providerCalls) => {
    const h = harness();
    await h.rpc(body);
    const again = await h.rpc(body);
    expect(again.headers["x-gateway-cache"]).toBe("bypass");
    expect(h.upstream.callsTo(P1, { headPolls: false })).toBe(providerCalls);
  });

  it("an unknown receipt (null) is looked up and asked again every time", async () => {
    const h = harness();
    await h.rpc(call(1, "eth_getTransactionReceipt", [TX]));
    const again = await h.rpc(call(2, "eth_getTransactionReceipt", [TX]));
    expect(again.headers["x-gateway-cache"]).toBe("miss");
    expect(again.cacheClass).toBe("never");
    expect(h.upstream.callsTo(P1)).toBe(2);
    expect(h.shared.writes).toEqual([]);
  });

  it("an error answer is never kept", async () => {
    const h = harness();
    h.upstream.script(P1, () =>
      answer('{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted"}}'),
    );
    const body = call(1, "eth_call", [
      { to: "0x0000000000000000000000000000000000000001" },
      hex(50),
    ]);
    await h.rpc(body);
    expect((await h.rpc(body)).headers["x-gateway-cache"]).toBe("miss");
    expect(h.upstream.callsTo(P1)).toBe(2);
  });

  it("with no chain position, nothing about a block is cached; the chain id still is", async () => {
    const h = harness({}, { head: null });
    await h.rpc(blockCall(1, 1));
    expect((await h.rpc(blockCall(2, 1))).headers["x-gateway-cache"]).toBe("bypass");
    await h.rpc(call(3, "eth_chainId"));
    expect((await h.rpc(call(4, "eth_chainId"))).headers["x-gateway-cache"]).toBe("hit-memory");
  });

  it("a chain position older than three check intervals counts as none", async () => {
    const h = harness({}, { head: { ...HEAD, updatedAt: NOW - 46_000 } });
    await h.rpc(blockCall(1, 1));
    expect((await h.rpc(blockCall(2, 1))).headers["x-gateway-cache"]).toBe("bypass");
  });
});

describe("switches and bounds", () => {
  it("cache: false bypasses every call and keeps nothing", async () => {
    const h = harness({ cache: false });
    await h.rpc(blockCall(1, 100));
    const again = await h.rpc(blockCall(2, 100));
    expect(again.headers["x-gateway-cache"]).toBe("bypass");
    // GET mode's Cache-Control still follows the answer's class.
    expect(again.cacheClass).toBe("immutable");
    expect(h.upstream.callsTo(P1)).toBe(2);
    expect(h.shared.writes).toEqual([]);
  });

  it("a batch's answer has no class: GET mode's Cache-Control follows a lone call only", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 100));
    const response = await h.rpc(batch(blockCall(2, 100)));
    expect(response.headers["x-gateway-cache"]).toBe("hit-memory");
    expect(response.cacheClass).toBe("never");
  });

  it("a call the gateway refused before any lookup is a bypass in the header, in its place", async () => {
    const h = harness({ methods_deny: ["debug_*"] });
    const response = await h.rpc(batch(call(1, "debug_traceBlock", []), blockCall(2, 100)));
    expect(response.headers["x-gateway-cache"]).toBe("bypass,miss");
  });

  it("diagnostic_headers: false leaves the header out, not the cache", async () => {
    const h = harness({ diagnostic_headers: false });
    await h.rpc(blockCall(1, 100));
    const again = await h.rpc(blockCall(2, 100));
    expect(again.headers["x-gateway-cache"]).toBeUndefined();
    expect(h.upstream.callsTo(P1)).toBe(1);
  });

  it("memory holds at most cache_memory_bytes: the least recently used answers go first", async () => {
    const h = harness({}, { memoryBytes: 1000 });
    for (const number of [1, 2, 3, 4, 5]) await h.rpc(blockCall(number, number));
    const usage = h.container.answerCache("net").memory;
    expect(usage.bytes).toBeLessThanOrEqual(1000);
    expect(usage.entries).toBeLessThan(5);
    expect((await h.rpc(blockCall(9, 5))).headers["x-gateway-cache"]).toBe("hit-memory");
    // The oldest went to the shared tier only.
    expect((await h.rpc(blockCall(9, 1))).headers["x-gateway-cache"]).toBe("hit-shared");
  });

  it("hits and misses are counted by network and class, and shown per class", async () => {
    const h = harness();
    await h.rpc(blockCall(1, 100));
    await h.rpc(blockCall(2, 100));
    await h.rpc(blockCall(3, 115));
    await h.rpc(call(4, "eth_getTransactionReceipt", [TX]));
    const cacheCounts = h.telemetry.counts.filter((c) => c.name.startsWith("cache_"));
    expect(cacheCounts).toEqual([
      { name: "cache_misses", dimensions: { network: "net", class: "immutable" } },
      { name: "cache_hits", dimensions: { network: "net", class: "immutable" } },
      { name: "cache_misses", dimensions: { network: "net", class: "unfinalized" } },
      { name: "cache_misses", dimensions: { network: "net", class: "never" } },
    ]);
    expect(h.container.answerCache("net").classes).toEqual({
      immutable: { hits: 1, misses: 1, ratio: 0.5 },
      unfinalized: { hits: 0, misses: 1, ratio: 0 },
      realtime: { hits: 0, misses: 0, ratio: null },
      never: { hits: 0, misses: 1, ratio: 0 },
    });
  });
});

describe("a served head ahead of every provider (docs/behaviour.md §10.4)", () => {
  // The provider's head is 118, the served head 120: published a few blocks early from one
  // provider's eth_blockNumber, or before a revert shortened the chain.
  const shortChain = (method: string, params: unknown[]): unknown => {
    if (method === "eth_getBalance") {
      if (params[1] === "latest") return "0x76";
      return Number.parseInt(String(params[1]).slice(2), 16) > 118 ? null : "0x1";
    }
    if (method !== "eth_getBlockByNumber") return chain(method, params);
    if (params[0] === "latest") return { number: hex(118), hash: hashOf(118) };
    const number = Number.parseInt(String(params[0]).slice(2), 16);
    return number > 118 ? null : chain(method, params);
  };
  /** The monitor saw the provider at 118 over a block time ago (12 s): it can have reached 120. */
  const withQuorumAt118 = () => {
    // Published a few seconds ago: every container answers it now.
    const head = { ...HEAD, served: { block: 120, at: NOW - 5_000 } };
    const h = harness({}, { results: shortChain, head });
    h.store.setQuorum("net", {
      head: 118,
      headTimestamp: NOW / 1000 - 24,
      members: ["p1"],
      excluded: {},
      heads: { p1: { number: 118, timestamp: NOW / 1000 - 24 } },
      computedAt: NOW - 13_000,
    });
    return h;
  };

  it("a call about latest, pinned to the served head and answered from behind, is sent once more as written and answered", async () => {
    const h = withQuorumAt118();
    const response = await h.rpc(blockCall(1, "latest"));
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { number: hex(118), hash: hashOf(118) },
    });
    expect(h.upstream.bodiesTo(P1)).toEqual([
      expect.stringContaining(`"${hex(120)}"`),
      expect.stringContaining('"latest"'),
    ]);
  });

  it("that answer is not kept under the pinned block's key: the balance at block 120 asked by number goes to the provider", async () => {
    const h = withQuorumAt118();
    const address = "0x0000000000000000000000000000000000000001";
    const latest = await h.rpc(call(1, "eth_getBalance", [address, "latest"]));
    expect(JSON.parse(latest.body).result).toBe("0x76");
    const byNumber = await h.rpc(call(2, "eth_getBalance", [address, hex(120)]));
    expect(byNumber.headers["x-gateway-cache"]).not.toBe("hit-memory");
    expect(JSON.parse(byNumber.body).result).not.toBe("0x76");
    expect(h.upstream.bodiesTo(P1)).toHaveLength(3);
  });

  it("a call naming the block itself is not resent: only a tag the gateway pinned is", async () => {
    const h = withQuorumAt118();
    const response = await h.rpc(blockCall(1, 120));
    expect(JSON.parse(response.body).error?.code).toBe(-32603);
    expect(h.upstream.bodiesTo(P1)).toHaveLength(1);
  });

  it("in a batch, only the members every provider answered from behind are resent", async () => {
    const h = withQuorumAt118();
    const response = await h.rpc(batch(blockCall(1, "latest"), blockCall(2, 100)));
    expect(JSON.parse(response.body)).toEqual([
      { jsonrpc: "2.0", id: 1, result: { number: hex(118), hash: hashOf(118) } },
      { jsonrpc: "2.0", id: 2, result: { number: hex(100), hash: hash("a") } },
    ]);
    const bodies = h.upstream.bodiesTo(P1);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toContain('"latest"');
    expect(bodies[1]).not.toContain(`"${hex(100)}"`);
  });
});
