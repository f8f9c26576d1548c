import type { FollowerSubscriptions } from "../follower-ports.ts";
import { type Followed, standing } from "./subscribers.ts";

/**
 * The registry's subscriptions as the follower reads and moves them (docs/behaviour.md
 * "Subscriptions over WebSocket", the follower). One Query lists a network's subscriptions,
 * its cost growing with them, so it is made when there is something to send (a block to
 * deliver, logs pending, a tip to check), while subscriptions are being caught up, and
 * otherwise once per `LIST_IDLE_MS` (a subscription that resumed is caught up within it, on a
 * chain whose blocks come slower); never at every look at the served head. The follower's
 * moves of a subscription (live at its first block, or a catch-up's step) go through `move`:
 * one whose answer was lost is taken as made (its blocks go out) and made sure of at the next
 * reads, so neither a gap nor a block sent twice comes of a lost answer.
 */

/** The longest the follower goes without reading the subscriptions while it follows (ms). */
export const LIST_IDLE_MS = 3_000;
/** Subscriptions made live at once (each one conditional write). */
export const MOVE_CONCURRENCY = 32;

export interface ListingDeps {
  readonly network: string;
  readonly subscriptions: FollowerSubscriptions;
  readonly clock: () => number;
  /** Connections dropped in this run: their subscriptions are gone, whatever the read says. */
  readonly dropped: ReadonlySet<string>;
}

interface Move {
  readonly id: string;
  readonly expected: number;
  readonly next: number;
  readonly live: boolean;
}

export class SubscriberListing {
  readonly #deps: ListingDeps;
  /**
   * The subscriptions this run made live: the registry's list is eventually consistent, and
   * one read as it was a moment before must not miss a block.
   */
  readonly #madeLive = new Set<string>();
  /** Moves whose answer was lost, tried again until the registry answers (made then, or before). */
  readonly #unsure = new Map<string, Move>();
  #listedAt = Number.NEGATIVE_INFINITY;
  #behind = false;
  #count = 0;

  constructor(deps: ListingDeps) {
    this.#deps = deps;
  }

  /** Subscriptions at the last read. */
  get count(): number {
    return this.#count;
  }

  /** Whether to read them now: `work` (something to send), some catching up, or the idle pace. */
  due(work: boolean): boolean {
    const idle = this.#deps.clock() - this.#listedAt >= LIST_IDLE_MS;
    return work || this.#behind || idle;
  }

  /** The network's subscriptions, as they stand for a cursor whose next block is `next`. */
  async read(next: number): Promise<Followed[]> {
    const { subscriptions, network, dropped, clock } = this.#deps;
    this.#listedAt = clock();
    await this.#settle();
    const subs = (await subscriptions.list(network))
      .filter((sub) => !dropped.has(sub.connection))
      .map((sub) => {
        // A move not made sure of yet is read as made.
        const move = this.#unsure.get(sub.id);
        const moved = move === undefined ? sub : { ...sub, nextBlock: move.next, live: move.live };
        return moved.live !== true && this.#madeLive.has(sub.id) ? { ...moved, live: true } : moved;
      });
    this.#behind = subs.some((sub) => standing(sub, next) === "behind");
    this.#count = subs.length;
    return subs;
  }

  /**
   * Moves `sub` from its `nextBlock` to `next` (`live`: it rides the cursor from now on); false
   * when the registry holds it elsewhere or no more (another run moved it, or it is gone). An
   * answer lost counts as made.
   */
  async move(sub: Followed, next: number, live: boolean): Promise<boolean> {
    const move = { id: sub.id, expected: sub.nextBlock, next, live };
    try {
      if (!(await this.#advance(move))) return false;
    } catch {
      this.#unsure.set(sub.id, move);
    }
    if (live) this.#madeLive.add(sub.id);
    return true;
  }

  /**
   * Makes waiting subscriptions live at their first block, `MOVE_CONCURRENCY` at a time (a
   * thousand clients subscribing at once must not hold the block for a thousand writes in a
   * row); the ids made live.
   */
  async goLive(subs: readonly Followed[]): Promise<ReadonlySet<string>> {
    const made = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < subs.length) {
        const sub = subs[next++] as Followed;
        if (await this.move(sub, sub.nextBlock, true)) made.add(sub.id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(MOVE_CONCURRENCY, subs.length) }, worker));
    return made;
  }

  /** Tries the moves whose answer was lost again: made now, or refused because made before. */
  async #settle(): Promise<void> {
    for (const move of [...this.#unsure.values()]) {
      const answered = await this.#advance(move).then(
        () => true,
        () => false,
      );
      if (answered) this.#unsure.delete(move.id);
    }
  }

  #advance(move: Move): Promise<boolean> {
    const { subscriptions, network } = this.#deps;
    return subscriptions.advance(network, move.id, move.expected, move.next, move.live);
  }
}
