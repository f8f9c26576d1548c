import { describe, expect, it } from "vitest";
import {
  filterIdOf,
  gatewayFilterId,
  slotOfFilterId,
} from "../../../../functions/core/request/filters/filter-id.ts";
import {
  forkPoint,
  type Header,
  keepSeen,
  oneChain,
  pollRange,
  type SeenBlock,
} from "../../../../functions/core/request/filters/filter-progress.ts";

/**
 * A filter's progress along the chain (docs/behaviour.md §14): the blocks a poll covers, what
 * it remembers, where a reorg sends it back, and its id. Pure, table-driven.
 */

const hash = (n: number, branch = "a") =>
  `0x${branch.repeat(8)}${n.toString(16).padStart(56, "0")}`;
const seen = (n: number, logs = 1, branch = "a"): SeenBlock => ({
  number: n,
  hash: hash(n, branch),
  logs,
});

describe("the blocks a poll covers", () => {
  it.each<[string, number, number | null, number, { from: number; to: number } | null]>([
    ["nothing new", 11, 10, 100, null],
    ["no end known yet", 11, null, 100, null],
    ["one new block", 11, 11, 100, { from: 11, to: 11 }],
    ["every new block within the bound", 11, 60, 100, { from: 11, to: 60 }],
    ["cut to the bound, the rest next poll", 0, 25_000, 10_000, { from: 0, to: 9_999 }],
    ["a bound below one block is one block", 5, 9, 0, { from: 5, to: 5 }],
    ["a fractional bound is floored", 5, 9, 2.7, { from: 5, to: 6 }],
  ])("%s", (_case, cursor, last, max, expected) => {
    expect(pollRange(cursor, last, max)).toEqual(expected);
  });
});

describe("the blocks a filter remembers", () => {
  it.each<[string, SeenBlock[], SeenBlock[], number | null, number, number[]]>([
    ["new blocks after the old", [seen(1), seen(2)], [seen(3)], null, 64, [1, 2, 3]],
    [
      "only the newest, up to the limit",
      [seen(1), seen(2)],
      [seen(3), seen(4)],
      null,
      3,
      [2, 3, 4],
    ],
    ["none at or below the finalized block", [seen(1), seen(2)], [seen(3)], 2, 64, [3]],
    [
      "a block reported again after a reorg replaces its height",
      [seen(1), seen(2), seen(3)],
      [seen(2, 1, "b")],
      null,
      64,
      [1, 2],
    ],
    ["nothing added", [seen(1)], [], null, 64, [1]],
  ])("%s", (_case, before, added, finalized, limit, numbers) => {
    const kept = keepSeen(before, added, finalized, limit);
    expect(kept.map((block) => block.number)).toEqual(numbers);
    if (_case.includes("replaces")) expect(kept.at(-1)?.hash).toBe(hash(2, "b"));
  });
});

describe("the fork point", () => {
  const remembered = [seen(10), seen(12, 0), seen(15, 2)];
  const chainWith = (replacedFrom: number) => (n: number) =>
    n >= replacedFrom ? hash(n, "b") : hash(n);

  it.each<
    [
      string,
      (n: number) => string | null,
      { resumeAt: number; replaced: number[]; deeperThanKnown: boolean } | null,
    ]
  >([
    ["every block still canonical: no reorg", chainWith(100), null],
    [
      "the newest replaced",
      chainWith(13),
      { resumeAt: 13, replaced: [15], deeperThanKnown: false },
    ],
    ["two replaced", chainWith(11), { resumeAt: 11, replaced: [12, 15], deeperThanKnown: false }],
    [
      "every one replaced",
      chainWith(0),
      { resumeAt: 10, replaced: [10, 12, 15], deeperThanKnown: true },
    ],
    [
      "the newest gone (the chain shorter)",
      (n) => (n >= 15 ? null : hash(n)),
      { resumeAt: 13, replaced: [15], deeperThanKnown: false },
    ],
  ])("%s", (_case, canonical, expected) => {
    const fork = forkPoint(remembered, canonical);
    expect(
      fork === null ? null : { ...fork, replaced: fork.replaced.map((block) => block.number) },
    ).toEqual(expected);
  });

  it("hashes compare without letter case", () => {
    expect(forkPoint([seen(3)], (n) => hash(n).toUpperCase().replace("0X", "0x"))).toBeNull();
  });

  it("nothing remembered, nothing to compare", () => {
    expect(forkPoint([], () => null)).toBeNull();
  });
});

describe("headers of one chain", () => {
  const header = (n: number, parent = hash(n - 1), branch = "a"): Header => ({
    number: n,
    hash: hash(n, branch),
    parentHash: parent,
  });

  it.each<[string, Header[], string | null, boolean]>([
    ["none", [], hash(1), true],
    ["linked, from the parent given", [header(2), header(3)], hash(1), true],
    ["linked, no parent known", [header(2), header(3)], null, true],
    ["the first names another parent", [header(2)], hash(1, "b"), false],
    ["two branches", [header(2), header(3, hash(2, "b"))], hash(1), false],
    ["a gap", [header(2), header(4, hash(2))], hash(1), false],
  ])("%s", (_case, headers, parent, expected) => {
    expect(oneChain(headers, parent)).toBe(expected);
  });
});

describe("filter ids", () => {
  const random = Uint8Array.from({ length: 16 }, (_, index) => index * 17);

  it("name their slot in four hex digits beside 128 random bits: 36 hex digits, never a node's", () => {
    const id = filterIdOf(258, random);
    expect(id).toBe(`0x0102${Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")}`);
    expect(slotOfFilterId(id)).toBe(258);
    expect(gatewayFilterId(id)).toBe(id);
    expect(gatewayFilterId(id.toUpperCase().replace("0X", "0x"))).toBe(id);
  });

  it.each([
    ["geth's 32 hex digits", `0x${"a".repeat(32)}`],
    ["nethermind's counter", "0x1"],
    ["one digit more", `0x${"a".repeat(37)}`],
    ["no 0x", "a".repeat(36)],
    ["not a string", 12],
  ])("%s is not a gateway id", (_case, id) => {
    expect(gatewayFilterId(id)).toBeNull();
  });

  it.each([
    [-1, 16],
    [0x10000, 16],
    [0, 15],
  ])("refuses slot %i with %i random bytes", (slot, bytes) => {
    expect(() => filterIdOf(slot, new Uint8Array(bytes))).toThrow(RangeError);
  });
});
