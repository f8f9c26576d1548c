import { type FollowerSettings, pollMs } from "./follow-settings.ts";

/**
 * When the follower reads the served head, and when it asks a quorum member for the block it
 * expects next (docs/behaviour.md "Subscriptions over WebSocket", how soon a block goes out).
 *
 * The gateway publishes a block as the served head once a container saw a quorum member show
 * it, and serves it a publication delay later. Its own polls come every half a block time, so
 * alone they find a block up to half a block time after it appeared: with the delay, most of
 * a block time at 1 s blocks. The follower knows when the next block is due (a block time
 * after the last one was published), so from a little before then (the lead) it asks a member
 * itself, a few times (`probeHead`, published as any poll's answer is). The lead follows the
 * chain's rhythm: a block the first ask found may have been there a while, so the next first
 * ask goes earlier; one the first ask missed was asked early enough, so the lead shrinks.
 * Once a member showed the block, the follower reads it ahead (`readAhead`) as soon as its
 * container's copy of the chain position holds the publication: the answer is held back from
 * it but kept in the answer cache, so the read when the block is served costs no provider's
 * round trip; and it reads the served head as soon as the publication is old enough to be
 * served. Otherwise it reads the served head at its regular pace (`pollMs`).
 */

/** Asks for one block at most this many times (then the gateway's own polls find it). */
export const PROBES_PER_BLOCK = 5;
/**
 * Asks out at once at most: one that has not answered by the next ask's time does not hold
 * it back (another member, drawn at random, may answer sooner than one that hangs).
 */
const PROBES_IN_FLIGHT = 2;
/** Once a publication should be served and is not yet, the served head is read this often (ms). */
const OVERDUE_READ_MS = 25;
/** A read of the served head comes this long after the publication it waits for is old enough (ms). */
const SERVED_SLACK_MS = 5;
/** A read ahead comes this long after the copy of the chain position holding its publication may be read (ms). */
const READ_AHEAD_SLACK_MS = 50;
/** The first ask's lead before a block is due, as shares of the asks' spacing: at first, least, most. */
const LEAD_SHARES = { first: 0.2, least: 0.1, most: 1 } as const;

/** How far apart the asks for one block are: a tenth of a block time, 50 ms to 500 ms. */
export function probeEveryMs(settings: FollowerSettings): number {
  return Math.min(500, Math.max(50, settings.blockTimeMs / 10));
}

/** How long one ask may take: a quarter of a block time, 150 ms to 2 s (an answer later than that finds nothing sooner). */
export function probeTimeoutMs(settings: FollowerSettings): number {
  return Math.min(2_000, Math.max(150, settings.blockTimeMs / 4));
}

export interface HeadWatchDeps {
  readonly settings: FollowerSettings;
  readonly clock: () => number;
  /** Asks a quorum member for its head, published as the gateway's polls are; the number, or null. */
  readonly probeHead: (timeoutMs: number) => Promise<number | null>;
  /** Reads a block about to be served, for the answer cache to hold (its answer is not used). */
  readonly readAhead: (block: number) => void;
}

export class HeadWatch {
  readonly #deps: HeadWatchDeps;
  readonly #settings: FollowerSettings;
  readonly #every: number;
  /** The served head seen last. */
  #served: number | null = null;
  /** When the next ask for the block after it may go (ms), and how many are left and out. */
  #probeAt = Number.POSITIVE_INFINITY;
  #probesLeft = 0;
  #inFlight = 0;
  /** Asks made for the block after the served head (the first one's answer moves the lead). */
  #asked = 0;
  #lead: number;
  /** The highest block above the served head a member showed, and when (its publication's time). */
  #shown: { readonly block: number; readonly at: number } | null = null;
  /** The block read ahead last. */
  #readAhead = -1;

  constructor(deps: HeadWatchDeps) {
    this.#deps = deps;
    this.#settings = deps.settings;
    this.#every = probeEveryMs(deps.settings);
    this.#lead = LEAD_SHARES.first * this.#every;
  }

  /** The lead the first ask for a block has now (ms). */
  get leadMs(): number {
    return this.#lead;
  }

  /**
   * Before the served head is read: a member is asked now when the time came (the read of
   * the served head may wait for the chain position).
   */
  lookAhead(): void {
    this.#probeIfDue(this.#deps.clock());
  }

  /**
   * The served head as just read: a new one sets when its next block is due; a block shown
   * is read ahead when its time came; a member is asked when the time came (not waited for:
   * its answer comes to `answered`).
   */
  look(head: number): void {
    const now = this.#deps.clock();
    this.served(head, now);
    const ahead = this.#readAheadDue(now);
    if (ahead !== null) {
      this.#readAhead = ahead;
      this.#deps.readAhead(ahead);
    }
    this.#probeIfDue(now);
  }

  /** The served head as read at `now`: a new one sets when its next block is due. */
  served(head: number, now: number): void {
    if (head === this.#served) return;
    this.#served = head;
    const shown = this.#shown;
    // Published when a member showed it to this follower, or, found by another, a delay ago.
    const publishedAt =
      shown !== null && shown.block === head ? shown.at : now - this.#settings.publicationDelayMs;
    if (shown !== null && shown.block <= head) this.#shown = null;
    this.#probeAt = publishedAt + this.#settings.blockTimeMs - this.#lead;
    this.#probesLeft = PROBES_PER_BLOCK;
    this.#asked = 0;
  }

  /** Whether to ask a member for the block after the served head now. */
  probeDue(now: number): boolean {
    return (
      this.#served !== null &&
      this.#shownAt(now) === null &&
      this.#inFlight < PROBES_IN_FLIGHT &&
      this.#probesLeft > 0 &&
      now >= this.#probeAt
    );
  }

  /** An ask went out. */
  probing(now: number): void {
    this.#inFlight++;
    this.#asked++;
    this.#probeAt = now + this.#every;
    this.#probesLeft--;
  }

  /** What the member answered (`block`, or null for no answer), at `now`. */
  answered(block: number | null, now: number): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (block === null || this.#served === null || block <= this.#served) return;
    if (this.#shown === null) {
      // Found by the first ask: maybe late, so ask earlier; after a miss: early enough.
      const { least, most } = LEAD_SHARES;
      this.#lead =
        this.#asked === 1
          ? Math.min(most * this.#every, this.#lead * 2)
          : Math.max(least * this.#every, this.#lead / 2);
    }
    if (this.#shown === null || block > this.#shown.block) this.#shown = { block, at: now };
  }

  /** How long to wait before the next step, when nothing is to be delivered at once (ms). */
  waitMs(now = this.#deps.clock()): number {
    const regular = pollMs(this.#settings);
    let at = now + regular;
    const shown = this.#shownAt(now);
    if (shown !== null) {
      // Overdue (a publication that lost to another): read soon, for a while.
      at = Math.min(at, now < shown ? shown : now + OVERDUE_READ_MS);
      const ahead = this.#readAheadAt();
      if (ahead !== null && ahead > now) at = Math.min(at, ahead);
    } else if (this.#probesLeft > 0 && this.#inFlight < PROBES_IN_FLIGHT) {
      at = Math.min(at, this.#probeAt);
    }
    return Math.max(0, at - now);
  }

  #probeIfDue(now: number): void {
    if (!this.probeDue(now)) return;
    this.probing(now);
    const answered = (block: number | null) => this.answered(block, this.#deps.clock());
    void this.#deps.probeHead(probeTimeoutMs(this.#settings)).then(answered, () => answered(null));
  }

  /** When the block a member showed, next after the served head, is to be read ahead (ms); null for none. */
  #readAheadAt(): number | null {
    const shown = this.#shown;
    if (shown === null || this.#served === null || shown.block !== this.#served + 1) return null;
    if (this.#readAhead >= shown.block) return null;
    return shown.at + this.#settings.headCacheMs + READ_AHEAD_SLACK_MS;
  }

  #readAheadDue(now: number): number | null {
    const at = this.#readAheadAt();
    return at !== null && now >= at && this.#shownAt(now) !== null
      ? (this.#shown?.block ?? null)
      : null;
  }

  /**
   * When the block a member showed should be served (ms), or null when none is awaited: a
   * block still not served two regular reads after that (a member ahead of the chain, whose
   * number the gateway does not publish) is not waited for, and the asks go on.
   */
  #shownAt(now: number): number | null {
    if (this.#shown === null) return null;
    const servable = this.#shown.at + this.#settings.publicationDelayMs + SERVED_SLACK_MS;
    if (now < servable + 2 * pollMs(this.#settings)) return servable;
    this.#shown = null;
    this.#probeAt = now;
    return null;
  }
}
