import { describe, expect, it } from "vitest";
import {
  afterMinority,
  type MinorityRecord,
  NO_MINORITY,
  recentMinority,
  sitsOut,
} from "../../../functions/core/health/minority.ts";

/**
 * A provider found in a read consensus's minority again and again within a window sits out of
 * consensus routing for a while (docs/behaviour.md §17.4).
 */

const RULE = { limit: 3, windowMs: 600_000, sitOutMs: 1_800_000 };
const T = 1_800_000_000_000;

/** The record after being in the minority at each of `times` (ms after T). */
const minorityAt = (...times: number[]): MinorityRecord =>
  times.reduce<MinorityRecord>((record, at) => afterMinority(record, T + at, RULE), NO_MINORITY);

describe("minority within a window", () => {
  it.each<[string, number[], MinorityRecord]>([
    ["once: counted", [0], { count: 1, since: T, sitOutUntil: 0 }],
    ["twice in the window", [0, 1000], { count: 2, since: T, sitOutUntil: 0 }],
    [
      "three times in the window: sits out, the count starts again",
      [0, 1000, 2000],
      { count: 0, since: T + 2000, sitOutUntil: T + 2000 + 1_800_000 },
    ],
    [
      "the window passed: a new one",
      [0, 1000, 600_000],
      { count: 1, since: T + 600_000, sitOutUntil: 0 },
    ],
  ])("%s", (_, times, expected) => {
    expect(minorityAt(...times)).toEqual(expected);
  });

  it("a sit-out ends on its time; a new one never shortens a longer one", () => {
    const out = minorityAt(0, 1, 2);
    expect(sitsOut(out, T + 1_800_001)).toBe(true);
    expect(sitsOut(out, T + 1_800_003)).toBe(false);
    expect(sitsOut(undefined, T)).toBe(false);
    const longer = { ...out, sitOutUntil: T + 9_000_000 };
    const again = [3, 4, 5].reduce((record, at) => afterMinority(record, T + at, RULE), longer);
    expect(again.sitOutUntil).toBe(T + 9_000_000);
  });

  it("what the status shows: the count within the window only", () => {
    expect(recentMinority(minorityAt(0, 1), T + 2, RULE.windowMs)).toBe(2);
    expect(recentMinority(minorityAt(0, 1), T + 600_000, RULE.windowMs)).toBe(0);
    expect(recentMinority(undefined, T, RULE.windowMs)).toBe(0);
  });
});
