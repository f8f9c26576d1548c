import { describe, expect, it } from "vitest";
import { configSchema } from "../../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../../functions/core/config/network-model.ts";
import {
  headStatedBy,
  highestSighting,
  mayRaiseHead,
  ObservedHeads,
} from "../../../../functions/core/request/head/observed-head.ts";
import { reachableBlocks } from "../../../../functions/core/request/head/served-head.ts";
import { EMPTY_NETWORK_STATE } from "../../../../functions/core/routing/network-state.ts";
import type { SelectionContext } from "../../../../functions/core/routing/selection.ts";

/** Heads seen in answers (docs/behaviour.md §5.4): which answers state one, and how long it counts. */

const block = (number: string) => ({ jsonrpc: "2.0", id: 1, result: { number, hash: "0x01" } });
const HASH = `0x${"ab".repeat(32)}`;
const named = (blockNumber: string | null) => ({
  result: { blockNumber, blockHash: blockNumber === null ? null : HASH, transactionIndex: "0x0" },
});
const log = (blockNumber: string, removed = false) => ({ blockNumber, blockHash: HASH, removed });

describe("headStatedBy", () => {
  it.each<[string, unknown[], unknown, number | null]>([
    ["eth_blockNumber", [], { result: "0x10" }, 16],
    ["eth_getBlockByNumber", ["latest", false], block("0x10"), 16],
    ["eth_getBlockByNumber", ["0x10", false], block("0x10"), 16],
    ["regression: pending states no head", ["pending", false], block("0x11"), null],
    ["eth_getBlockByNumber", ["finalized", false], block("0x8"), null],
    ["eth_getBlockByNumber", ["latest", false], { result: null }, null],
    ["eth_getBlockByHash", [HASH, false], { result: { number: "0x10", hash: HASH } }, 16],
    ["eth_getBlockByHash", [HASH, false], block("0x10"), null],
    ["eth_getTransactionReceipt", [HASH], named("0x12"), 18],
    ["eth_getTransactionByHash", [HASH], named("0x12"), 18],
    ["a pending transaction names no block", [HASH], named(null), null],
    ["eth_getTransactionByBlockNumberAndIndex", ["latest", "0x0"], named("0x12"), null],
    ["eth_getBlockReceipts", [HASH], { result: [named("0x13").result] }, 19],
    [
      "eth_getLogs",
      [{ fromBlock: "0x1", toBlock: "0x20" }],
      { result: [log("0x14"), log("0x19", true), log("0x15")] },
      21,
    ],
    ["eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x20" }], { result: [] }, null],
    ["eth_blockNumber", [], { result: "latest" }, null],
  ])("%s %j → %s", (method, params, member, expected) => {
    const name = method.startsWith("regression")
      ? "eth_getBlockByNumber"
      : method.startsWith("a pending")
        ? "eth_getTransactionByHash"
        : method;
    expect(headStatedBy({ method: name, params }, member)).toBe(expected);
  });
});

describe("headStatedBy: every answer that names its block, and only those", () => {
  const header = { result: { number: "0x10", hash: HASH } };
  it.each<{
    name: string;
    method: string;
    params: unknown[];
    member: unknown;
    expected: number | null;
  }>([
    {
      name: "a header by hash",
      method: "eth_getHeaderByHash",
      params: [HASH],
      member: header,
      expected: 16,
    },
    {
      name: "a header by number",
      method: "eth_getHeaderByNumber",
      params: ["0x10"],
      member: header,
      expected: 16,
    },
    {
      name: "a transaction by block hash and index",
      method: "eth_getTransactionByBlockHashAndIndex",
      params: [HASH, "0x0"],
      member: named("0x12"),
      expected: 18,
    },
    {
      name: "a transaction by block number and index",
      method: "eth_getTransactionByBlockNumberAndIndex",
      params: ["0x12", "0x0"],
      member: named("0x12"),
      expected: 18,
    },
    {
      name: "an uncle is no block of the chain: it states no head",
      method: "eth_getUncleByBlockNumberAndIndex",
      params: ["0x12", "0x0"],
      member: { result: { number: "0x12", hash: HASH } },
      expected: null,
    },
    {
      name: "a number with text after it",
      method: "eth_blockNumber",
      params: [],
      member: { result: "0x10zz" },
      expected: null,
    },
    {
      name: "a number with text before it",
      method: "eth_blockNumber",
      params: [],
      member: { result: "x0x10" },
      expected: null,
    },
    { name: "a null member", method: "eth_blockNumber", params: [], member: null, expected: null },
    {
      name: "logs newest first: the highest block, not the last",
      method: "eth_getLogs",
      params: [{ fromBlock: "0x1", toBlock: "0x20" }],
      member: { result: [log("0x15"), log("0x14")] },
      expected: 21,
    },
    {
      name: "logs with entries that are no log, or name no block: those are skipped",
      method: "eth_getLogs",
      params: [{ fromBlock: "0x1", toBlock: "0x20" }],
      member: { result: [null, "junk", log("0x15"), { ...log("0x14"), blockNumber: "latest" }] },
      expected: 21,
    },
  ])("$name → $expected", ({ method, params, member, expected }) => {
    expect(headStatedBy({ method, params }, member)).toBe(expected);
  });
});

describe("ObservedHeads", () => {
  const model = buildModel(
    configSchema.parse({
      networks: {
        net: { chain_id: 1, block_time_seconds: 2, providers: [{ url: "http://a.test" }] },
      },
    }),
    (url) => url,
  );
  const network = model.networks.get("net");
  if (network === undefined) throw new Error("no network");
  const T = 1_800_000_000_000;
  const context = (now: number, head: number, computedAt = T): SelectionContext => ({
    network,
    now,
    checkIntervalSeconds: 15,
    demoted: new Set(),
    state: {
      ...EMPTY_NETWORK_STATE,
      quorum: { head, headTimestamp: 0, members: ["a"], excluded: {}, heads: {}, computedAt },
    },
  });

  it.each<[string, number, number, number, number | null]>([
    ["within the few blocks it may lead the snapshot", T, 103, T, 103],
    ["regression: far above the snapshot is ignored", T, 150, T, null],
    ["the chain's progress since the snapshot widens the lead", T + 10_000, 108, T + 10_000, 108],
    ["seen before the snapshot: superseded", T - 1, 101, T + 1, null],
  ])("%s", (_name, seenAt, seen, now, expected) => {
    const heads = new ObservedHeads();
    heads.observe("net", "a", seen, seenAt);
    expect(heads.highest(network, context(now, 100))).toBe(expected);
  });

  it.each<[string, Array<[number, number]>, number]>([
    [
      "a higher head replaces a lower one",
      [
        [101, T],
        [102, T],
      ],
      102,
    ],
    [
      "a lower head later leaves the higher one",
      [
        [102, T],
        [101, T],
      ],
      102,
    ],
  ])("%s", (_name, sightings, expected) => {
    const heads = new ObservedHeads();
    for (const [seen, at] of sightings) heads.observe("net", "a", seen, at);
    expect(heads.highest(network, context(T, 100))).toBe(expected);
  });

  it("the same head seen again after a new snapshot counts from the new sighting", () => {
    const heads = new ObservedHeads();
    heads.observe("net", "a", 103, T - 1);
    heads.observe("net", "a", 103, T + 1);
    expect(heads.highest(network, context(T + 1, 100, T))).toBe(103);
  });

  it("a head shown as a block counts for publication; a bare number only as a head (observe's default is a block)", () => {
    const heads = new ObservedHeads();
    heads.observe("net", "a", 102, T);
    heads.observe("net", "b", 103, T, false);
    const now = context(T, 100);
    expect([heads.highest(network, now), heads.highestBlock(network, now)]).toEqual([103, 102]);
    expect(heads.inForce(network, now)).toEqual(
      new Map([
        ["a", 102],
        ["b", 103],
      ]),
    );
  });

  it.each<[string, string, unknown[], unknown, [number | null, number | null]]>([
    [
      "eth_blockNumber: a head, not a block",
      "eth_blockNumber",
      [],
      { result: "0x66" },
      [102, null],
    ],
    [
      "a block: a head and a block",
      "eth_getBlockByNumber",
      ["latest", false],
      block("0x66"),
      [102, 102],
    ],
    [
      "an answer stating no head: nothing",
      "eth_getBlockByNumber",
      ["latest", false],
      { result: null },
      [null, null],
    ],
  ])("observeAnswer, %s", (_name, method, params, member, expected) => {
    const heads = new ObservedHeads();
    heads.observeAnswer("net", "a", { info: { method, params }, member }, T);
    const now = context(T, 100);
    expect([heads.highest(network, now), heads.highestBlock(network, now)]).toEqual(expected);
  });

  it("a block shown to the log check is that provider's reach only: it raises no head", () => {
    const heads = new ObservedHeads();
    heads.showed("net", "a", 102, T);
    const now = context(T, 100);
    expect([heads.shownBy(network, now, "a"), heads.shownBy(network, now, "b")]).toEqual([
      102,
      null,
    ]);
    expect(heads.highest(network, now)).toBeNull();
  });

  it("no snapshot, no observed head", () => {
    const heads = new ObservedHeads();
    heads.observe("net", "a", 5, T);
    expect(heads.highest(network, { ...context(T, 0), state: EMPTY_NETWORK_STATE })).toBeNull();
  });
});

describe("highestSighting", () => {
  it.each<[string, number[], number | null]>([
    ["none", [], null],
    ["the highest, wherever it stands", [3, 7, 5], 7],
    ["the highest first", [7, 3], 7],
  ])("%s", (_name, blocks, expected) => {
    const sightings = new Map(blocks.map((block, i) => [`p${i}`, { block, at: 0 }]));
    expect(highestSighting(sightings)).toBe(expected);
  });
});

describe("mayRaiseHead: only a quorum member used as a candidate, under a quorum in force", () => {
  const model = buildModel(
    configSchema.parse({
      networks: { net: { chain_id: 1, providers: [{ url: "http://a.test" }] } },
    }),
    (url) => url,
  );
  const network = model.networks.get("net");
  if (network === undefined) throw new Error("no network");
  const T = 1_800_000_000_000;
  const quorum = {
    head: 100,
    headTimestamp: 0,
    members: ["a"],
    excluded: {},
    heads: {},
    computedAt: T,
  };
  // A check every 15 s: the quorum is in force for three intervals.
  const context = (now: number, withQuorum = true): SelectionContext => ({
    network,
    now,
    checkIntervalSeconds: 15,
    demoted: new Set(),
    state: { ...EMPTY_NETWORK_STATE, quorum: withQuorum ? quorum : null },
  });
  it.each<[string, string, boolean, SelectionContext, boolean]>([
    ["a member, as a candidate", "a", false, context(T + 45_000), true],
    ["a member used in an emergency", "a", true, context(T), false],
    ["not a member", "b", false, context(T), false],
    ["a member of a stale quorum", "a", false, context(T + 45_001), false],
    ["no quorum", "a", false, context(T, false), false],
  ])("%s: %s", (_name, provider, emergency, at, expected) => {
    expect(mayRaiseHead(provider, emergency, at)).toBe(expected);
  });
});

describe("reachableBlocks", () => {
  const T = 1_800_000_000_000;
  const quorum = {
    head: 100,
    headTimestamp: 0,
    members: ["a", "b"],
    excluded: {},
    heads: { a: { number: 100, timestamp: 0 }, b: { number: 98, timestamp: 0 } },
    computedAt: T,
  };
  // 1 s blocks; now is 10 s after the snapshot.
  it.each<[string, string, { block: number; at: number } | undefined, number | null]>([
    ["the monitor's head plus the blocks made since the snapshot", "a", undefined, 110],
    [
      "an answer's head plus the blocks made since the answer",
      "b",
      { block: 105, at: T + 8_000 },
      108,
    ],
    [
      "regression: an answer's head 8 s after the snapshot was counted from the snapshot (+10, not +2); now from the answer",
      "b",
      { block: 101, at: T + 8_000 },
      108,
    ],
    ["whichever reaches higher: the monitor's estimate", "a", { block: 101, at: T + 9_000 }, 110],
    ["no head known", "c", undefined, null],
    ["a head seen only in answers", "c", { block: 104, at: T + 5_000 }, 109],
  ])("%s", (_name, provider, seen, expected) => {
    const observed = new Map(seen === undefined ? [] : [[provider, seen]]);
    expect(reachableBlocks(quorum, observed, T + 10_000, 1_000)(provider)).toBe(expected);
  });

  it("no snapshot: nothing is known to be reachable", () => {
    expect(reachableBlocks(null, new Map([["a", { block: 5, at: T }]]), T, 1_000)("a")).toBeNull();
  });
});
