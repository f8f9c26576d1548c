/**
 * The timeouts of a function's invocations. Every invocation waits the same time, so their
 * deadlines fall in the order they started, and one timer, armed for the oldest invocation
 * still waiting, serves them all. A timer per invocation cost the emulator a list insert and
 * removal in Node's timers on every request.
 */
export class InvocationDeadlines<T> {
  readonly #durationMs: number;
  readonly #expired: T;
  /** Oldest first; entries before `#head` are gone. */
  #waiting: Waiting<T>[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;

  /** Each watched invocation is given `expired` once `durationMs` have passed. */
  constructor(durationMs: number, expired: T) {
    this.#durationMs = durationMs;
    this.#expired = expired;
  }

  /** Starts the clock of one invocation: `onExpiry(expired)` unless released in time. */
  watch(onExpiry: (expired: T) => void): Waiting<T> {
    const waiting: Waiting<T> = {
      deadline: performance.now() + this.#durationMs,
      onExpiry,
      done: false,
    };
    this.#waiting.push(waiting);
    // A timer already armed is due no later than this deadline.
    if (this.#timer === undefined) this.#arm(this.#durationMs);
    return waiting;
  }

  /** The invocation settled: its clock stops. */
  release(waiting: Waiting<T>): void {
    waiting.done = true;
    this.#dropDone();
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #dropDone(): void {
    const waiting = this.#waiting;
    while (this.#head < waiting.length && (waiting[this.#head] as Waiting<T>).done) this.#head++;
    if (this.#head === waiting.length) {
      waiting.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= waiting.length) {
      // One invocation still waiting holds up those behind it: keep the array short.
      this.#waiting = waiting.slice(this.#head);
      this.#head = 0;
    }
  }

  #arm(delayMs: number): void {
    this.#timer = setTimeout(() => this.#expire(), delayMs);
    // Nobody waits on an invocation once the server and its connections are gone.
    this.#timer.unref();
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (;;) {
      this.#dropDone();
      const first = this.#waiting[this.#head];
      if (first === undefined) return;
      if (first.deadline > now) {
        this.#arm(Math.ceil(first.deadline - now));
        return;
      }
      first.done = true;
      first.onExpiry(this.#expired);
    }
  }
}

export interface Waiting<T> {
  readonly deadline: number;
  readonly onExpiry: (expired: T) => void;
  done: boolean;
}
