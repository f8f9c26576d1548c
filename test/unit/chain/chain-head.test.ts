import { describe, expect, it } from "vitest";
import {
  advanceHead,
  type ChainHead,
  type ChainObservation,
  cacheGeneration,
  highestKnownBlock,
  mayPublish,
  newerHead,
  publicationDelayMs,
  reachableHead,
  resetSince,
  servedHeadAt,
  servedRecently,
} from "../../../functions/core/chain/chain-head.ts";
import { restartSeen } from "../../../functions/core/chain/chain-restart.ts";
import { answerKey } from "../../../functions/core/request/cache/cache-class.ts";

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
      name: "the same height seen again with another hash (a reorg at the head) takes the new hash",
      observed: seen({ latest: at(100, "0xl100b") }),
      expected: { latest: at(100, "0xl100b") },
    },
    {
      name: "a safe and finalized block at the head itself are taken (a chain finalizing every block)",
      observed: seen({ safe: at(101, "0xl101"), finalized: at(101, "0xl101") }),
      expected: { safe: at(101, "0xl101"), finalized: at(101, "0xl101") },
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

  it("ticks that see no restart never count towards one, however many", () => {
    let head: ChainHead = stored;
    for (const when of [2_000, 3_000, 4_000, 5_000]) {
      head = advanceHead(head, seen({ at: when }));
      expect([head.belowChecks, head.resetAt, head.latest.number]).toEqual([0, 0, 101]);
    }
  });

  it("a tick after a reset keeps its stamp: the answer cache's keys stay moved on", () => {
    const reset: ChainHead = { ...stored, resetAt: 4_000 };
    const next = advanceHead(reset, seen({ at: 5_000 }));
    expect([next.resetAt, cacheGeneration(next)]).toEqual([4_000, 4_000]);
  });

  it("a stamp stays until the next break", () => {
    const broken = advanceHead(stored, seen({ finalityBroken: true }));
    expect(advanceHead(broken, seen({ at: 3_000 })).finalityBrokenAt).toBe(2_000);
  });
});

describe("a reset of the chain position (docs/behaviour.md §10.7)", () => {
  const restarted = (when: number) =>
    seen({
      latest: at(60, "0xn60"),
      safe: at(59, "0xn59"),
      finalized: at(50, "0xn50"),
      restartSeen: true,
      at: when,
    });

  it("a live head far below, seen for three checks in a row: latest, safe, finalized and the served head reset to it, servable at once", () => {
    const once = advanceHead(stored, restarted(2_000));
    const twice = advanceHead(once, restarted(3_000));
    expect([once, twice].map((head) => [head.latest.number, head.belowChecks])).toEqual([
      [100, 1],
      [100, 2],
    ]);
    const reset = advanceHead(twice, restarted(4_000));
    expect(reset).toMatchObject({
      latest: at(60, "0xn60"),
      safe: at(59, "0xn59"),
      finalized: at(50, "0xn50"),
      served: { block: 60, at: 0 },
      previousServed: null,
      resetAt: 4_000,
      belowChecks: 0,
    });
    expect(resetSince(twice, reset)).toBe(true);
    expect(servedHeadAt(reset, 4_000, publicationDelayMs(250))).toBe(60);
    expect(cacheGeneration(reset)).toBe(4_000);
  });

  it("a check that does not see it starts the count again: a glitch is no restart", () => {
    const once = advanceHead(stored, restarted(2_000));
    const twice = advanceHead(once, restarted(3_000));
    const normal = advanceHead(twice, seen({ at: 4_000 }));
    expect(normal.belowChecks).toBe(0);
    const again = advanceHead(normal, restarted(5_000));
    expect([again.latest.number, again.belowChecks, resetSince(normal, again)]).toEqual([
      101,
      1,
      false,
    ]);
  });

  it("finality broken: the lower safe and finalized seen replace the recorded ones, the latest seen is taken, the served head kept when the quorum shows it, and every stamp set", () => {
    const next = advanceHead(
      stored,
      seen({ finalityBroken: true, finalized: at(70, "0xf70"), safe: at(75, "0xs75") }),
    );
    expect(next).toMatchObject({
      latest: at(101, "0xl101"),
      finalized: at(70, "0xf70"),
      safe: at(75, "0xs75"),
      served: stored.served,
      reorgSeenAt: 2_000,
      finalityBrokenAt: 2_000,
      resetAt: 2_000,
    });
  });

  it("a restart leaves the finality stamp as it was: only a finality break sets it", () => {
    for (const finalityBrokenAt of [0, 500]) {
      let head: ChainHead = { ...stored, finalityBrokenAt };
      for (const when of [2_000, 3_000, 4_000]) head = advanceHead(head, restarted(when));
      expect([head.resetAt, head.finalityBrokenAt]).toEqual([4_000, finalityBrokenAt]);
    }
  });

  it("finality broken where the quorum shows exactly the served block: the publications are kept as they were", () => {
    const published: ChainHead = { ...stored, previousServed: { block: 99, at: 0 } };
    const next = advanceHead(published, seen({ finalityBroken: true, latest: at(100, "0xl100b") }));
    expect([next.served, next.previousServed]).toEqual([
      { block: 100, at: 1 },
      { block: 99, at: 0 },
    ]);
  });

  it("finality broken onto a shorter chain: the served head comes down to the latest seen", () => {
    const high: ChainHead = { ...stored, served: { block: 120, at: 1 } };
    const next = advanceHead(high, seen({ finalityBroken: true, latest: at(95, "0xl95") }));
    expect(next.served).toEqual({ block: 95, at: 0 });
    expect(next.latest).toEqual(at(95, "0xl95"));
  });
});

describe("restartSeen", () => {
  const now = 1_800_000_000_000;
  it.each([
    { name: "a live head 300 blocks below", head: 100 - 300, age: 1, expected: true },
    {
      name: "a head 32 blocks below is a deep reorg at most",
      head: 100 - 32,
      age: 1,
      expected: false,
    },
    { name: "a head 33 blocks below, live", head: 100 - 33, age: 1, expected: true },
    {
      name: "a head far below on an old block: providers behind",
      head: -200,
      age: 61,
      expected: false,
    },
    { name: "no timestamp", head: -200, age: null, expected: false },
  ])("$name: $expected", ({ head, age, expected }) => {
    const timestamp = age === null ? null : now / 1000 - age;
    const recorded = { ...stored, latest: at(1_000, "0xl") };
    expect(restartSeen(recorded, 900 + head, timestamp, now, 60)).toBe(expected);
  });

  it("nothing recorded: nothing to restart from", () => {
    expect(restartSeen(null, 0, now / 1000, now, 60)).toBe(false);
  });
});

describe("newerHead", () => {
  const copy = (updatedAt: number, served: { block: number; at: number }, resetAt = 0) => ({
    ...stored,
    updatedAt,
    served,
    resetAt,
  });
  it.each([
    {
      name: "the monitor's fields from the later tick, the publications from the later publication",
      a: copy(2_000, { block: 100, at: 10 }),
      b: copy(1_000, { block: 104, at: 20 }),
      expected: { updatedAt: 2_000, served: { block: 104, at: 20 } },
    },
    {
      name: "a later reset wins whole, even with older numbers",
      a: copy(5_000, { block: 400, at: 50 }),
      b: copy(3_000, { block: 60, at: 0 }, 3_000),
      expected: { updatedAt: 3_000, served: { block: 60, at: 0 }, resetAt: 3_000 },
    },
    {
      name: "a copy without a publication never hides one, however early it was made",
      a: { ...copy(2_000, { block: 0, at: 0 }), served: null },
      b: copy(1_000, { block: 60, at: 0 }),
      expected: { updatedAt: 2_000, served: { block: 60, at: 0 } },
    },
  ])("$name", ({ a, b, expected }) => {
    expect(newerHead(a, b)).toMatchObject(expected);
    expect(newerHead(b, a)).toMatchObject(expected);
  });

  it("either alone is itself", () => {
    expect(newerHead(stored, null)).toBe(stored);
    expect(newerHead(null, stored)).toBe(stored);
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

describe("servedHeadAt: the highest publication at least a delay old (docs/behaviour.md §10)", () => {
  // Publications of 100 at 10_000 and 104 at 12_500; the delay is 2_500 ms.
  const published: ChainHead = {
    ...stored,
    served: { block: 104, at: 12_500 },
    previousServed: { block: 100, at: 10_000 },
  };
  it.each<[string, number, number | null]>([
    ["both younger than the delay: none yet", 12_499, null],
    ["the one before exactly the delay old", 12_500, 100],
    ["the newest a delay old", 15_000, 104],
  ])("%s", (_name, now, expected) => {
    expect(servedHeadAt(published, now, 2_500)).toBe(expected);
  });
});

describe("servedRecently: published within a block time, no provider asked", () => {
  it.each<[string, ChainHead | null, number, boolean]>([
    ["nothing published", null, 1_000, false],
    ["within the block time", stored, 1_000, true],
    ["exactly a block time later: no longer", stored, 2_001, false],
  ])("%s", (_name, head, now, expected) => {
    expect(servedRecently(head, now, 2_000)).toBe(expected);
  });
});

describe("highestKnownBlock: the monitor's latest, or a higher publication", () => {
  it.each<[string, ChainHead | null, number]>([
    ["nothing known", null, 0],
    ["a publication above the monitor's latest", { ...stored, served: { block: 104, at: 1 } }, 104],
    ["a publication below it", { ...stored, served: { block: 90, at: 1 } }, 100],
    ["no publication", { ...stored, served: null }, 100],
  ])("%s", (_name, head, expected) => {
    expect(highestKnownBlock(head)).toBe(expected);
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
