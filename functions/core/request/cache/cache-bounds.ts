/**
 * What the answer cache may spend on one request and in one container-minute
 * (docs/behaviour.md §11.12): a caller chooses the params, so without bounds one request could
 * write a hundred items to DynamoDB, or flush a container's memory tier.
 */

/** One request's allowance, shared with the internal calls serving its log queries. */
export class RequestCacheBounds {
  #sharedWrites: number;
  #memoryBytes: number;

  constructor(limits: { readonly sharedWrites: number; readonly memoryBytes: number }) {
    this.#sharedWrites = limits.sharedWrites;
    this.#memoryBytes = limits.memoryBytes;
  }

  /** Takes one shared-tier write; false when the request has none left. */
  takeSharedWrite(): boolean {
    if (this.#sharedWrites <= 0) return false;
    this.#sharedWrites--;
    return true;
  }

  /** Takes `bytes` of memory-tier room; false (nothing taken) when they do not fit. */
  takeMemory(bytes: number): boolean {
    if (bytes > this.#memoryBytes) return false;
    this.#memoryBytes -= bytes;
    return true;
  }
}

const MINUTE_MS = 60_000;

/** A container's shared-tier writes in the current clock minute, every network together. */
export class MinuteWrites {
  #minute = Number.NEGATIVE_INFINITY;
  #writes = 0;

  /** Takes one write of the minute `now` is in; false when `limit` of them were taken. */
  take(now: number, limit: number): boolean {
    const minute = Math.floor(now / MINUTE_MS);
    if (minute !== this.#minute) {
      this.#minute = minute;
      this.#writes = 0;
    }
    if (this.#writes >= limit) return false;
    this.#writes++;
    return true;
  }
}
