/**
 * Per-provider request outcomes over real traffic (docs/behaviour.md §5.5), kept in time buckets so that
 * aggregates from many containers merge by plain addition: every field of a bucket is a
 * counter, latency included (a fixed histogram instead of raw samples). The same counters
 * feed "failing often" and the `stats` of the status route.
 */

/**
 * Upper bounds (ms, inclusive) of the latency histogram's bins, doubling from 2 ms to ~65 s;
 * one more bin holds everything slower. Log-spaced so every bin has the same relative width,
 * which keeps percentile estimates within a factor of two at any scale.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Array.from(
  { length: 16 },
  (_, i) => 2 ** (i + 1),
);

export interface StatsBucket {
  /** Start of the bucket (ms since the epoch), a multiple of the bucket length. */
  readonly start: number;
  requests: number;
  errors: number;
  /** Counts per bin of `LATENCY_BOUNDS_MS`, plus the overflow bin last. */
  latency: number[];
}

/** provider → its buckets, oldest first. */
export type RequestStats = Record<string, StatsBucket[]>;

/** What "failing often" needs from a provider's traffic window. */
export interface RequestWindow {
  readonly requests: number;
  readonly errors: number;
}

export interface RequestWindowStats extends RequestWindow {
  /** Estimated from the histogram; null when there were no requests. */
  readonly latency_ms: { readonly p50: number | null; readonly p95: number | null };
}

function emptyBucket(start: number): StatsBucket {
  return {
    start,
    requests: 0,
    errors: 0,
    latency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0),
  };
}

function latencyBin(latencyMs: number): number {
  const bin = LATENCY_BOUNDS_MS.findIndex((bound) => latencyMs <= bound);
  return bin === -1 ? LATENCY_BOUNDS_MS.length : bin;
}

function bucketFor(buckets: StatsBucket[], start: number): StatsBucket {
  // Outcomes arrive in time order, so the bucket is almost always the last one.
  for (let i = buckets.length - 1; i >= 0; i--) {
    const bucket = buckets[i];
    if (bucket === undefined || bucket.start < start) {
      const created = emptyBucket(start);
      buckets.splice(i + 1, 0, created);
      return created;
    }
    if (bucket.start === start) return bucket;
  }
  const created = emptyBucket(start);
  buckets.unshift(created);
  return created;
}

/**
 * Counts one request outcome. Updates `stats` in place: it is the container's accumulator
 * on the hot path, flushed (and replaced by `{}`) every few seconds, so copying it per
 * request would only cost allocations. Latency is recorded for failures too: a timeout is
 * what the caller waited.
 */
export function recordOutcome(
  stats: RequestStats,
  provider: string,
  ok: boolean,
  latencyMs: number,
  now: number,
  bucketSeconds: number,
): void {
  const bucketMs = bucketSeconds * 1000;
  const buckets = stats[provider] ?? [];
  stats[provider] = buckets;
  const bucket = bucketFor(buckets, Math.floor(now / bucketMs) * bucketMs);
  bucket.requests += 1;
  if (!ok) bucket.errors += 1;
  const bin = latencyBin(latencyMs);
  bucket.latency[bin] = (bucket.latency[bin] ?? 0) + 1;
}

/** Adds two aggregates (e.g. two containers' flushes), bucket by bucket. Inputs are left untouched. */
export function mergeStats(a: RequestStats, b: RequestStats): RequestStats {
  const merged: RequestStats = {};
  for (const source of [a, b]) {
    for (const [provider, buckets] of Object.entries(source)) {
      const target = merged[provider] ?? [];
      merged[provider] = target;
      for (const bucket of buckets) {
        const into = bucketFor(target, bucket.start);
        into.requests += bucket.requests;
        into.errors += bucket.errors;
        into.latency = into.latency.map((count, bin) => count + (bucket.latency[bin] ?? 0));
      }
    }
  }
  return merged;
}

/**
 * Estimates the q-quantile from the histogram, interpolating log-linearly inside the bin
 * that holds it (the bins are log-spaced). The overflow bin has no upper bound, so a
 * quantile that lands there reads as the last bound.
 */
function quantile(latency: readonly number[], total: number, q: number): number {
  const target = q * total;
  let seen = 0;
  let bin = 0;
  // Walk to the bin that holds the target rank; the overflow bin, last, holds what is left.
  while (bin < latency.length - 1 && seen + (latency[bin] ?? 0) < target) {
    seen += latency[bin] ?? 0;
    bin += 1;
  }
  const lower = bin === 0 ? 0 : (LATENCY_BOUNDS_MS[bin - 1] ?? 0);
  const upper = LATENCY_BOUNDS_MS[bin];
  if (upper === undefined) return lower;
  const fraction = (target - seen) / (latency[bin] ?? 1);
  return Math.round(lower === 0 ? upper * fraction : lower * (upper / lower) ** fraction);
}

/**
 * One provider's traffic over the last `windowSeconds`. A bucket counts when it starts
 * within the window, so the window is exact to one bucket length.
 */
export function windowOf(
  buckets: readonly StatsBucket[],
  now: number,
  windowSeconds: number,
): RequestWindowStats {
  const from = now - windowSeconds * 1000;
  let requests = 0;
  let errors = 0;
  const latency: number[] = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
  for (const bucket of buckets) {
    if (bucket.start < from) continue;
    requests += bucket.requests;
    errors += bucket.errors;
    for (const [bin, count] of bucket.latency.entries()) latency[bin] = (latency[bin] ?? 0) + count;
  }
  const total = latency.reduce((sum, count) => sum + count, 0);
  return {
    requests,
    errors,
    latency_ms: {
      p50: total === 0 ? null : quantile(latency, total, 0.5),
      p95: total === 0 ? null : quantile(latency, total, 0.95),
    },
  };
}

/** Every provider's window, as the monitor feeds it to the quorum. */
export function windowsOf(
  stats: RequestStats,
  now: number,
  windowSeconds: number,
): Record<string, RequestWindowStats> {
  return Object.fromEntries(
    Object.entries(stats).map(([provider, buckets]) => [
      provider,
      windowOf(buckets, now, windowSeconds),
    ]),
  );
}
