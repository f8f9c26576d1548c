/**
 * Latency quantiles over a sliding window, per key, in one container's memory: a histogram per
 * slot of the window, so recording is one increment and old answers fall out slot by slot.
 * Pure: the time is passed in.
 */

/** Bins per doubling: each bin is 2^(1/8) ≈ 9 % wide, so a quantile is read within 9 %. */
const BINS_PER_DOUBLING = 8;
/** Bin upper bounds from 1 ms to 65.5 s; one more bin holds anything slower. */
const BOUNDS_MS: readonly number[] = Array.from(
  { length: 16 * BINS_PER_DOUBLING + 1 },
  (_, k) => 2 ** (k / BINS_PER_DOUBLING),
);
/** The window is cut into this many slots: it moves on a slot at a time. */
const SLOTS = 6;

interface Slot {
  start: number;
  total: number;
  readonly counts: number[];
}

function binOf(latencyMs: number): number {
  if (!(latencyMs > 1)) return 0;
  const bin = Math.ceil(Math.log2(latencyMs) * BINS_PER_DOUBLING);
  return Math.min(bin, BOUNDS_MS.length);
}

export class LatencyWindows {
  readonly #slotMs: number;
  readonly #windowMs: number;
  readonly #keys = new Map<string, Slot[]>();

  constructor(windowSeconds: number) {
    this.#windowMs = windowSeconds * 1000;
    this.#slotMs = this.#windowMs / SLOTS;
  }

  record(key: string, latencyMs: number, now: number): void {
    let ring = this.#keys.get(key);
    if (ring === undefined) {
      ring = Array.from({ length: SLOTS }, () => ({
        start: Number.NEGATIVE_INFINITY,
        total: 0,
        counts: new Array<number>(BOUNDS_MS.length + 1).fill(0),
      }));
      this.#keys.set(key, ring);
    }
    const index = Math.floor(now / this.#slotMs);
    const slot = ring[index % SLOTS] as Slot;
    const start = index * this.#slotMs;
    if (slot.start !== start) {
      slot.start = start;
      slot.total = 0;
      slot.counts.fill(0);
    }
    const bin = binOf(latencyMs);
    slot.counts[bin] = (slot.counts[bin] ?? 0) + 1;
    slot.total++;
  }

  /**
   * The q-quantile of the key's latencies within the window, read as the upper bound of the bin
   * that holds it (a hedge a little late rather than early); null with fewer than `minSamples`.
   */
  quantile(key: string, q: number, now: number, minSamples: number): number | null {
    const ring = this.#keys.get(key);
    if (ring === undefined) return null;
    const live = ring.filter(
      (slot) => slot.total > 0 && slot.start <= now && now - slot.start < this.#windowMs,
    );
    const total = live.reduce((sum, slot) => sum + slot.total, 0);
    if (total === 0 || total < minSamples) return null;
    const rank = Math.ceil(q * total);
    let seen = 0;
    for (let bin = 0; bin <= BOUNDS_MS.length; bin++) {
      for (const slot of live) seen += slot.counts[bin] ?? 0;
      if (seen >= rank) return BOUNDS_MS[Math.min(bin, BOUNDS_MS.length - 1)] ?? null;
    }
    return BOUNDS_MS[BOUNDS_MS.length - 1] ?? null;
  }
}
