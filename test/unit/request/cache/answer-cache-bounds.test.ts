import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import type { ConfigInput } from "../../../../functions/core/config/config-schema.ts";
import { GuardCounts } from "../../../../functions/core/status/guards.ts";
import { gatewayHarness, type HarnessNetwork } from "../../../support/gateway-harness.ts";
import { MemoryAnswerStore } from "../../../support/memory-answer-store.ts";
import { recordingTelemetry } from "../../../support/recording-telemetry.ts";
import { answer, ScriptedUpstream } from "../../../support/scripted-upstream.ts";

/**
 * What one request, and one container in a minute, may make the answer cache keep
 * (docs/behaviour.md §11.12): shared-tier writes per request (its log queries' pieces
 * included) and per container-minute, the shared item's size, the memory a request may fill,
 * and answers computed from the caller's own input, never shared. Each refusal is counted by
 * guard. A scripted node, the in-memory shared tier and a test clock.
 */

const NOW = 1_800_000_000_000 - (1_800_000_000_000 % 60_000) + 1_000;
const P1 = "http://p1.test/";
const hash = (digit: string) => `0x${digit.repeat(64)}`;
const hex = (n: number) => `0x${n.toString(16)}`;
const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

/** finalized 100, latest 120. */
const HEAD: ChainHead = {
  latest: { number: 120, hash: hash("c") },
  safe: { number: 110, hash: hash("b") },
  finalized: { number: 100, hash: hash("a") },
  served: { block: 120, at: NOW - 1000 },
  previousServed: null,
  updatedAt: NOW - 1000,
  reorgSeenAt: 0,
};

/** 280,000 bytes no compressor shrinks: what a caller's own contract can return. */
const HUGE = `0x${randomBytes(280_000).toString("hex")}`;

type Call = { id: unknown; method: string; params: unknown[] };

function results(call: Call): unknown {
  switch (call.method) {
    case "eth_getBalance":
      return "0x1";
    case "eth_call":
      return HUGE;
    case "eth_getLogs":
      return [];
    case "eth_getBlockByNumber":
      return { number: call.params[0], hash: hash("d"), big: call.params[1] === true ? HUGE : "" };
    default:
      return "0x";
  }
}

function node(request: { body: string }) {
  const parsed = JSON.parse(request.body) as Call | Call[];
  const one = (c: Call) =>
    `{"jsonrpc":"2.0","id":${JSON.stringify(c.id)},"result":${JSON.stringify(results(c))}}`;
  return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
}

function harness(
  config: Omit<Partial<ConfigInput>, "networks"> = {},
  network: HarnessNetwork = {},
  provider: { max_logs_range?: number } = {},
) {
  const telemetry = recordingTelemetry();
  const counts = telemetry.metrics;
  const guards = new GuardCounts(telemetry);
  let shared!: MemoryAnswerStore;
  const h = gatewayHarness({
    providers: [{ name: "p1", url: P1, ...provider }],
    network,
    config,
    stateCache: { ttlMs: 0, maxStaleMs: -1 },
    now: NOW,
    upstream: () => new ScriptedUpstream().script(P1, node),
    deps: ({ clock }) => {
      shared = new MemoryAnswerStore(clock);
      return { telemetry, sharedAnswers: shared, guards };
    },
  });
  h.store.setHead("net", HEAD);
  // The shared writes are beside the answer: let them land.
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { ...h, shared, guards, counts, settle };
}

const call = (id: unknown, method: string, params: unknown[]) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const batch = (calls: string[]) => `[${calls.join(",")}]`;
/** `eth_getBalance` of `count` distinct addresses at finalized block 1. */
const balances = (from: number, count: number) =>
  batch(
    Array.from({ length: count }, (_, i) => call(i, "eth_getBalance", [address(from + i), "0x1"])),
  );

describe("shared-tier writes: per request and per container-minute", () => {
  it("regression: a batch of 100 finalized balances wrote 100 items; now 16, the rest in memory only", async () => {
    const h = harness({ max_batch: 100 });
    await h.rpc(balances(0, 100));
    await h.settle();
    expect(h.shared.writes).toHaveLength(16);
    expect(h.guards.counts("net").cache_shared_writes_per_request).toBe(84);
    // The 16 written were kept: no item refused for its size.
    expect(h.guards.counts("net").cache_shared_item_bytes).toBe(0);
    expect(h.counts).toContainEqual({
      name: "guard_refusals",
      dimensions: { network: "net", guard: "cache_shared_writes_per_request" },
      value: 1,
    });
    // Every answer is still served from this container's memory.
    const again = await h.rpc(balances(0, 100));
    expect(again.headers["x-gateway-cache"]?.split(",").every((s) => s === "hit-memory")).toBe(
      true,
    );
  });

  it.each([
    [0, 0],
    [1, 1],
    [16, 16],
  ])("cache_shared_writes_per_request %i: %i writes", async (bound, writes) => {
    const h = harness({}, { cache_shared_writes_per_request: bound });
    await h.rpc(balances(0, 20));
    await h.settle();
    expect(h.shared.writes).toHaveLength(writes);
  });

  it("a container writes at most cache_shared_writes_per_minute, every network together; the next minute writes again", async () => {
    const h = harness({ cache_shared_writes_per_minute: 20 });
    for (let request = 0; request < 3; request++) await h.rpc(balances(request * 16, 16));
    await h.settle();
    expect(h.shared.writes).toHaveLength(20);
    expect(h.guards.counts("net").cache_shared_writes_per_minute).toBe(28);
    h.advance(60_000);
    h.store.setHead("net", { ...HEAD, updatedAt: NOW + 59_000 });
    await h.rpc(balances(100, 1));
    await h.settle();
    expect(h.shared.writes).toHaveLength(21);
  });

  it("a log query's pieces spend the request's writes: 10 pieces and the whole, 4 writes", async () => {
    const h = harness({}, { cache_shared_writes_per_request: 4 }, { max_logs_range: 10 });
    const response = await h.rpc(call(1, "eth_getLogs", [{ fromBlock: hex(0), toBlock: hex(99) }]));
    expect(JSON.parse(response.body)).toMatchObject({ result: [] });
    await h.settle();
    expect(h.upstream.callsTo(P1)).toBe(10);
    expect(h.shared.writes).toHaveLength(4);
    expect(h.guards.counts("net").cache_shared_writes_per_request).toBe(7);
  });
});

describe("answers computed from the caller's input are never shared", () => {
  const overridden = (id: number, params: unknown[]) => call(id, "eth_call", params);
  const to = address(0xc0de);
  it.each([
    ["a state override", [{ to, data: "0x01" }, "0x1", { [to]: { code: "0x60" } }]],
    ["a block override", [{ to, data: "0x01" }, "0x1", {}, { number: "0x99" }]],
    ["creation code (no to)", [{ data: "0x6001" }, "0x1"]],
  ])(
    "regression: eth_call with %s at a finalized block went to the shared tier; now memory only",
    async (_name, params) => {
      const h = harness();
      const first = await h.rpc(overridden(1, params));
      const second = await h.rpc(overridden(2, params));
      await h.settle();
      expect([first, second].map((r) => r.headers["x-gateway-cache"])).toEqual([
        "miss",
        "hit-memory",
      ]);
      expect(h.shared.writes).toEqual([]);
      // Never looked up there either: nobody else asks for it.
      expect(h.shared.reads).toEqual([]);
      expect(h.guards.counts("net").cache_callers_answer).toBe(1);
    },
  );

  it("the same call without overrides may be shared: its 560 KB of random hex meets the item cap instead", async () => {
    const h = harness();
    await h.rpc(overridden(1, [{ to, data: "0x01" }, "0x1"]));
    await h.settle();
    expect(h.shared.writes).toHaveLength(0);
    expect(h.guards.counts("net").cache_shared_item_bytes).toBe(1);
    expect(h.guards.counts("net").cache_callers_answer).toBe(0);
  });
});

describe("the item cap and the memory a request may fill", () => {
  it("regression: five 280,000-byte answers wrote five ~300 KB items; now none, each kept in memory within the request's budget", async () => {
    const h = harness();
    const blocks = batch(
      Array.from({ length: 5 }, (_, i) => call(i, "eth_getBlockByNumber", [hex(i + 1), true])),
    );
    await h.rpc(blocks);
    await h.settle();
    expect(h.shared.writes).toEqual([]);
    expect(h.guards.counts("net").cache_shared_item_bytes).toBe(5);
    expect(h.container.answerCache("net").memory.entries).toBe(5);
  });

  it("cache_memory_request_bytes: answers past the request's budget are not kept in memory", async () => {
    // Two ~560 KB answers fit 1.5 MB; the third does not.
    const h = harness({ cache_memory_request_bytes: 1_500_000 });
    await h.rpc(
      batch(
        Array.from({ length: 3 }, (_, i) => call(i, "eth_getBlockByNumber", [hex(i + 1), true])),
      ),
    );
    expect(h.container.answerCache("net").memory.entries).toBe(2);
    expect(h.guards.counts("net").cache_memory_request_bytes).toBe(1);
    // The next request has a budget of its own.
    await h.rpc(call(9, "eth_getBlockByNumber", [hex(3), true]));
    expect(h.container.answerCache("net").memory.entries).toBe(3);
  });

  it("shared hits put in memory count against the budget too", async () => {
    const h = harness({ cache_memory_request_bytes: 2_000 });
    await h.rpc(balances(0, 16));
    await h.settle();
    const fresh = harness({ cache_memory_request_bytes: 2_000 });
    for (const write of h.shared.writes) {
      const [text] = [...(await h.shared.read("net", [write.key])).values()];
      await fresh.shared.write("net", write.key, text ?? "", NOW + 60_000, 65_536);
    }
    const response = await fresh.rpc(balances(0, 16));
    expect(response.headers["x-gateway-cache"]?.split(",")).toEqual(
      Array.from({ length: 16 }, () => "hit-shared"),
    );
    expect(fresh.container.answerCache("net").memory.bytes).toBeLessThanOrEqual(2_000);
    expect(fresh.guards.counts("net").cache_memory_request_bytes).toBeGreaterThan(0);
  });
});
