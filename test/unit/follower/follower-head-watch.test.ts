import { describe, expect, it } from "vitest";
import type { FollowerSettings } from "../../../functions/core/follower/follow-settings.ts";
import { HeadWatch, PROBES_PER_BLOCK } from "../../../functions/core/follower/head-watch.ts";

/**
 * How soon the follower looks for a block (docs/behaviour.md "Subscriptions over WebSocket",
 * how soon a block goes out): a quorum member asked a little before the next block is due, a
 * few times, the block read ahead once its publication is in the container's copy, the served
 * head read as soon as that publication is served; otherwise the regular pace.
 */

const SETTINGS: FollowerSettings = {
  blockTimeMs: 1000,
  resumeWindowMs: 600_000,
  deliveryTimeoutMs: 10_000,
  maxBatch: 100,
  headCacheMs: 250,
  publicationDelayMs: 500,
};

/** A watch on a test clock whose asks are answered by hand. */
function watch(settings: FollowerSettings = SETTINGS) {
  const clock = { now: 0 };
  const asks: Array<{ at: number; timeoutMs: number; answer: (block: number | null) => void }> = [];
  const readAhead: Array<{ at: number; block: number }> = [];
  const head = new HeadWatch({
    settings,
    clock: () => clock.now,
    probeHead: (timeoutMs) =>
      new Promise((resolve) => asks.push({ at: clock.now, timeoutMs, answer: resolve })),
    readAhead: (block) => readAhead.push({ at: clock.now, block }),
  });
  /** Looks at `head` at `at`, and lets an ask's answer land. */
  const look = async (at: number, served: number) => {
    clock.now = at;
    head.look(served);
    await Promise.resolve();
  };
  const answer = async (at: number, block: number | null) => {
    clock.now = at;
    asks.at(-1)?.answer(block);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { head, clock, asks, readAhead, look, answer };
}

describe("the head watch", () => {
  it("asks a member 20 ms before the next block is due: a block time after the served head's publication", async () => {
    const w = watch();
    await w.look(10_000, 100);
    // Seen served at 10,000: published a delay before, at 9,500; block 101 due at 10,500.
    expect(w.head.waitMs()).toBe(125);
    await w.look(10_479, 100);
    expect(w.asks).toHaveLength(0);
    await w.look(10_480, 100);
    expect(w.asks.map((ask) => [ask.at, ask.timeoutMs])).toEqual([[10_480, 250]]);
  });

  it.each([
    ["no answer", null],
    ["the head it had", 100],
    ["a head behind it (a lagging member)", 97],
  ])(
    "asks again a tenth of a block time after %s, at most five times a block",
    async (_name, block) => {
      const w = watch();
      await w.look(10_000, 100);
      for (let i = 0; i < PROBES_PER_BLOCK + 2; i++) {
        const at = 10_480 + i * 100;
        await w.look(at, 100);
        if (w.asks.length > i) await w.answer(at, block);
      }
      expect(w.asks.map((ask) => ask.at)).toEqual([10_480, 10_580, 10_680, 10_780, 10_880]);
      // With no ask left, the regular pace: an eighth of a block time.
      expect(w.head.waitMs()).toBe(125);
    },
  );

  it("asks another member when an ask has not answered by the next one's time, two at most at once", async () => {
    const w = watch();
    await w.look(10_000, 100);
    await w.look(10_480, 100);
    await w.look(10_580, 100);
    await w.look(10_680, 100);
    expect(w.asks.map((ask) => ask.at)).toEqual([10_480, 10_580]);
    // With two out, it does not wake for a third.
    expect(w.head.waitMs()).toBe(125);
    await w.answer(10_700, null);
    await w.look(10_700, 100);
    expect(w.asks.map((ask) => ask.at)).toEqual([10_480, 10_580, 10_700]);
  });

  it("once a member showed the block: reads it ahead when the copy holds its publication, then the served head as soon as it is served", async () => {
    const w = watch();
    await w.look(10_000, 100);
    await w.look(10_480, 100);
    await w.answer(10_490, 101);
    // Read ahead at 10,490 + 250 + 50, served at 10,490 + 500 + 5: the regular looks go on.
    expect(w.head.waitMs()).toBe(125);
    await w.look(10_740, 100);
    expect(w.head.waitMs()).toBe(50);
    await w.look(10_790, 100);
    expect(w.readAhead).toEqual([{ at: 10_790, block: 101 }]);
    await w.look(10_915, 100);
    expect(w.head.waitMs()).toBe(80);
    await w.look(10_995, 100);
    expect(w.readAhead).toHaveLength(1);
    expect(w.asks).toHaveLength(1);
    // Not served yet (a copy read late): read again soon.
    expect(w.head.waitMs()).toBe(25);
    await w.look(11_020, 101);
    // The next block is due a block time after the publication this follower caused; the first
    // ask found this one, so the next first ask goes twice as early (40 ms).
    expect(w.head.leadMs).toBe(40);
    expect(w.head.waitMs()).toBe(125);
    await w.look(11_449, 101);
    expect(w.asks).toHaveLength(1);
    await w.look(11_450, 101);
    expect(w.asks.map((ask) => ask.at)).toEqual([10_480, 11_450]);
  });

  it("moves the first ask's lead with the chain's rhythm: earlier after a block the first ask found, later after one it missed, within a tenth and the whole of the spacing", async () => {
    const w = watch();
    let served = 100;
    await w.look(10_000, served);
    /** Looks at the regular pace until the next ask goes, answered at once. */
    const ask = async (answer: number | null) => {
      const before = w.asks.length;
      while (w.asks.length === before) await w.look(w.clock.now + w.head.waitMs(), served);
      await w.answer(w.clock.now, answer);
    };
    /** A block found after `misses` asks, served a delay later: the lead after it. */
    const block = async (misses: number) => {
      for (let i = 0; i < misses; i++) await ask(null);
      await ask(served + 1);
      served++;
      await w.look(w.clock.now + 505, served);
      return w.head.leadMs;
    };
    expect([await block(0), await block(0), await block(0), await block(0)]).toEqual([
      40, 80, 100, 100,
    ]);
    expect([await block(1), await block(2), await block(1), await block(1)]).toEqual([
      50, 25, 12.5, 10,
    ]);
  });

  it("a block shown but never served (a member ahead of the chain) is not waited for: the asks go on", async () => {
    const w = watch();
    await w.look(10_000, 100);
    await w.look(10_480, 100);
    await w.answer(10_490, 150);
    await w.look(10_995, 100);
    expect(w.head.waitMs()).toBe(25);
    await w.look(11_245, 100);
    expect(w.asks.map((ask) => ask.at)).toEqual([10_480, 11_245]);
    expect(w.readAhead).toEqual([]);
  });

  it("a served head that went back (a chain restarted) sets the next block's time afresh", async () => {
    const w = watch();
    await w.look(10_000, 100);
    await w.look(12_000, 5);
    expect(w.head.waitMs()).toBe(125);
    await w.look(12_479, 5);
    expect(w.asks).toHaveLength(0);
    await w.look(12_480, 5);
    expect(w.asks).toHaveLength(1);
  });

  it.each([
    [2_000, 200, 500, 250],
    [5_000, 500, 1_250, 625],
    [12_000, 500, 2_000, 1_000],
  ])(
    "at %i ms blocks asks %i ms apart, waits %i ms for an answer, and looks every %i ms otherwise",
    async (blockTimeMs, every, timeoutMs, regular) => {
      const w = watch({ ...SETTINGS, blockTimeMs });
      await w.look(100_000, 100);
      const first = 100_000 - 500 + blockTimeMs - every / 5;
      expect(w.head.waitMs()).toBe(Math.min(regular, first - 100_000));
      await w.look(first, 100);
      await w.answer(first, null);
      await w.look(first + every - 1, 100);
      await w.look(first + every, 100);
      expect(w.asks.map((ask) => [ask.at - first, ask.timeoutMs])).toEqual([
        [0, timeoutMs],
        [every, timeoutMs],
      ]);
    },
  );
});
