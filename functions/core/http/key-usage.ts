/**
 * Per-API-key request limits (`requests_per_minute`) that hold across every Lambda container
 * (docs/behaviour.md §8.5). A container admits a key's requests only from tokens it reserved
 * in the key's shared counter for the minute: one atomic ADD reserves a block of tokens and
 * answers the total every container has reserved, so the part of the block that falls within
 * the limit is this container's and the rest is nobody's. However many containers there are,
 * no more than the limit is admitted in a minute.
 *
 * A block starts at one token each minute and doubles with each reservation, so a container
 * reserves about what it uses (a container serving a key once a second holds at most a few
 * tokens it will not use), never more than an eighth of what the last total left, so near the
 * limit every request is counted before it is admitted. Once a total shows the minute used
 * up, the container refuses without asking again until the minute ends. When the counter
 * cannot be reached, the container falls back to counting alone (the limit per container).
 */

export interface KeyLimit {
  readonly name: string;
  readonly requestsPerMinute: number;
}

/** Tokens to reserve in a key's shared counter for one minute. */
export interface Reservation {
  readonly key: string;
  /** Start of the minute, ms since the epoch. */
  readonly minute: number;
  readonly count: number;
}

export type KeyDecision =
  | { readonly kind: "admit" }
  | { readonly kind: "refuse" }
  /** No token left here: reserve these, then ask again. */
  | { readonly kind: "reserve"; readonly reservation: Reservation };

interface Window {
  readonly minute: number;
  /** Tokens this container holds for the minute, and how many it admitted. */
  granted: number;
  used: number;
  /** The highest total of the shared counter a reservation answered. */
  seenTotal: number;
  /** The last block reserved (the next one is twice as large). */
  lastBlock: number;
  /** A total showed the minute used up. */
  exhausted: boolean;
}

const MINUTE_MS = 60_000;
/** A block is at most this part of what the last total left of the limit. */
const BLOCK_SHARE_OF_REST = 1 / 8;

export class KeyUsage {
  readonly #clock: () => number;
  readonly #windows = new Map<string, Window>();

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** Admits the request from a token held here, refuses it, or asks for a reservation first. */
  decide(limit: KeyLimit): KeyDecision {
    const window = this.#window(limit.name);
    if (window.used < window.granted) {
      window.used++;
      return { kind: "admit" };
    }
    if (window.exhausted) return { kind: "refuse" };
    const rest = Math.max(0, limit.requestsPerMinute - window.seenTotal);
    const count = Math.max(
      1,
      Math.min(window.lastBlock * 2, Math.floor(rest * BLOCK_SHARE_OF_REST)),
    );
    return { kind: "reserve", reservation: { key: limit.name, minute: window.minute, count } };
  }

  /**
   * What a reservation got: the shared counter's total once it was added. The tokens within
   * the limit are this container's; when the total reaches the limit the minute is used up.
   */
  reserved(limit: KeyLimit, reservation: Reservation, total: number): void {
    const window = this.#windows.get(reservation.key);
    if (window === undefined || window.minute !== reservation.minute) return;
    const before = total - reservation.count;
    const within = Math.min(reservation.count, limit.requestsPerMinute - before);
    window.granted += Math.max(0, within);
    window.seenTotal = Math.max(window.seenTotal, total);
    window.lastBlock = reservation.count;
    if (total >= limit.requestsPerMinute) window.exhausted = true;
  }

  /**
   * The shared counter could not be reached: admits while this container alone admitted less
   * than the limit this minute (the limit then holds per container, not across them).
   */
  admitAlone(limit: KeyLimit): boolean {
    const window = this.#window(limit.name);
    if (window.used >= limit.requestsPerMinute) return false;
    // Tokens reserved later pay these back: `used` may run ahead of `granted`.
    window.used++;
    return true;
  }

  #window(key: string): Window {
    const minute = Math.floor(this.#clock() / MINUTE_MS) * MINUTE_MS;
    let window = this.#windows.get(key);
    if (window === undefined || window.minute !== minute) {
      window = { minute, granted: 0, used: 0, seenTotal: 0, lastBlock: 0, exhausted: false };
      this.#windows.set(key, window);
    }
    return window;
  }
}
