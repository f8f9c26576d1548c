/**
 * A function's warm Lambda containers: N runtimes, each made by `create` with state of its
 * own. An invocation goes to the next idle container in turn (to the next one in turn when all
 * are busy), and a container whose invocation timed out is replaced by a fresh one, as Lambda
 * resets the runtime of a timed-out function.
 */

export interface Containers<H> {
  readonly count: number;
  readonly create: () => H;
}

export interface Container<H> {
  handler: H;
  inFlight: number;
}

export class ContainerPool<H> {
  readonly #pool: Container<H>[];
  readonly #create: (() => H) | undefined;
  #next = 0;

  /** A pool of `containers`, or of one runtime (`handler`) never replaced. */
  constructor(source: { readonly handler: H } | { readonly containers: Containers<H> }) {
    if ("handler" in source) {
      this.#pool = [{ handler: source.handler, inFlight: 0 }];
      this.#create = undefined;
    } else {
      const { containers } = source;
      this.#create = containers.create;
      this.#pool = Array.from({ length: Math.max(1, containers.count) }, () => ({
        handler: containers.create(),
        inFlight: 0,
      }));
    }
  }

  pick(): Container<H> {
    const pool = this.#pool;
    for (let offset = 0; offset < pool.length; offset++) {
      const index = (this.#next + offset) % pool.length;
      const container = pool[index] as Container<H>;
      if (container.inFlight === 0) {
        this.#next = (index + 1) % pool.length;
        return container;
      }
    }
    const container = pool[this.#next] as Container<H>;
    this.#next = (this.#next + 1) % pool.length;
    return container;
  }

  /**
   * After a timeout: a fresh runtime in place of `handler`, unless the container was replaced
   * already or the pool holds a single runtime it cannot remake.
   */
  reset(container: Container<H>, handler: H = container.handler): void {
    if (this.#create !== undefined && container.handler === handler) {
      container.handler = this.#create();
    }
  }
}
