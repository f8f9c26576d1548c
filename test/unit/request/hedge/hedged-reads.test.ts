import { describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../../functions/core/config/config-schema.ts";
import { HEALTHY } from "../../../../functions/core/health/health.ts";
import type { HedgeTimer, Telemetry } from "../../../../functions/core/ports.ts";
import { gatewayHarness } from "../../../support/gateway-harness.ts";
import { answer, held, resultFor, ScriptedUpstream } from "../../../support/scripted-upstream.ts";

/**
 * Hedged reads through the whole request pipeline (core/request/gateway.ts and core/request/*), with a
 * scripted upstream whose answers the test hands over when it chooses, and a hedge timer the
 * test fires itself: no wall-clock time is involved.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const P3 = "http://p3.test/";

type Network = ConfigInput["networks"][string];
type Providers = Network["providers"];

const three: Providers = [
  { name: "p1", url: P1, priority: 3 },
  { name: "p2", url: P2, priority: 2 },
  { name: "p3", url: P3, priority: 1 },
];

/**
 * A hedge timer the test fires: each wait is kept with the delay it was asked for. The turn of
 * the event loop a hedge takes after its delay (a wait of 0) passes at once.
 */
function manualTimer() {
  const waits: Array<{ ms: number; fire: () => void; cancelled: boolean }> = [];
  const timer: HedgeTimer = (ms) => {
    if (ms === 0) return { done: Promise.resolve(), cancel: () => undefined };
    let fire: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      fire = resolve;
    });
    const wait = { ms, fire: () => fire(), cancelled: false };
    waits.push(wait);
    return {
      done,
      cancel: () => {
        wait.cancelled = true;
      },
    };
  };
  return {
    timer,
    waits,
    /** Fires the latest wait once the request has reached it. */
    async fire() {
      await until(() => waits.some((wait) => !wait.cancelled));
      waits
        .filter((wait) => !wait.cancelled)
        .at(-1)
        ?.fire();
    },
  };
}

/** Lets the pipeline run until `condition` holds (it waits on promises the test resolves). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !condition(); turn++) await new Promise(setImmediate);
  if (!condition()) throw new Error("the pipeline never got there");
}

function harness(
  providers: Providers,
  overrides: Partial<Network> = {},
  options: { advanceClock?: boolean } = {},
) {
  const counts: Array<{ name: string; dimensions: Record<string, string> }> = [];
  const outcomes: Array<{ provider: string; ok: boolean; latencyMs: number }> = [];
  const telemetry: Telemetry = {
    log: () => undefined,
    count: (name, dimensions) => counts.push({ name, dimensions }),
    measure: () => undefined,
  };
  const timer = manualTimer();
  const { gateway, store, upstream, network, advance, rpc } = gatewayHarness({
    providers,
    network: overrides,
    // The answer cache would answer a repeated read itself, and these reads must go upstream.
    config: { cache: false },
    now: NOW,
    upstream: (move) =>
      new ScriptedUpstream((ms) => {
        if (options.advanceClock !== false) move(ms);
      }),
    deps: {
      telemetry,
      recordOutcome: (_, provider, ok, latencyMs) => outcomes.push({ provider, ok, latencyMs }),
      hedgeTimer: timer.timer,
    },
  });
  const hedges = (outcome: string) =>
    counts.filter((c) => c.name === "hedges" && c.dimensions.outcome === outcome).length;
  return {
    gateway,
    store,
    upstream,
    counts,
    outcomes,
    timer,
    network,
    hedges,
    rpc,
    /** Moves the test clock (p90s are read again at most once a second). */
    tick: advance,
    /**
     * Ten requests p1 answers at once, so the budget (0.1 of the requests of the last minute)
     * has room for a hedge; what they leave in the upstream's and the recorder's lists is cleared.
     */
    async warmUp() {
      upstream.script(P1, ok("0x1"));
      for (let id = 0; id < 10; id++) await rpc(call(id));
      upstream.calls.clear();
      outcomes.length = 0;
    },
  };
}

const call = (id: number, method = "eth_gasPrice", params: unknown[] = []) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const result = (id: unknown, value: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, result: value });
const ok = (value: string) => resultFor(() => value);

describe("a read whose first attempt is slow goes to the next provider too", () => {
  it("the hedge's answer wins, byte for byte with the caller's id; the slow attempt is aborted and counts for nothing", async () => {
    const h = harness(three, { force_rotate_errors: 1 });
    await h.warmUp();
    const slow = held();
    h.upstream.script(P1, slow.script);
    h.upstream.script(P2, () => answer(`{"jsonrpc":"2.0", "id":7 ,"result":"0x2"}`));
    const pending = h.rpc(call(7));
    await h.timer.fire();
    const response = await pending;
    expect(response.body).toBe(`{"jsonrpc":"2.0", "id":7 ,"result":"0x2"}`);
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(response.headers["x-gateway-attempts"]).toBe("2");
    expect(h.upstream.bodiesTo(P2)).toEqual([call(7)]);
    expect(h.upstream.aborted.map((request) => request.url)).toEqual([P1]);
    // The loser's late answer, an unclassified error, is never judged: no force-rotate.
    slow.release(
      answer(`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"leveldb: closed"}}`),
    );
    expect(h.gateway.demoted(h.network).size).toBe(0);
    expect(h.store.healthWrites).toEqual([]);
    expect(h.outcomes.map((o) => o.provider)).toEqual(["p2"]);
    expect(h.counts.filter((c) => c.name === "retried_errors")).toEqual([]);
    expect([h.hedges("started"), h.hedges("won"), h.hedges("aborted")]).toEqual([1, 1, 1]);
    // Counted against the provider whose attempt was slow.
    expect(
      new Set(h.counts.filter((c) => c.name === "hedges").map((c) => c.dimensions.provider)),
    ).toEqual(new Set(["p1"]));
  });

  it("the first attempt answering after the hedge started wins, and the hedge is aborted", async () => {
    const h = harness(three);
    await h.warmUp();
    const slow = held();
    const hedge = held();
    h.upstream.script(P1, slow.script);
    h.upstream.script(P2, hedge.script);
    const pending = h.rpc(call(1));
    await h.timer.fire();
    await until(() => hedge.waiting === 1);
    slow.release(answer(result(1, "0x1")));
    const response = await pending;
    expect(response.body).toBe(result(1, "0x1"));
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    expect(h.upstream.aborted.map((request) => request.url)).toEqual([P2]);
    expect(h.outcomes.map((o) => o.provider)).toEqual(["p1"]);
    expect([h.hedges("started"), h.hedges("won"), h.hedges("aborted")]).toEqual([1, 0, 1]);
  });

  it("a first attempt answering before the delay is the only upstream call", async () => {
    const h = harness(three);
    h.upstream.script(P1, ok("0x1"));
    const response = await h.rpc(call(1));
    expect(response.body).toBe(result(1, "0x1"));
    expect(h.upstream.callsTo(P2)).toBe(0);
    expect(h.timer.waits.map((wait) => wait.cancelled)).toEqual([true]);
    expect(h.counts.filter((c) => c.name === "hedges")).toEqual([]);
  });

  it("a hedge that fails while the first attempt runs counts as the failure it is; the first's answer still wins", async () => {
    const h = harness(three);
    await h.warmUp();
    const slow = held();
    h.upstream.script(P1, slow.script);
    h.upstream.script(P2, () => answer("rate limited", 1, 429));
    const pending = h.rpc(call(1));
    await h.timer.fire();
    await until(() => h.upstream.callsTo(P2) === 1);
    slow.release(answer(result(1, "0x1")));
    const response = await pending;
    expect(response.body).toBe(result(1, "0x1"));
    expect(h.upstream.aborted).toEqual([]);
    expect(h.store.healthWrites.map((w) => [w.provider, w.next.reason])).toEqual([
      ["p2", "rate_limit"],
    ]);
    expect([h.hedges("started"), h.hedges("won"), h.hedges("aborted")]).toEqual([1, 0, 0]);
  });

  it("a first attempt that fails while the hedge runs is the failure it is, and the hedge is its retry", async () => {
    const h = harness(three);
    await h.warmUp();
    const slow = held();
    const hedge = held();
    h.upstream.script(P1, slow.script);
    h.upstream.script(P2, hedge.script);
    const pending = h.rpc(call(1));
    await h.timer.fire();
    await until(() => hedge.waiting === 1);
    slow.release(answer("bad gateway", 1, 502));
    await until(() => h.counts.some((c) => c.name === "retried_errors"));
    hedge.release(answer(result(1, "0x2")));
    const response = await pending;
    expect(response.body).toBe(result(1, "0x2"));
    expect(h.upstream.callsTo(P3)).toBe(0);
    expect(h.store.healthWrites.map((w) => w.provider)).toEqual(["p1"]);
    expect([h.hedges("started"), h.hedges("won"), h.hedges("aborted")]).toEqual([1, 1, 0]);
  });

  it("a small batch is hedged whole and answered in the caller's order", async () => {
    const h = harness(three);
    await h.warmUp();
    const slow = held();
    h.upstream.script(P1, slow.script);
    h.upstream.script(P2, (request) => {
      const calls = JSON.parse(request.body) as Array<{ id: number }>;
      return answer(
        `[${[...calls]
          .reverse()
          .map((c) => result(c.id, `0x${c.id}`))
          .join(",")}]`,
      );
    });
    const pending = h.rpc(`[${call(10)},${call(11, "eth_getBalance", ["0x01", "0x5"])}]`);
    await h.timer.fire();
    const response = await pending;
    expect(response.body).toBe(`[${result(10, "0x0")},${result(11, "0x1")}]`);
    expect(h.upstream.callsTo(P2)).toBe(1);
  });
});

describe("when the hedge fires", () => {
  it.each([
    { name: "no answers seen yet: hedge.max_ms", elapsed: null, delay: 2000 },
    { name: "a fast provider: hedge.min_ms", elapsed: 3, delay: 150 },
    { name: "its p90 in between (read to the bin's upper bound)", elapsed: 400, delay: 431 },
    { name: "a provider slower than hedge.max_ms: hedge.max_ms", elapsed: 2500, delay: 2000 },
  ])("$name", async ({ elapsed, delay }) => {
    const h = harness(three, {}, { advanceClock: false });
    h.upstream.script(P1, (request) =>
      answer(result(JSON.parse(request.body).id, "0x1"), elapsed ?? 1),
    );
    const warmUp = elapsed === null ? 0 : 50;
    for (let id = 0; id < warmUp; id++) await h.rpc(call(id));
    await h.rpc(call(99));
    expect(h.timer.waits.at(-1)?.ms).toBe(delay);
  });

  it("the p90 is per method; a method with too few answers takes the provider's p90 over its reads", async () => {
    const h = harness(three, {}, { advanceClock: false });
    h.upstream.script(P1, (request) => {
      const { id, method } = JSON.parse(request.body) as { id: number; method: string };
      return answer(result(id, "0x1"), method === "eth_gasPrice" ? 400 : 900);
    });
    for (let id = 0; id < 50; id++) await h.rpc(call(id));
    for (let id = 0; id < 5; id++) await h.rpc(call(id, "eth_maxPriorityFeePerGas"));
    // 5 answers of its own are too few: the p90 of the provider's 55 (50 × 400 ms, 5 × 900 ms).
    await h.rpc(call(1, "eth_maxPriorityFeePerGas"));
    expect(h.timer.waits.at(-1)?.ms).toBe(431);
    for (let id = 0; id < 44; id++) await h.rpc(call(id, "eth_maxPriorityFeePerGas"));
    // 50 of its own.
    await h.rpc(call(1, "eth_maxPriorityFeePerGas"));
    expect(h.timer.waits.at(-1)?.ms).toBe(940);
    // A method never seen: the provider's p90 over its reads (50 × 400 ms, 52 × 900 ms), read
    // again once a second has passed.
    await h.rpc(call(1, "eth_blobBaseFee"));
    expect(h.timer.waits.at(-1)?.ms).toBe(431);
    h.tick(1000);
    await h.rpc(call(1, "eth_blobBaseFee"));
    expect(h.timer.waits.at(-1)?.ms).toBe(940);
    await h.rpc(call(1, "eth_gasPrice"));
    expect(h.timer.waits.at(-1)?.ms).toBe(431);
  });
});

describe("never hedged", () => {
  const cases: Array<{
    name: string;
    body: string;
    overrides?: Partial<Network>;
    value?: unknown;
  }> = [
    {
      name: "eth_getLogs (heavy)",
      body: call(1, "eth_getLogs", [{ fromBlock: "0x1" }]),
      value: [],
    },
    { name: "a filter", body: call(1, "eth_newFilter", [{}]) },
    { name: "debug_*", body: call(1, "debug_getRawHeader", ["0x1"]) },
    // A trace of a block is a list (the catalogue checks the shape).
    { name: "trace_*", body: call(1, "trace_block", ["0x1"]), value: [] },
    {
      name: "a lookup by hash",
      body: call(1, "eth_getTransactionReceipt", [`0x${"ab".repeat(32)}`]),
      value: null,
    },
    { name: "a method outside the catalogue", body: call(1, "acme_fastRead") },
    {
      name: "a batch over hedge.max_batch",
      body: `[${Array.from({ length: 3 }, (_, id) => call(id)).join(",")}]`,
      overrides: { hedge: { max_batch: 2 } },
    },
    {
      name: "anything with hedge.max_ratio 0",
      body: call(1),
      overrides: { hedge: { max_ratio: 0 } },
    },
    { name: "anything with max_attempts 1", body: call(1), overrides: { max_attempts: 1 } },
  ];
  it.each(cases)("$name", async ({ body, overrides, value = "0x1" }) => {
    const h = harness(three, overrides);
    await h.warmUp();
    const slow = held();
    h.upstream.script(P1, slow.script);
    const pending = h.rpc(body);
    await until(() => slow.waiting === 1);
    // No wait was asked for, or none that may start a hedge.
    for (const wait of h.timer.waits) wait.fire();
    await new Promise(setImmediate);
    const batchSize = body.startsWith("[") ? (JSON.parse(body) as unknown[]).length : 0;
    slow.release(
      answer(
        batchSize > 0
          ? `[${Array.from({ length: batchSize }, (_, id) => result(id, value)).join(",")}]`
          : result(1, value),
      ),
    );
    await pending;
    expect(h.upstream.callsTo(P2)).toBe(0);
    expect(h.counts.filter((c) => c.name === "hedges")).toEqual([]);
  });

  it("to a provider in emergency use (every other one blacklisted)", async () => {
    const h = harness(three.slice(0, 2));
    h.store.setHealth("net", "p2", {
      ...HEALTHY,
      strikes: 1,
      reason: "timeout",
      blacklistedUntil: NOW + 60_000,
      version: 1,
    });
    await h.warmUp();
    const slow = held();
    h.upstream.script(P1, slow.script);
    const pending = h.rpc(call(1));
    await until(() => slow.waiting === 1);
    // With no other provider to hedge on, not even the hedging delay is started.
    expect(h.timer.waits.filter((wait) => !wait.cancelled)).toEqual([]);
    slow.release(answer(result(1, "0x1")));
    expect((await pending).body).toBe(result(1, "0x1"));
    expect(h.upstream.callsTo(P2)).toBe(0);
  });
});

describe("the budget: hedge.max_ratio of a container's requests a minute", () => {
  it("at 0.1, ten requests earn one hedge, and the next slow one waits for its own answer", async () => {
    const h = harness(three, { hedge: { max_ratio: 0.1 } });
    let slowFrom = Number.POSITIVE_INFINITY;
    const slow = held();
    h.upstream.script(P1, (request, n) =>
      n >= slowFrom ? slow.script(request, n) : answer(result(JSON.parse(request.body).id, "0x1")),
    );
    h.upstream.script(P2, ok("0x2"));
    for (let id = 0; id < 9; id++) await h.rpc(call(id));
    slowFrom = 10;
    // The tenth request: 1 hedge ≤ 0.1 × 10 requests.
    const tenth = h.rpc(call(10));
    await h.timer.fire();
    expect((await tenth).headers["x-gateway-provider"]).toBe("p2");
    // The eleventh: 2 hedges > 0.1 × 11 requests. It waits for p1.
    const eleventh = h.rpc(call(11));
    await h.timer.fire();
    await until(() => slow.waiting === 2);
    await new Promise(setImmediate);
    expect(h.upstream.callsTo(P2)).toBe(1);
    slow.release(answer(result(10, "late")));
    slow.release(answer(result(11, "0x1")));
    expect((await eleventh).headers["x-gateway-provider"]).toBe("p1");
    expect(h.hedges("started")).toBe(1);
  });
});
