import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type {
  ConnectionRecord,
  LogsFilter,
  SubscriptionRecord,
} from "../../core/subscriptions/subscription-records.ts";

/**
 * The items of WebSocket connections and subscriptions in the state table (docs/architecture.md
 * "State in DynamoDB"), every one under a `WSCONN#` or `WSSUB#` partition, every one with the
 * TTL attribute so DynamoDB tidies what a lost `$disconnect` leaves:
 *
 * - `WSCONN#<network>` / `<connectionId>`: the connection (`caller`, `connected_at`, its key
 *   slot, and `subs`, the set of its subscription ids).
 * - `WSCONN#<network>#<caller>` / `<slot>`: one of an API key's connection slots (four hex
 *   digits, at most `max_connections_per_key`), held by `connection` until `expires_at`.
 * - `WSSUB#<network>` / `0x…`: a subscription (`connection`, `caller`, `key_sha256` with keys,
 *   `kind`, `filter` as JSON, `next_block`, `first_block`, and `live` once the follower made it
 *   live). One Query on `begins_with(sk, "0x")` lists a network's.
 * - `WSSUB#<network>` / `KEY#<caller>` and `/ COUNT`: how many subscriptions an API key and
 *   the network hold (`n`), and when they were last counted from the items (`counted_at`).
 */

export type Item = Record<string, AttributeValue>;

export const connectionPartition = (network: string) => `WSCONN#${network}`;
export const slotPartition = (network: string, caller: string) => `WSCONN#${network}#${caller}`;
export const subscriptionPartition = (network: string) => `WSSUB#${network}`;
export const KEY_COUNT_PREFIX = "KEY#";
export const NETWORK_COUNT = "COUNT";
/** Every subscription's sort key starts so; the counters' never do. */
export const SUBSCRIPTION_SK_PREFIX = "0x";

/** Slots are four hex digits: room for 65,536 (`max_connections_per_key` stays far under). */
export const slotKey = (slot: number) => slot.toString(16).padStart(4, "0");

export const num = (item: Item, name: string): number => Number(item[name]?.N ?? 0);

/** DynamoDB's TTL, in seconds: never before the record expires. */
export const ttlOf = (expiresAt: number) => String(Math.ceil(expiresAt / 1000));

export function connectionOf(item: Item): ConnectionRecord | null {
  const id = item.sk?.S;
  const caller = item.caller?.S;
  if (id === undefined || caller === undefined) return null;
  const keySha256 = item.key_sha256?.S;
  return {
    id,
    caller,
    ...(keySha256 === undefined ? {} : { keySha256 }),
    connectedAt: num(item, "connected_at"),
    expiresAt: num(item, "expires_at"),
  };
}

export function subscriptionValues(record: SubscriptionRecord): Item {
  return {
    ":connection": { S: record.connection },
    ":caller": { S: record.caller },
    ":kind": { S: record.kind },
    ":filter": { S: JSON.stringify(record.filter) },
    ":next": { N: String(record.nextBlock) },
    ":first": { N: String(record.firstBlock ?? record.nextBlock) },
    ":expires": { N: String(record.expiresAt) },
    ":ttl": { N: ttlOf(record.expiresAt) },
    ...(record.keySha256 === undefined ? {} : { ":key": { S: record.keySha256 } }),
  };
}

/** `subscriptionValues` as an update sets them (every name aliased: some are reserved words). */
export function subscriptionSet(record: SubscriptionRecord): {
  readonly UpdateExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
} {
  const keyed = record.keySha256 !== undefined;
  return {
    UpdateExpression: `SET #connection = :connection, #caller = :caller, #kind = :kind, #filter = :filter, #next = :next, #first = :first, #expires = :expires, #ttl = :ttl${keyed ? ", #key = :key" : ""}`,
    ExpressionAttributeNames: names(
      "#connection",
      "#caller",
      "#kind",
      "#filter",
      "#next",
      "#first",
      "#expires",
      "#ttl",
      ...(keyed ? (["#key"] as const) : []),
    ),
  };
}

/** Attribute names, aliased in every expression. */
export const NAMES = {
  "#connection": "connection",
  "#caller": "caller",
  "#kind": "kind",
  "#filter": "filter",
  "#next": "next_block",
  "#first": "first_block",
  "#live": "live",
  "#expires": "expires_at",
  "#ttl": "ttl",
  "#connected": "connected_at",
  "#slot": "slot",
  "#subs": "subs",
  "#n": "n",
  "#counted": "counted_at",
  "#key": "key_sha256",
} as const;

export function names(...keys: Array<keyof typeof NAMES>): Record<string, string> {
  return Object.fromEntries(keys.map((key) => [key, NAMES[key]]));
}

export function subscriptionOf(item: Item): SubscriptionRecord | null {
  const id = item.sk?.S;
  const kind = item.kind?.S;
  const connection = item.connection?.S;
  const caller = item.caller?.S;
  if (id === undefined || connection === undefined || caller === undefined) return null;
  if (kind !== "newHeads" && kind !== "logs") return null;
  let filter: LogsFilter | null;
  try {
    filter = JSON.parse(item.filter?.S ?? "null") as LogsFilter | null;
  } catch {
    // Not an item this store wrote.
    return null;
  }
  if (kind === "logs" && (filter === null || typeof filter !== "object")) return null;
  const keySha256 = item.key_sha256?.S;
  return {
    id,
    connection,
    caller,
    ...(keySha256 === undefined ? {} : { keySha256 }),
    kind,
    filter: kind === "logs" ? filter : null,
    nextBlock: num(item, "next_block"),
    firstBlock:
      item.first_block?.N === undefined ? num(item, "next_block") : num(item, "first_block"),
    live: item.live?.BOOL === true,
    expiresAt: num(item, "expires_at"),
  };
}
