/**
 * The hedge budget of one network in one container: hedges within the sliding window stay at
 * or under `ratio` × the requests within it, so a slow network never doubles provider load.
 * Pure: the time is passed in.
 */

/** The window is cut into this many slots: it moves on a slot at a time. */
const SLOTS = 6;

interface Slot {
  start: number;
  requests: number;
  hedges: number;
}

/** Room for floating-point error in ratio × requests (0.1 × 30 is 3.0000000000000004). */
const EPSILON = 1e-9;

export class HedgeBudget {
  readonly #slotMs: number;
  readonly #windowMs: number;
  readonly #slots: Slot[] = Array.from({ length: SLOTS }, () => ({
    start: Number.NEGATIVE_INFINITY,
    requests: 0,
    hedges: 0,
  }));

  constructor(windowSeconds: number) {
    this.#windowMs = windowSeconds * 1000;
    this.#slotMs = this.#windowMs / SLOTS;
  }

  /** A request went upstream: it counts toward what may be hedged. */
  request(now: number): void {
    this.#slot(now).requests++;
  }

  /** Takes one hedge when the window has room for it under `ratio`; false otherwise. */
  take(now: number, ratio: number): boolean {
    let requests = 0;
    let hedges = 0;
    for (const slot of this.#slots) {
      if (slot.start <= now && now - slot.start < this.#windowMs) {
        requests += slot.requests;
        hedges += slot.hedges;
      }
    }
    if (hedges + 1 > ratio * requests + EPSILON) return false;
    this.#slot(now).hedges++;
    return true;
  }

  #slot(now: number): Slot {
    const index = Math.floor(now / this.#slotMs);
    const slot = this.#slots[index % SLOTS] as Slot;
    const start = index * this.#slotMs;
    if (slot.start !== start) {
      slot.start = start;
      slot.requests = 0;
      slot.hedges = 0;
    }
    return slot;
  }
}
