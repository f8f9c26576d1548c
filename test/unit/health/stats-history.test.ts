import { describe, expect, it } from "vitest";
import { type RequestStats, recordOutcome } from "../../../functions/core/health/request-stats.ts";
import { historyOf } from "../../../functions/core/health/stats-history.ts";

/**
 * The status page's hour of history: 10 s buckets (as every container adds them up) summed
 * into one point a minute, with latency percentiles from the merged histogram.
 */

const MINUTE = 60_000;
/** A minute boundary, plus 30 s: the current minute is half full. */
const NOW = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE) + 30_000;

function stats(outcomes: Array<[at: number, ok: boolean, latencyMs: number]>): RequestStats {
  const recorded: RequestStats = {};
  for (const [at, ok, latencyMs] of outcomes) recordOutcome(recorded, "p", ok, latencyMs, at, 10);
  return recorded;
}

describe("historyOf", () => {
  it("is 60 points a minute apart, the last one the minute now falls in", () => {
    const points = historyOf([], NOW);
    expect(points).toHaveLength(60);
    expect(points.at(-1)?.start).toBe(NOW - 30_000);
    expect(points[0]?.start).toBe(NOW - 30_000 - 59 * MINUTE);
    expect(points.every((point) => point.requests === 0 && point.p50 === null)).toBe(true);
  });

  it("sums the buckets of each minute: requests, errors and latency percentiles", () => {
    const minuteAgo = NOW - MINUTE;
    const buckets =
      stats([
        // Six buckets of the previous minute, one request each, one of them failed and slow.
        ...[0, 10, 20, 30, 40, 50].map((second, index): [number, boolean, number] => [
          minuteAgo - 30_000 + second * 1000,
          index !== 3,
          index === 3 ? 1000 : 4,
        ]),
        // This minute: two fast ones.
        [NOW - 1000, true, 2],
        [NOW, true, 2],
      ]).p ?? [];
    const points = historyOf(buckets, NOW);
    const [previous, current] = points.slice(-2);
    expect(previous).toMatchObject({ requests: 6, errors: 1 });
    expect(previous?.p50).toBeLessThanOrEqual(4);
    expect(previous?.p95).toBeGreaterThan(512);
    expect(current).toMatchObject({ requests: 2, errors: 0, p50: 1, p95: 2 });
  });

  it("leaves out buckets older than the hour and ignores ones from the future", () => {
    const buckets =
      stats([
        [NOW - 61 * MINUTE, false, 5],
        [NOW + 2 * MINUTE, false, 5],
        [NOW - 59 * MINUTE, true, 5],
      ]).p ?? [];
    const points = historyOf(buckets, NOW);
    expect(points.reduce((sum, point) => sum + point.requests, 0)).toBe(1);
    expect(points.reduce((sum, point) => sum + point.errors, 0)).toBe(0);
  });

  it("takes another window and step", () => {
    const points = historyOf(stats([[NOW, true, 3]]).p ?? [], NOW, 600, 120);
    expect(points).toHaveLength(5);
    expect(points.at(-1)?.requests).toBe(1);
  });
});
