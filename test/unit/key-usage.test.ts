import { describe, expect, it } from "vitest";
import { KeyUsage } from "../../functions/core/key-usage.ts";

const MINUTE = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);
const LIMIT = { name: "indexer", requestsPerMinute: 5 };

function usageAt(start = T0) {
  let now = start;
  return {
    usage: new KeyUsage(() => now),
    set: (ms: number) => {
      now = ms;
    },
  };
}

const admits = (usage: KeyUsage, times: number) =>
  Array.from({ length: times }, () => usage.admit(LIMIT));

describe("KeyUsage: requests_per_minute across containers", () => {
  it("admits up to the limit within a minute, then refuses", () => {
    const { usage } = usageAt();
    expect(admits(usage, 6)).toEqual([true, true, true, true, true, false]);
  });

  it("a new minute starts afresh", () => {
    const { usage, set } = usageAt();
    admits(usage, 5);
    set(T0 + MINUTE);
    expect(usage.admit(LIMIT)).toBe(true);
  });

  it("counts what the other containers admitted, as the last flush saw it", () => {
    const { usage } = usageAt();
    admits(usage, 2);
    const [pending] = usage.takePending();
    expect(pending).toEqual({ key: "indexer", minute: T0, count: 2 });
    // The shared counter now holds 4: 2 from here, 2 from another container.
    usage.recordShared("indexer", T0, 4);
    expect(admits(usage, 2)).toEqual([true, false]);
  });

  it("hands out each count once; a failed flush is restored, so no count is lost", () => {
    const { usage } = usageAt();
    admits(usage, 3);
    const first = usage.takePending();
    expect(usage.takePending()).toEqual([{ key: "indexer", minute: T0, count: 0 }]);
    usage.restore(first);
    expect(usage.takePending()).toEqual([{ key: "indexer", minute: T0, count: 3 }]);
  });

  it("a minute that ended is flushed once more with what it had left, then forgotten", () => {
    const { usage, set } = usageAt();
    admits(usage, 2);
    set(T0 + MINUTE + 1);
    expect(usage.takePending()).toEqual([{ key: "indexer", minute: T0, count: 2 }]);
    expect(usage.takePending()).toEqual([]);
  });

  it("a total for another minute is ignored", () => {
    const { usage } = usageAt();
    usage.admit(LIMIT);
    usage.recordShared("indexer", T0 - MINUTE, 100);
    expect(usage.admit(LIMIT)).toBe(true);
  });
});
