/**
 * `Retry-After` on a 429 or 503 (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. The
 * provider's own word on when to come back beats a fixed base cooldown.
 */

const DELAY_SECONDS = /^\s*(\d{1,10})\s*$/;

/** Whether the status is one whose `Retry-After` says when the provider will take traffic again. */
export function setsRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}

/** The cooldown an answer's `Retry-After` asks for (ms), or null when its status sets none. */
export function requestedCooldownMs(
  status: number,
  header: string | undefined,
  now: number,
): number | null {
  return setsRetryAfter(status) ? retryAfterMs(header, now) : null;
}

/** Milliseconds from `now` the header asks for, or null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | null {
  if (header === undefined) return null;
  const seconds = DELAY_SECONDS.exec(header);
  if (seconds) return Number(seconds[1]) * 1000;
  // An HTTP-date names a weekday and GMT ("Fri, 31 Dec 1999 23:59:59 GMT"); a bare number
  // or a word must not be read as a date.
  if (!/GMT\s*$/.test(header)) return null;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}
