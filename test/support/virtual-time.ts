/**
 * A clock and `sleep` for tests of loops that run side by side: time moves only when every
 * task is waiting, to the next timer due, so what runs concurrently runs in a fixed order and
 * a minute of it takes milliseconds.
 */
export class VirtualTime {
  now: number;
  readonly #timers: Array<{ at: number; seq: number; resolve: () => void }> = [];
  #seq = 0;

  constructor(start = 1_000_000) {
    this.now = start;
  }

  readonly clock = (): number => this.now;

  readonly sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.#timers.push({ at: this.now + Math.max(0, ms), seq: this.#seq++, resolve });
    });

  /** Calls `task` at `at` (ms). */
  at(at: number, task: () => void): void {
    this.#timers.push({ at, seq: this.#seq++, resolve: task });
  }

  /** Runs until `done` settles, moving time from timer to timer. */
  async run<T>(done: Promise<T>, maxSteps = 1_000_000): Promise<T> {
    let settled = false;
    const result = done.finally(() => {
      settled = true;
    });
    for (let step = 0; step < maxSteps && !settled; step++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (settled) break;
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers.shift();
      if (next === undefined) continue;
      this.now = Math.max(this.now, next.at);
      next.resolve();
    }
    return result;
  }
}
