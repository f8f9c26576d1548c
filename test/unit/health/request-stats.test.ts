import { describe, expect, it } from "vitest";
import {
  mergeStats,
  type RequestStats,
  recordOutcome,
  windowOf,
  windowsOf,
} from "../../../functions/core/health/request-stats.ts";

const NOW = 1_800_000_000_000;
const BUCKET_SECONDS = 10;

interface Outcome {
  ok: boolean;
  latencyMs: number;
  secondsAgo: number;
  /** Which of two containers recorded it. */
  container: 0 | 1;
}

const many = (count: number, outcome: Partial<Outcome>): Outcome[] =>
  Array.from({ length: count }, () => ({
    ok: true,
    latencyMs: 100,
    secondsAgo: 5,
    container: 0,
    ...outcome,
  }));

function recordAll(outcomes: readonly Outcome[]): [RequestStats, RequestStats] {
  const containers: [RequestStats, RequestStats] = [{}, {}];
  for (const { ok, latencyMs, secondsAgo, container } of outcomes) {
    recordOutcome(
      containers[container],
      "x",
      ok,
      latencyMs,
      NOW - secondsAgo * 1000,
      BUCKET_SECONDS,
    );
  }
  return containers;
}

type Range = [number, number] | null;

const within = (value: number | null, range: Range): boolean =>
  range === null ? value === null : value !== null && value >= range[0] && value <= range[1];

describe("windowOf over merged container stats", () => {
  it.each<{
    name: string;
    outcomes: Outcome[];
    requests: number;
    errors: number;
    p50: Range;
    p95: Range;
  }>([
    {
      name: "no traffic: zero counts, no percentiles",
      outcomes: [],
      requests: 0,
      errors: 0,
      p50: null,
      p95: null,
    },
    {
      name: "one container: requests and errors counted",
      outcomes: [...many(3, {}), ...many(2, { ok: false })],
      requests: 5,
      errors: 2,
      p50: [64, 128],
      p95: [64, 128],
    },
    {
      name: "two containers merge by addition",
      outcomes: [...many(10, { container: 0 }), ...many(10, { container: 1, ok: false })],
      requests: 20,
      errors: 10,
      p50: [64, 128],
      p95: [64, 128],
    },
    {
      name: "outcomes spread over buckets in the window all count",
      outcomes: [...many(4, { secondsAgo: 5 }), ...many(4, { secondsAgo: 150, container: 1 })],
      requests: 8,
      errors: 0,
      p50: [64, 128],
      p95: [64, 128],
    },
    {
      name: "a bucket before the window is dropped",
      outcomes: [...many(3, { secondsAgo: 5 }), ...many(7, { secondsAgo: 301, ok: false })],
      requests: 3,
      errors: 0,
      p50: [64, 128],
      p95: [64, 128],
    },
    {
      name: "a bucket starting exactly at the window's start counts",
      outcomes: [...many(3, { secondsAgo: 5 }), ...many(7, { secondsAgo: 300, ok: false })],
      requests: 10,
      errors: 7,
      p50: [64, 128],
      p95: [64, 128],
    },
    {
      name: "percentiles after merging a fast and a slow container",
      outcomes: [
        ...many(90, { latencyMs: 10, container: 0 }),
        ...many(10, { latencyMs: 1000, container: 1 }),
      ],
      requests: 100,
      errors: 0,
      p50: [8, 16],
      p95: [512, 1024],
    },
    {
      name: "latency of failures is counted too (a timeout is what the caller waited)",
      outcomes: [...many(10, { latencyMs: 10 }), ...many(10, { latencyMs: 10_000, ok: false })],
      requests: 20,
      errors: 10,
      p50: [8, 16],
      p95: [8192, 16384],
    },
    {
      name: "slower than the last bound reads as the last bound",
      outcomes: many(5, { latencyMs: 100_000 }),
      requests: 5,
      errors: 0,
      p50: [65536, 65536],
      p95: [65536, 65536],
    },
  ])("$name", ({ outcomes, requests, errors, p50, p95 }) => {
    const [a, b] = recordAll(outcomes);
    const window = windowOf(mergeStats(a, b).x ?? [], NOW, 300);
    expect({ requests: window.requests, errors: window.errors }).toEqual({ requests, errors });
    expect(within(window.latency_ms.p50, p50)).toBe(true);
    expect(within(window.latency_ms.p95, p95)).toBe(true);
  });
});

describe("recordOutcome and mergeStats", () => {
  it("puts outcomes of one bucket together and keeps buckets in time order when one arrives late", () => {
    const stats: RequestStats = {};
    recordOutcome(stats, "x", true, 10, NOW + 1000, BUCKET_SECONDS);
    recordOutcome(stats, "x", true, 10, NOW + 9000, BUCKET_SECONDS);
    recordOutcome(stats, "x", true, 10, NOW - 25_000, BUCKET_SECONDS);
    expect(stats.x?.map((bucket) => [bucket.start, bucket.requests])).toEqual([
      [NOW - 30_000, 1],
      [NOW, 2],
    ]);
  });

  it("merging leaves its inputs untouched and does not depend on order", () => {
    const [a, b] = recordAll([
      ...many(3, { container: 0, secondsAgo: 5 }),
      ...many(2, { container: 1, secondsAgo: 5, ok: false, latencyMs: 700 }),
      ...many(1, { container: 1, secondsAgo: 45 }),
    ]);
    const before = structuredClone([a, b]);
    const ab = mergeStats(a, b);
    expect([a, b]).toEqual(before);
    expect(mergeStats(b, a).x?.toSorted((p, q) => p.start - q.start)).toEqual(ab.x);
  });

  it("windowsOf gives every provider its window", () => {
    const stats: RequestStats = {};
    recordOutcome(stats, "x", false, 10, NOW, BUCKET_SECONDS);
    recordOutcome(stats, "y", true, 10, NOW, BUCKET_SECONDS);
    const windows = windowsOf(stats, NOW, 300);
    expect([windows.x?.errors, windows.y?.requests]).toEqual([1, 1]);
  });
});
