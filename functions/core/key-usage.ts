/**
 * Per-API-key request limits (`requests_per_minute`) across every Lambda container. HTTP APIs
 * have no usage plans, and a DynamoDB write per request would cost more than the request, so
 * each container counts a key's requests itself and, every few seconds, adds its count to the
 * key's shared counter for the minute; the counter answers with the total across containers.
 * A request is admitted while that total plus this container's unflushed count is under the
 * limit. The limit can be exceeded by at most what the other containers admit between two of
 * their flushes; a new minute starts every counter afresh.
 */

export interface KeyLimit {
  readonly name: string;
  readonly requestsPerMinute: number;
}

/** What to add to a key's shared counter for one minute. */
export interface PendingCount {
  readonly key: string;
  /** Start of the minute, ms since the epoch. */
  readonly minute: number;
  readonly count: number;
}

interface Window {
  readonly minute: number;
  /** The shared total as the last flush saw it (this container's flushed counts included). */
  shared: number;
  /** Admitted here and not yet added to the shared counter. */
  pending: number;
}

const MINUTE_MS = 60_000;

export class KeyUsage {
  readonly #clock: () => number;
  readonly #windows = new Map<string, Window>();

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  #window(key: string): Window {
    const minute = Math.floor(this.#clock() / MINUTE_MS) * MINUTE_MS;
    let window = this.#windows.get(key);
    if (window === undefined || window.minute !== minute) {
      window = { minute, shared: 0, pending: 0 };
      this.#windows.set(key, window);
    }
    return window;
  }

  /** Counts the request and returns true, or returns false when the key's minute is used up. */
  admit(limit: KeyLimit): boolean {
    const window = this.#window(limit.name);
    if (window.shared + window.pending >= limit.requestsPerMinute) return false;
    window.pending++;
    return true;
  }

  /**
   * The counts to add to the shared counters now, one per key used this minute (a zero count
   * still learns the others' total); they leave the pending count at once.
   */
  takePending(): PendingCount[] {
    const current = Math.floor(this.#clock() / MINUTE_MS) * MINUTE_MS;
    const taken: PendingCount[] = [];
    for (const [key, window] of this.#windows) {
      if (window.minute < current) {
        // A past minute: flush what is left, then forget it.
        if (window.pending > 0) taken.push({ key, minute: window.minute, count: window.pending });
        this.#windows.delete(key);
        continue;
      }
      taken.push({ key, minute: window.minute, count: window.pending });
      window.pending = 0;
    }
    return taken;
  }

  /** The shared total a flush of `key`'s `minute` returned. */
  recordShared(key: string, minute: number, total: number): void {
    const window = this.#windows.get(key);
    if (window !== undefined && window.minute === minute)
      window.shared = Math.max(window.shared, total);
  }

  /** A flush that failed: its counts are pending again, so none is lost. */
  restore(counts: readonly PendingCount[]): void {
    for (const { key, minute, count } of counts) {
      const window = this.#windows.get(key);
      if (window !== undefined && window.minute === minute) window.pending += count;
    }
  }
}
