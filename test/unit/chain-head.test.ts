import { describe, expect, it } from "vitest";
import {
  advanceHead,
  type ChainHead,
  type ChainObservation,
  mayPublish,
  reachableHead,
} from "../../functions/core/chain-head.ts";
import { answerKey } from "../../functions/core/request/cache-class.ts";

/** The chain position after a monitor tick (docs/behaviour.md §10.1, §11.6), pure. */

const at = (number: number, hash: string) => ({ number, hash });
const stored: ChainHead = {
  latest: at(100, "0xl100"),
  safe: at(90, "0xs90"),
  finalized: at(80, "0xf80"),
  served: { block: 100, at: 1 },
  previousServed: null,
  updatedAt: 1_000,
  reorgSeenAt: 0,
  finalityBrokenAt: 0,
};
const seen = (overrides: Partial<ChainObservation>): ChainObservation => ({
  latest: at(101, "0xl101"),
  safe: at(91, "0xs91"),
  finalized: at(81, "0xf81"),
  reorged: false,
  at: 2_000,
  ...overrides,
});

describe("advanceHead", () => {
  it.each([
    {
      name: "a plain tick moves every number forward and keeps the publications",
      observed: seen({}),
      expected: {
        latest: at(101, "0xl101"),
        finalized: at(81, "0xf81"),
        reorgSeenAt: 0,
        finalityBrokenAt: 0,
      },
    },
    {
      name: "a lower finalized seen without a break is not taken",
      observed: seen({ finalized: at(70, "0xf70"), safe: at(75, "0xs75") }),
      expected: { finalized: at(80, "0xf80"), safe: at(90, "0xs90"), finalityBrokenAt: 0 },
    },
    {
      name: "a reorg above finalized stamps reorgSeenAt only",
      observed: seen({ reorged: true }),
      expected: { reorgSeenAt: 2_000, finalityBrokenAt: 0 },
    },
    {
      name: "finality broken: the lower safe and finalized seen replace the recorded ones, both stamps set",
      observed: seen({ finalityBroken: true, finalized: at(70, "0xf70"), safe: at(75, "0xs75") }),
      expected: {
        finalized: at(70, "0xf70"),
        safe: at(75, "0xs75"),
        reorgSeenAt: 2_000,
        finalityBrokenAt: 2_000,
      },
    },
    {
      name: "regression: a finalized or safe block above the head was taken and kept forward-only; now it is not taken",
      observed: seen({ finalized: at(10_000_000, "0xfar"), safe: at(10_000_001, "0xfar2") }),
      expected: { finalized: at(80, "0xf80"), safe: at(90, "0xs90") },
    },
  ])("$name", ({ observed, expected }) => {
    const next = advanceHead(stored, observed);
    expect(next).toMatchObject(expected);
    expect(next.served).toEqual(stored.served);
  });

  it("regression: a finalized block recorded above the head stayed forever; now the next tick drops it", () => {
    const poisoned: ChainHead = { ...stored, finalized: at(10_000_000, "0xfar") };
    expect(advanceHead(poisoned, seen({ finalized: null })).finalized).toBeNull();
    expect(advanceHead(poisoned, seen({})).finalized).toEqual(at(81, "0xf81"));
  });

  it("a stamp stays until the next break", () => {
    const broken = advanceHead(stored, seen({ finalityBroken: true }));
    expect(advanceHead(broken, seen({ at: 3_000 })).finalityBrokenAt).toBe(2_000);
  });
});

describe("answer keys across a finality break", () => {
  it("are unchanged before any break, and all new after one", () => {
    const before = answerKey(1, "eth_getBlockByNumber", ["0x50", false]);
    expect(before).toBe(answerKey(1, "eth_getBlockByNumber", ["0x50", false], 0));
    expect(answerKey(1, "eth_getBlockByNumber", ["0x50", false], 2_000)).not.toBe(before);
  });
});

describe("reachableHead", () => {
  it.each([
    { name: "unknown before the monitor wrote a position", head: null, now: 5_000, expected: null },
    {
      name: "the latest plus the margin of 8 right after the monitor confirmed it",
      head: stored,
      now: 1_000,
      expected: 108,
    },
    { name: "one more block per block time since", head: stored, now: 3_500, expected: 111 },
  ])("$name", ({ head, now, expected }) => {
    expect(reachableHead(head, now, 1_000)).toBe(expected);
  });
});

describe("mayPublish: the served head only moves up, at most once per delay (docs/behaviour.md §10)", () => {
  // `stored` published 100 at 1; the delay is 2_500 ms.
  it.each<[string, ChainHead | null, number, number, boolean]>([
    ["nothing published yet: any block", null, 5, 0, true],
    ["a higher block once the delay passed", stored, 101, 9_000, true],
    ["a higher block exactly the delay later", stored, 101, 2_501, true],
    ["a higher block before the delay passed", stored, 101, 2_500, false],
    ["a lower block, however late", stored, 90, 1_000_000, false],
    ["the same block again", stored, 100, 1_000_000, false],
  ])("%s", (_name, head, block, now, expected) => {
    expect(mayPublish(head, block, now, 2_500)).toBe(expected);
  });
});
