import type { FollowerCursor } from "./cursor.ts";
import { CURSOR_TTL_MS } from "./follow-settings.ts";
import type { FollowerStore } from "./follower-ports.ts";

/**
 * The cursor a run holds under the network's lease (docs/behaviour.md "Subscriptions over
 * WebSocket", where the follower runs), and its writes: each conditional on the version the
 * run holds, so a write that loses means another run took the lease over, and this one stops.
 * A write whose answer was lost (a timeout, a reset connection: made or not, nobody knows) is
 * settled by reading the cursor back before the next write: made by this run, it is taken as
 * held; not made, the write is tried again; made by another run, the lease is gone. A write
 * refused is read back too: the SDK sends a request again when its answer is lost, and the
 * retry is refused by its own first attempt's write, which is then this run's.
 */

/** The lease is gone (another run wrote the cursor): this run stops following the network. */
export class LostLease extends Error {}

export interface LeasedCursorDeps {
  readonly network: string;
  readonly holder: string;
  readonly store: FollowerStore;
  readonly clock: () => number;
}

export class LeasedCursor {
  readonly #deps: LeasedCursorDeps;
  #cursor: FollowerCursor | null = null;
  /** A write whose answer was lost, to settle before anything else is written. */
  #unsure: FollowerCursor | null = null;

  constructor(deps: LeasedCursorDeps) {
    this.#deps = deps;
  }

  /** The cursor held, or null when the run holds no lease. */
  get current(): FollowerCursor | null {
    return this.#cursor;
  }

  held(): FollowerCursor {
    if (this.#cursor === null) throw new LostLease("the follower holds no lease");
    return this.#cursor;
  }

  /** Holds `stored` (read before the lease is taken), to write the lease over it. */
  hold(stored: FollowerCursor): void {
    this.#cursor = stored;
    this.#unsure = null;
  }

  /** A change kept in memory only (the next write carries it). */
  set(next: FollowerCursor): void {
    this.held();
    this.#cursor = next;
  }

  /** Writes `next` over the version held. */
  async write(next: FollowerCursor): Promise<void> {
    const { store, network, clock } = this.#deps;
    await this.#settle();
    const held = this.held();
    const written = { ...next, version: held.version + 1 };
    let made: boolean;
    try {
      made = await store.writeCursor(network, written, held.version, clock() + CURSOR_TTL_MS);
    } catch (error) {
      this.#unsure = written;
      await this.#settle();
      if (this.#cursor === written) return;
      throw error;
    }
    if (made) {
      this.#cursor = written;
      return;
    }
    this.#unsure = written;
    await this.#settle();
    if (this.#cursor !== written) this.#lost();
  }

  /** Gives the lease back (a failure to is not thrown: the lease then runs out). */
  async release(released: FollowerCursor): Promise<void> {
    if (this.#cursor === null) return;
    await this.write(released).catch(() => undefined);
    this.#cursor = null;
  }

  /** Finds out whether the write whose answer was lost was made (a read of the cursor fails: still unsure). */
  async #settle(): Promise<void> {
    const unsure = this.#unsure;
    if (unsure === null) return;
    const stored = await this.#deps.store.readCursor(this.#deps.network);
    this.#unsure = null;
    if (stored?.version === unsure.version && stored.holder === unsure.holder) {
      this.#cursor = unsure;
      return;
    }
    if ((stored?.version ?? 0) !== this.held().version) this.#lost();
  }

  #lost(): never {
    this.#cursor = null;
    throw new LostLease(
      `the follower's cursor of ${this.#deps.network} was written by another run`,
    );
  }
}
