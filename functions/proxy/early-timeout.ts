/**
 * Lambda stops a function at its deadline, and API Gateway then answers a bare 500. The proxy
 * gives up a moment before (TIMEOUT_EARLY_MS), so that its error boundary answers instead, with
 * a JSON-RPC error carrying the caller's id. This is middy's `timeoutEarly`, the same error
 * included, but middy starts and clears a timer per invocation; here one timer, armed for the
 * nearest deadline, serves every invocation in flight (the local server runs many at once, and
 * a Lambda container's timer outlives an invocation that ended in time, ready for the next).
 */
export const TIMEOUT_EARLY_MS = 5;

interface InFlight {
  readonly deadline: number;
  readonly reject: (error: Error) => void;
}

/** The error middy's `timeoutEarly` throws, so logs and answers stay what they were. */
function timeoutError(): Error {
  const error = new Error("[AbortError]: The operation was aborted.", {
    cause: { package: "@middy/core" },
  });
  error.name = "TimeoutError";
  return error;
}

export class EarlyTimeouts {
  readonly #inFlight = new Set<InFlight>();
  #timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for; Infinity when it is not armed. */
  #armedFor = Number.POSITIVE_INFINITY;

  /**
   * `work`'s outcome, or a TimeoutError once `remainingMs - TIMEOUT_EARLY_MS` have passed,
   * whichever comes first. Work that times out runs on; nobody waits for it.
   */
  race<T>(work: Promise<T>, remainingMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = {
        deadline: performance.now() + Math.max(0, remainingMs - TIMEOUT_EARLY_MS),
        reject,
      };
      this.#inFlight.add(entry);
      if (entry.deadline < this.#armedFor) this.#arm(entry.deadline);
      else if (this.#inFlight.size === 1) this.#timer?.ref();
      work.then(
        (value) => {
          this.#done(entry);
          resolve(value);
        },
        (error: unknown) => {
          this.#done(entry);
          reject(error);
        },
      );
    });
  }

  /**
   * The timer holds the process open while an invocation is in flight, as middy's did (a hung
   * invocation still gets its answer), and not once none is: an idle process may exit.
   */
  #done(entry: InFlight): void {
    this.#inFlight.delete(entry);
    if (this.#inFlight.size === 0) this.#timer?.unref();
  }

  #arm(deadline: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, deadline - performance.now()));
  }

  #expire(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.#inFlight) {
      if (entry.deadline <= now) {
        this.#done(entry);
        entry.reject(timeoutError());
      } else if (entry.deadline < next) {
        next = entry.deadline;
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }
}
