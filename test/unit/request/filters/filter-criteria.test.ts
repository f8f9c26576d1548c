import { describe, expect, it } from "vitest";
import {
  type ChainPositions,
  type FilterEnd,
  firstBlock,
  lastBlockNow,
  MAX_CRITERIA_BYTES,
  rangeQueryParams,
  readLogFilter,
} from "../../../../functions/core/request/filters/filter-criteria.ts";

/**
 * What an eth_newFilter asks for (docs/behaviour.md §14): its params read as nodes read them,
 * and what its tags mean at install and at each poll. Pure, table-driven.
 */

const ADDRESS = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const TOPIC = `0x${"ab".repeat(32)}`;
const latest: FilterEnd = { kind: "tag", tag: "latest" };
const block = (number: number): FilterEnd => ({ kind: "number", number });

describe("reading eth_newFilter params", () => {
  it.each<[string, unknown, { from: FilterEnd; to: FilterEnd }]>([
    ["nothing: latest to latest", [{}], { from: latest, to: latest }],
    [
      "null ends count as left out",
      [{ fromBlock: null, toBlock: null }],
      { from: latest, to: latest },
    ],
    ["a number to latest", [{ fromBlock: "0x10" }], { from: block(16), to: latest }],
    [
      "earliest is block 0",
      [{ fromBlock: "earliest", toBlock: "0x0" }],
      { from: block(0), to: block(0) },
    ],
    [
      "a number to the same number",
      [{ fromBlock: "0x5", toBlock: "0x5" }],
      { from: block(5), to: block(5) },
    ],
    [
      "a number to finalized",
      [{ fromBlock: "0x5", toBlock: "finalized" }],
      { from: block(5), to: { kind: "tag", tag: "finalized" } },
    ],
    [
      "safe to a number",
      [{ fromBlock: "safe", toBlock: "0x9" }],
      { from: { kind: "tag", tag: "safe" }, to: block(9) },
    ],
    [
      "latest to finalized",
      [{ toBlock: "finalized" }],
      { from: latest, to: { kind: "tag", tag: "finalized" } },
    ],
  ])("%s", (_case, params, ends) => {
    const read = readLogFilter(params);
    expect(read).toEqual({
      ok: true,
      value: { criteria: { address: null, topics: null }, ...ends },
    });
  });

  it("keeps the addresses and topics as written, nested lists and nulls included", () => {
    const read = readLogFilter([
      {
        address: [ADDRESS, ADDRESS.toUpperCase().replace("0X", "0x")],
        topics: [null, [TOPIC, null], TOPIC],
      },
    ]);
    expect(read.ok && read.value.criteria).toEqual({
      address: [ADDRESS, ADDRESS.toUpperCase().replace("0X", "0x")],
      topics: [null, [TOPIC, null], TOPIC],
    });
  });

  it.each<[string, unknown, number, string]>([
    ["no params", undefined, -32602, "takes a filter object"],
    ["a string", ["latest"], -32602, "takes a filter object"],
    ["pending from", [{ fromBlock: "pending" }], -32000, "pending logs are not supported"],
    ["pending to", [{ toBlock: "pending" }], -32000, "pending logs are not supported"],
    ["latest to a number", [{ toBlock: "0x10" }], -32000, "invalid from and to block combination"],
    [
      "an inverted range",
      [{ fromBlock: "0x10", toBlock: "0xf" }],
      -32000,
      "invalid from and to block combination",
    ],
    ["a mis-cased tag", [{ fromBlock: "Latest" }], -32602, "fromBlock must be"],
    ["a decimal number", [{ toBlock: 16 }], -32602, "toBlock must be"],
    ["17 hex digits", [{ fromBlock: "0x10000000000000000" }], -32602, "fromBlock must be"],
    ["past 2^53", [{ fromBlock: "0x20000000000000" }], -32602, "fromBlock must be"],
    ["a block hash", [{ blockHash: TOPIC }], -32602, "not blockHash"],
    ["a short address", [{ address: "0x1234" }], -32602, "address must be"],
    ["a list with a bad address", [{ address: [ADDRESS, 7] }], -32602, "address must be"],
    ["topics not a list", [{ topics: TOPIC }], -32602, "topics must be a list"],
    ["a short topic", [{ topics: ["0x12"] }], -32602, "each topic must be"],
    ["a list inside a list", [{ topics: [[[TOPIC]]] }], -32602, "each topic must be"],
    [
      "five topic positions",
      [{ topics: [null, null, null, null, TOPIC] }],
      -32000,
      "exceed max topics",
    ],
  ])("refuses %s as a node would", (_case, params, code, words) => {
    const read = readLogFilter(params);
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.error.code).toBe(code);
    expect(read.error.message).toContain(words);
  });

  it("refuses criteria too large to keep beside the filter", () => {
    const many = Array.from({ length: Math.ceil(MAX_CRITERIA_BYTES / 40) }, () => ADDRESS);
    const read = readLogFilter([{ address: many }]);
    expect(read.ok).toBe(false);
    expect(!read.ok && read.error.message).toContain("install several filters");
  });
});

describe("what a filter's ends mean", () => {
  const at: ChainPositions = { head: 100, safe: 90, finalized: 80 };
  const unsettled: ChainPositions = { head: 100, safe: null, finalized: null };

  it.each<[string, FilterEnd, ChainPositions, number | null]>([
    ["a number is that block", block(42), at, 42],
    ["latest is the block after the head at install", latest, at, 101],
    ["safe is the safe block at install", { kind: "tag", tag: "safe" }, at, 90],
    ["finalized is the finalized block at install", { kind: "tag", tag: "finalized" }, at, 80],
    ["finalized not known yet", { kind: "tag", tag: "finalized" }, unsettled, null],
  ])("the first block: %s", (_case, from, positions, expected) => {
    expect(firstBlock(from, positions)).toBe(expected);
  });

  it.each<[string, FilterEnd, ChainPositions, number | null]>([
    ["latest is the head now", latest, at, 100],
    ["a number below the head", block(42), at, 42],
    ["a number above the head stops at the head", block(500), at, 100],
    ["safe moves with the safe block", { kind: "tag", tag: "safe" }, at, 90],
    ["finalized moves with the finalized block", { kind: "tag", tag: "finalized" }, at, 80],
    [
      "a finalized block above the head is the head",
      { kind: "tag", tag: "finalized" },
      { head: 70, safe: 75, finalized: 80 },
      70,
    ],
    ["safe not known yet", { kind: "tag", tag: "safe" }, unsettled, null],
  ])("the last block now: %s", (_case, to, positions, expected) => {
    expect(lastBlockNow(to, positions)).toBe(expected);
  });

  it("asks eth_getLogs for the criteria over numbered blocks, leaving out what the filter left out", () => {
    expect(rangeQueryParams({ address: ADDRESS, topics: null }, { from: 10, to: 255 })).toEqual([
      { address: ADDRESS, fromBlock: "0xa", toBlock: "0xff" },
    ]);
    expect(rangeQueryParams({ address: null, topics: [TOPIC] }, { from: 0, to: 0 })).toEqual([
      { topics: [TOPIC], fromBlock: "0x0", toBlock: "0x0" },
    ]);
  });
});
