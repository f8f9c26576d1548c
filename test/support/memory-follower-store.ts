import type { FollowerCursor, RecentBlock } from "../../functions/core/follower/cursor.ts";
import type { FollowerStore } from "../../functions/core/follower/follower-ports.ts";

/**
 * The follower's store in memory, for its unit tests: the DynamoDB adapter's semantics (a
 * cursor written only over the version read, expired items never read), held to the same
 * contract (test/integration/adapters/subscriptions/follower-store-contract.test.ts).
 */
export class MemoryFollowerStore implements FollowerStore {
  readonly #cursors = new Map<string, { cursor: FollowerCursor; expiresAt: number }>();
  readonly logs = new Map<string, { logs: readonly string[]; expiresAt: number }>();
  writes = 0;
  /** The next this many cursor writes are made, and then answered with an error (an answer lost). */
  lostAnswers = 0;
  /**
   * The next this many cursor writes are made, and then answered as refused (the SDK's retry
   * of a request whose answer was lost, refused by its own first attempt's write).
   */
  retriedAnswers = 0;
  /** Called before each cursor write is made; what it throws, the write throws (not made). */
  beforeWrite: ((cursor: FollowerCursor) => void) | null = null;
  readonly #clock: () => number;
  /** The network `cursor` reads and sets (the unit tests' one network). */
  readonly #network: string;

  constructor(clock: () => number = Date.now, network = "devnet") {
    this.#clock = clock;
    this.#network = network;
  }

  /** The cursor of the tests' network stored now (null when none, or expired). */
  get cursor(): FollowerCursor | null {
    return this.#read(this.#network);
  }

  /** Replaces the stored cursor, as a run that stopped would have left it. */
  set cursor(cursor: FollowerCursor | null) {
    if (cursor === null) this.#cursors.delete(this.#network);
    else this.#cursors.set(this.#network, { cursor, expiresAt: this.#clock() + 86_400_000 });
  }

  async readCursor(network: string): Promise<FollowerCursor | null> {
    return this.#read(network);
  }

  async writeCursor(
    network: string,
    cursor: FollowerCursor,
    expectedVersion: number,
    expiresAt: number,
  ) {
    this.beforeWrite?.(cursor);
    if ((this.#read(network)?.version ?? 0) !== expectedVersion) return false;
    this.writes++;
    this.#cursors.set(network, { cursor, expiresAt });
    if (this.lostAnswers > 0) {
      this.lostAnswers--;
      throw new Error("socket hang up (the answer was lost; the write was made)");
    }
    if (this.retriedAnswers > 0) {
      this.retriedAnswers--;
      return false;
    }
    return true;
  }

  async keepLogs(
    network: string,
    block: RecentBlock,
    logs: readonly string[],
    expiresAt: number,
  ): Promise<void> {
    this.logs.set(`${network}#${block.number}#${block.key}`, { logs, expiresAt });
  }

  async readLogs(network: string, block: RecentBlock): Promise<readonly string[] | null> {
    const kept = this.logs.get(`${network}#${block.number}#${block.key}`);
    return kept === undefined || kept.expiresAt <= this.#clock() ? null : kept.logs;
  }

  #read(network: string): FollowerCursor | null {
    const held = this.#cursors.get(network);
    return held === undefined || held.expiresAt <= this.#clock() ? null : held.cursor;
  }
}
