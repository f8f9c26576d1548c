import type { SubscriptionStore } from "../ports.ts";
import type { FollowerCursor, RecentBlock } from "./cursor.ts";
import type { Followed } from "./delivery/subscribers.ts";

/**
 * What the head follower needs from storage (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower). The DynamoDB adapter (`adapters/follower-store.ts`) implements
 * `FollowerStore`; the socket's registry implements the subscriptions.
 */

/** The registry as the follower uses it: its read, its conditional moves, and forgetting a connection. */
export interface FollowerSubscriptions extends Pick<SubscriptionStore, "disconnect"> {
  list(network: string): Promise<readonly Followed[]>;
  /**
   * Moves a subscription that is not live from `nextBlock = expected` to `next`, and makes it
   * live when `live`; false when it is not at `expected`, is live, or is gone.
   */
  advance(
    network: string,
    subscriptionId: string,
    expected: number,
    next: number,
    live?: boolean,
  ): Promise<boolean>;
}

export interface FollowerStore {
  /** The network's cursor (`WSFOLLOW#<network>` / `CURSOR`), read consistently; null before the first. */
  readCursor(network: string): Promise<FollowerCursor | null>;
  /**
   * Writes `cursor` while the stored one is at `expectedVersion` (0: none stored yet); false
   * when another write came first. The item expires at `expiresAt` (ms) unless written again.
   */
  writeCursor(
    network: string,
    cursor: FollowerCursor,
    expectedVersion: number,
    expiresAt: number,
  ): Promise<boolean>;
  /** Keeps the logs sent of a delivered block (their texts), for a reorg to send them again as removed. */
  keepLogs(
    network: string,
    block: RecentBlock,
    logs: readonly string[],
    expiresAt: number,
  ): Promise<void>;
  /** The logs kept of a delivered block; null when none were kept (or they expired). */
  readLogs(network: string, block: RecentBlock): Promise<readonly string[] | null>;
}
