/**
 * How often a provider was in the minority of a read consensus (docs/behaviour.md §17.4), kept
 * in its shared health item beside its strikes: a fixed window of `minority_window_seconds`
 * counting the times it answered against an agreed answer, and once it did so
 * `minority_limit` times, the time until which consensus leaves it out. Strikes are reset by
 * any success; this is not, so a provider that lies on a share of its answers and tells the
 * truth on the rest is still found out.
 */
export interface MinorityRecord {
  /** Times in the minority since `since` (ms). */
  readonly count: number;
  readonly since: number;
  /** Left out of consensus routing until then (ms); 0 for never. */
  readonly sitOutUntil: number;
}

export interface MinorityRule {
  readonly limit: number;
  readonly windowMs: number;
  readonly sitOutMs: number;
}

export const NO_MINORITY: MinorityRecord = { count: 0, since: 0, sitOutUntil: 0 };

/**
 * The record after one more time in the minority at `now`: counted in the window (a new one
 * when the last is over); at the limit, the provider sits out and the count starts again.
 */
export function afterMinority(
  record: MinorityRecord | undefined,
  now: number,
  rule: MinorityRule,
): MinorityRecord {
  const current = record ?? NO_MINORITY;
  const inWindow = current.count > 0 && now - current.since < rule.windowMs;
  const count = inWindow ? current.count + 1 : 1;
  const since = inWindow ? current.since : now;
  if (count < rule.limit) return { count, since, sitOutUntil: current.sitOutUntil };
  return { count: 0, since: now, sitOutUntil: Math.max(current.sitOutUntil, now + rule.sitOutMs) };
}

/** Whether consensus leaves the provider out at `now`. */
export function sitsOut(record: MinorityRecord | undefined, now: number): boolean {
  return record !== undefined && record.sitOutUntil > now;
}

/** Times in the minority within the window at `now` (0 once the window is over). */
export function recentMinority(
  record: MinorityRecord | undefined,
  now: number,
  windowMs: number,
): number {
  if (record === undefined || record.count === 0) return 0;
  return now - record.since < windowMs ? record.count : 0;
}
