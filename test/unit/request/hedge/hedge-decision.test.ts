import { describe, expect, it } from "vitest";
import { buildModel, parseConfig } from "../../../../functions/core/config/network-model.ts";
import { HedgeBudget } from "../../../../functions/core/request/hedge/hedge-budget.ts";
import {
  type HedgeSettings,
  hedgeableMethod,
  hedgeDelayMs,
  whyNotHedged,
} from "../../../../functions/core/request/hedge/hedge-policy.ts";
import { LatencyWindows } from "../../../../functions/core/request/hedge/latency-window.ts";

/** The hedge decision, pure: which reads, how long to wait, and how many a minute. */

const DEFAULTS: HedgeSettings = { max_ratio: 0.1, min_ms: 150, max_ms: 2000, max_batch: 10 };

describe("which methods may be hedged", () => {
  it.each([
    ["eth_call", false], // heavy: runs the caller's code
    ["eth_getBalance", true],
    ["eth_blockNumber", true],
    ["eth_chainId", true],
    ["eth_getBlockByNumber", true],
    ["eth_gasPrice", true],
    ["eth_feeHistory", true],
    ["eth_sendRawTransaction", false], // a send
    ["eth_sign", false],
    ["eth_newFilter", false], // a filter
    ["eth_getFilterChanges", false],
    ["eth_subscribe", false],
    ["eth_getLogs", false], // heavy
    ["eth_getProof", false],
    ["debug_getRawHeader", false], // debug_*, though light
    ["debug_traceTransaction", false],
    ["trace_block", false],
    ["eth_getTransactionReceipt", false], // looked up by hash
    ["eth_getBlockByHash", false],
    ["eth_getTransactionByHash", false],
    ["acme_fastRead", false], // not in the catalogue
  ])("%s: %s", (method, expected) => {
    expect(hedgeableMethod(method)).toBe(expected);
  });
});

describe("whether a group of calls may be hedged", () => {
  it.each<{
    name: string;
    methods: string[];
    settings?: Partial<HedgeSettings>;
    reason: ReturnType<typeof whyNotHedged>;
  }>([
    { name: "a single read", methods: ["eth_getBalance"], reason: null },
    {
      name: "a batch of reads at max_batch",
      methods: Array(10).fill("eth_getBalance"),
      reason: null,
    },
    {
      name: "a batch over max_batch",
      methods: Array(11).fill("eth_getBalance"),
      reason: "batch_too_large",
    },
    {
      name: "a batch with one send in it",
      methods: ["eth_getBalance", "eth_sendRawTransaction"],
      reason: "not_a_hedgeable_read",
    },
    { name: "hedging off", methods: ["eth_getBalance"], settings: { max_ratio: 0 }, reason: "off" },
    { name: "no calls", methods: [], reason: "not_a_hedgeable_read" },
  ])("$name → $reason", ({ methods, settings, reason }) => {
    expect(whyNotHedged(methods, { ...DEFAULTS, ...settings })).toBe(reason);
  });
});

describe("the delay before the hedge", () => {
  it.each([
    { p90: null, delay: 2000, why: "no p90 yet: max_ms" },
    { p90: 3, delay: 150, why: "under min_ms: min_ms" },
    { p90: 150, delay: 150, why: "at min_ms" },
    { p90: 431.2, delay: 432, why: "between: the p90, rounded up to the ms" },
    { p90: 2000, delay: 2000, why: "at max_ms" },
    { p90: 9000, delay: 2000, why: "over max_ms: max_ms" },
  ])("p90 $p90 → $delay ms ($why)", ({ p90, delay }) => {
    expect(hedgeDelayMs(p90, DEFAULTS)).toBe(delay);
  });
});

describe("latency quantiles over a sliding window", () => {
  const T = 1_800_000_000_000;

  it("is unknown below the minimum of samples", () => {
    const windows = new LatencyWindows(60);
    for (let i = 0; i < 49; i++) windows.record("k", 10, T);
    expect(windows.quantile("k", 0.9, T, 50)).toBeNull();
    windows.record("k", 10, T);
    expect(windows.quantile("k", 0.9, T, 50)).not.toBeNull();
  });

  it.each([
    {
      name: "all alike: the upper bound of their bin, within 9 %",
      samples: [[100, 100]],
      p90: 107.6,
    },
    {
      name: "10 % slow: the p90 is still the fast answers'",
      samples: [
        [90, 5],
        [10, 2000],
      ],
      p90: 5.2,
    },
    {
      name: "11 % slow: the p90 is the slow answers'",
      samples: [
        [89, 5],
        [11, 2000],
      ],
      p90: 2048,
    },
    { name: "at most 1 ms", samples: [[60, 0.2]], p90: 1 },
    { name: "beyond the last bin", samples: [[60, 100_000]], p90: 65_536 },
  ])("$name", ({ samples, p90 }) => {
    const windows = new LatencyWindows(60);
    for (const [count, ms] of samples as Array<[number, number]>) {
      for (let i = 0; i < count; i++) windows.record("k", ms, T);
    }
    expect(windows.quantile("k", 0.9, T, 50)).toBeCloseTo(p90, 1);
  });

  it("forgets answers older than the window, a slot (a sixth of it) at a time", () => {
    const windows = new LatencyWindows(60);
    for (let i = 0; i < 50; i++) windows.record("k", 500, T);
    for (let i = 0; i < 50; i++) windows.record("k", 5, T + 30_000);
    expect(windows.quantile("k", 0.9, T + 30_000, 50)).toBeGreaterThan(400);
    expect(windows.quantile("k", 0.9, T + 70_000, 50)).toBeLessThan(10);
    expect(windows.quantile("k", 0.9, T + 100_000, 50)).toBeNull();
  });

  it("keeps keys apart", () => {
    const windows = new LatencyWindows(60);
    for (let i = 0; i < 50; i++) windows.record("a", 5, T);
    expect(windows.quantile("b", 0.9, T, 1)).toBeNull();
  });
});

describe("the hedge budget: hedges ≤ ratio × requests over the last minute", () => {
  const T = 1_800_000_000_000;

  it.each([
    { ratio: 0.1, requests: 9, hedges: 0 },
    { ratio: 0.1, requests: 10, hedges: 1 },
    { ratio: 0.1, requests: 30, hedges: 3 },
    { ratio: 0.1, requests: 1000, hedges: 100 },
    { ratio: 0.5, requests: 3, hedges: 1 },
    { ratio: 1, requests: 5, hedges: 5 },
    { ratio: 0, requests: 1000, hedges: 0 },
  ])("ratio $ratio, $requests requests → $hedges hedges", ({ ratio, requests, hedges }) => {
    const budget = new HedgeBudget(60);
    for (let i = 0; i < requests; i++) budget.request(T);
    let taken = 0;
    while (taken <= requests && budget.take(T, ratio)) taken++;
    expect(taken).toBe(hedges);
  });

  it("hedges taken earlier in the minute count against later ones; a minute later, both are gone", () => {
    const budget = new HedgeBudget(60);
    for (let i = 0; i < 20; i++) budget.request(T);
    expect([
      budget.take(T, 0.1),
      budget.take(T + 20_000, 0.1),
      budget.take(T + 20_000, 0.1),
    ]).toEqual([true, true, false]);
    budget.request(T + 80_000);
    expect(budget.take(T + 80_000, 0.1)).toBe(false);
    for (let i = 0; i < 9; i++) budget.request(T + 80_000);
    expect(budget.take(T + 80_000, 0.1)).toBe(true);
  });
});

describe("the hedge keys in the config", () => {
  const network = (overrides: Record<string, unknown> = {}) => ({
    chain_id: 1,
    providers: [{ url: "https://a.example/rpc" }],
    ...overrides,
  });
  const problems = (config: Record<string, unknown>) => {
    const result = parseConfig({ networks: { eth: network() }, ...config });
    return result.ok ? [] : result.problems.map((problem) => `${problem.path}: ${problem.message}`);
  };

  it("defaults, and a network overrides them key by key", () => {
    const result = parseConfig({
      hedge: { max_ms: 1500 },
      networks: { eth: network({ hedge: { max_ratio: 0 } }), base: network() },
    });
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    const model = buildModel(result.config, (url) => url);
    expect(model.networks.get("eth")?.settings.hedge).toEqual({
      max_ratio: 0,
      min_ms: 150,
      max_ms: 1500,
      max_batch: 10,
    });
    expect(model.networks.get("base")?.settings.hedge.max_ratio).toBe(0.1);
  });

  it.each([
    {
      config: { hedge: { min_ms: 500, max_ms: 400 } },
      problem:
        "hedge.min_ms: hedge.min_ms 500 is over hedge.max_ms 400: the delay before a hedge is clamped between them",
    },
    {
      config: { hedge: { max_ms: 100 } },
      problem:
        "hedge.min_ms: hedge.min_ms 150 is over hedge.max_ms 100: the delay before a hedge is clamped between them",
    },
    {
      config: { networks: { eth: network({ hedge: { min_ms: 3000 } }) } },
      problem:
        "networks.eth.hedge.min_ms: hedge.min_ms 3000 in network eth is over hedge.max_ms 2000: the delay before a hedge is clamped between them",
    },
    {
      config: { hedge: { max_ratio: 1.5 } },
      problem: "hedge.max_ratio: Too big: expected number to be <=1",
    },
    {
      config: { hedge: { max_batch: 0 } },
      problem: "hedge.max_batch: Too small: expected number to be >0",
    },
    {
      config: { hedge: { hedge_all: true } },
      problem:
        'hedge: unknown key(s) "hedge_all": check the spelling against docs/config-reference.md',
    },
  ])("refuses $config", ({ config, problem }) => {
    expect(problems(config)).toEqual([problem]);
  });
});
