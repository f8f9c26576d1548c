/**
 * What the gateway keeps of WebSocket connections and their subscriptions
 * (docs/behaviour.md "Subscriptions over WebSocket"): the records the socket's registry writes
 * and the head follower reads. Times are ms since the epoch; block numbers are plain numbers.
 */

export type SubscriptionKind = "newHeads" | "logs";

/** One topic position of a logs filter: any (null), one topic, or any of several. */
export type TopicFilter = string | null | readonly string[];

/** What a `logs` subscription matches, as geth takes it; hex in lower case. */
export interface LogsFilter {
  /** Any of these addresses; absent: any address. */
  readonly address?: readonly string[];
  /** Topic positions, as eth_getLogs takes them; absent: any topics. */
  readonly topics?: readonly TopicFilter[];
}

/** One open socket on one network (`$connect` to `$disconnect`). */
export interface ConnectionRecord {
  /** API Gateway's connectionId. */
  readonly id: string;
  /** The API key's name, or "" when the gateway takes calls without keys. */
  readonly caller: string;
  /**
   * The sha-256 of the key it was opened with, as the config listed it then: a key given a
   * new hash under the same name no longer serves the connection. Absent without keys.
   */
  readonly keySha256?: string;
  readonly connectedAt: number;
  /** When the store may forget it: past API Gateway's 2-hour limit, with a margin. */
  readonly expiresAt: number;
}

/** One `eth_subscribe` of one connection. */
export interface SubscriptionRecord {
  /** `0x` + 32 random hex digits (`subscription-id.ts`). */
  readonly id: string;
  /** The connection it is delivered to. */
  readonly connection: string;
  readonly caller: string;
  /**
   * The sha-256 of the key its connection was opened with (the connection's `keySha256`), so
   * the follower stops delivering once that key no longer serves (`key-standing.ts`). Absent
   * without keys.
   */
  readonly keySha256?: string;
  readonly kind: SubscriptionKind;
  /** What a `logs` subscription matches; null for `newHeads`. */
  readonly filter: LogsFilter | null;
  /**
   * The first block this subscription has not been sent yet, while it is not live (the
   * follower moves it, conditionally, as it catches the subscription up).
   */
  readonly nextBlock: number;
  /** The first block it is sent: `nextBlock` at subscribe, never changed (absent: `nextBlock`). */
  readonly firstBlock?: number;
  /**
   * Set by the follower once the subscription has every block before the network's cursor:
   * from then on it is sent each block the cursor delivers, with no write of its own.
   */
  readonly live?: boolean;
  readonly expiresAt: number;
}

/** Bounds on a network's subscriptions (config `subscriptions`). */
export interface SubscriptionBounds {
  /** Subscriptions one connection holds at once. */
  readonly perConnection: number;
  /** Subscriptions one API key holds at once, over all its connections. */
  readonly perKey: number;
  /** Subscriptions a network holds at once, over all callers. */
  readonly perNetwork: number;
}

/** How a subscribe ended: kept, refused by one of the bounds, or its connection is gone. */
export type SubscribeOutcome =
  | "ok"
  | "over_connection"
  | "over_key"
  | "over_network"
  | "no_connection";

/** How a connect ended: kept, or refused because the key holds its most connections. */
export type ConnectOutcome = "ok" | "over_key";

/** How one push to a connection ended: sent, the connection is gone (410), or it failed. */
export type PushOutcome = "ok" | "gone" | "failed";
