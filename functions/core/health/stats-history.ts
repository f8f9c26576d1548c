import { type StatsBucket, windowOf } from "./request-stats.ts";

/**
 * A provider's traffic over the last hour as a series of points, for the status page's
 * charts: the request-stat buckets every container adds to (10 s each) summed into steps of
 * a minute, each with its request count, errors and latency percentiles from the merged
 * histogram. A step without traffic is a point with zero requests and no latency, so a
 * provider that got no traffic shows a flat line rather than a gap that hides the time.
 */

/** The page shows this much history. */
export const HISTORY_WINDOW_SECONDS = 3600;

/** One chart point per this many seconds. */
export const HISTORY_STEP_SECONDS = 60;

export interface HistoryPoint {
  /** Start of the step (ms since the epoch). */
  readonly start: number;
  readonly requests: number;
  readonly errors: number;
  readonly p50: number | null;
  readonly p95: number | null;
}

/**
 * The points of the window ending at `now`, oldest first: `windowSeconds / stepSeconds` of
 * them, the last one the step `now` falls in (it may still be filling).
 */
export function historyOf(
  buckets: readonly StatsBucket[],
  now: number,
  windowSeconds: number = HISTORY_WINDOW_SECONDS,
  stepSeconds: number = HISTORY_STEP_SECONDS,
): HistoryPoint[] {
  const stepMs = stepSeconds * 1000;
  const steps = Math.max(1, Math.ceil(windowSeconds / stepSeconds));
  const lastStart = Math.floor(now / stepMs) * stepMs;
  const firstStart = lastStart - (steps - 1) * stepMs;
  const perStep: StatsBucket[][] = Array.from({ length: steps }, () => []);
  for (const bucket of buckets) {
    const index = Math.floor((bucket.start - firstStart) / stepMs);
    perStep[index]?.push(bucket);
  }
  return perStep.map((inStep, index) => {
    const start = firstStart + index * stepMs;
    // Every bucket of the step starts within it, so the step's own window takes them all.
    const window = windowOf(inStep, start + stepMs, stepSeconds);
    return {
      start,
      requests: window.requests,
      errors: window.errors,
      p50: window.latency_ms.p50,
      p95: window.latency_ms.p95,
    };
  });
}
