import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { EventKind, StoredEvent } from "../../core/status/events.ts";

/**
 * The event log in the gateway's one table, a partition per network, `EVENTS#<network>`, apart
 * from `NET#<network>` so the proxy's state Query never reads an event:
 * - `E#<at, 15 digits>#<random>`: one event, with a TTL; the sort key keeps time order, so the
 *   newest are one Query read backwards;
 * - `CONFIG_VERSION`: the config version last recorded as an event, so a change is recorded
 *   once however many monitors load it.
 * Only Query and UpdateItem are used (an UpdateItem creates the item), so the proxy's role
 * needs no PutItem or DeleteItem: an event past the bound is expired (TTL now) rather than
 * deleted, and reads never reach it.
 */

type Item = Record<string, AttributeValue>;

export const eventsPartition = (network: string) => `EVENTS#${network}`;
const EVENT_PREFIX = "E#";
const CONFIG_VERSION_KEY = "CONFIG_VERSION";

/** An event's id and sort key: its time, zero-padded so string order is time order, then `suffix`. */
export function eventSortKey(at: number, suffix: string): string {
  return `${EVENT_PREFIX}${String(Math.max(0, Math.floor(at))).padStart(15, "0")}#${suffix}`;
}

/** At most this many events past the bound are expired per tidy; the next tidy does the rest. */
const TIDY_MAX_EXPIRED = 1000;

const s = (value: string): AttributeValue => ({ S: value });
const n = (value: number): AttributeValue => ({ N: String(value) });

function eventFromItem(item: Item): StoredEvent | null {
  const id = item.sk?.S;
  const at = Number(item.at?.N);
  const kind = item.kind?.S;
  if (id === undefined || !Number.isFinite(at) || kind === undefined) return null;
  return {
    id,
    network: item.network?.S ?? "",
    at,
    provider: item.provider?.S ?? null,
    kind: kind as EventKind,
    reason: item.reason?.S ?? "",
    detail: item.detail?.S ?? "",
  };
}

export interface EventStore {
  /** Stores one event, kept for `retentionSeconds` after it happened. */
  write(event: StoredEvent, retentionSeconds: number): Promise<void>;
  /** The newest `limit` events of the network that have not expired at `now`, newest first. */
  newest(network: string, limit: number, now: number): Promise<StoredEvent[]>;
  /** Expires the network's events older than its newest `keep` (at most a thousand a call). */
  tidy(network: string, keep: number, now: number): Promise<number>;
  claimConfigVersion(network: string, version: string, now: number): Promise<boolean>;
}

export class DynamoEventStore implements EventStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  async write(event: StoredEvent, retentionSeconds: number): Promise<void> {
    const values: Item = {
      ":network": s(event.network),
      ":at": n(event.at),
      ":kind": s(event.kind),
      ":reason": s(event.reason),
      ":detail": s(event.detail),
      ":ttl": n(Math.ceil(event.at / 1000) + Math.ceil(retentionSeconds)),
    };
    const sets = [
      "#network = :network",
      "#at = :at",
      "#kind = :kind",
      "#reason = :reason",
      "#detail = :detail",
      "#ttl = :ttl",
    ];
    const names: Record<string, string> = {
      "#network": "network",
      "#at": "at",
      "#kind": "kind",
      "#reason": "reason",
      "#detail": "detail",
      "#ttl": "ttl",
    };
    if (event.provider !== null) {
      sets.push("#provider = :provider");
      names["#provider"] = "provider";
      values[":provider"] = s(event.provider);
    }
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: s(eventsPartition(event.network)), sk: s(event.id) },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  async newest(network: string, limit: number, now: number): Promise<StoredEvent[]> {
    if (limit <= 0) return [];
    const page = await this.#client.send(
      new QueryCommand({
        TableName: this.#table,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: {
          ":pk": s(eventsPartition(network)),
          ":prefix": s(EVENT_PREFIX),
        },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    const nowSeconds = now / 1000;
    const events: StoredEvent[] = [];
    for (const item of page.Items ?? []) {
      // DynamoDB's TTL deletes late: an expired event is not shown.
      const ttl = Number(item.ttl?.N ?? Number.POSITIVE_INFINITY);
      if (ttl <= nowSeconds) continue;
      const event = eventFromItem(item);
      if (event !== null) events.push(event);
    }
    return events;
  }

  async tidy(network: string, keep: number, now: number): Promise<number> {
    const nowSeconds = Math.floor(now / 1000);
    const query = (limit: number, startKey: Item | undefined) =>
      this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
          ExpressionAttributeValues: {
            ":pk": s(eventsPartition(network)),
            ":prefix": s(EVENT_PREFIX),
          },
          ExpressionAttributeNames: { "#ttl": "ttl" },
          ProjectionExpression: "sk, #ttl",
          ScanIndexForward: false,
          Limit: limit,
          ExclusiveStartKey: startKey,
        }),
      );
    // Walk past the newest `keep` (a page may hold fewer than asked for).
    let startKey: Item | undefined;
    let kept = 0;
    while (kept < keep) {
      const page = await query(keep - kept, startKey);
      kept += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
      if (startKey === undefined) return 0;
    }
    let expired = 0;
    while (startKey !== undefined && expired < TIDY_MAX_EXPIRED) {
      const page = await query(TIDY_MAX_EXPIRED - expired, startKey);
      const live = (page.Items ?? []).filter((item) => Number(item.ttl?.N ?? 0) > nowSeconds);
      await Promise.all(live.map((item) => this.#expire(network, item.sk?.S ?? "", nowSeconds)));
      expired += live.length;
      startKey = page.LastEvaluatedKey;
    }
    return expired;
  }

  async claimConfigVersion(network: string, version: string, now: number): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: s(eventsPartition(network)), sk: s(CONFIG_VERSION_KEY) },
          UpdateExpression: "SET #version = :version, #at = :at",
          ConditionExpression: "attribute_not_exists(#version) OR #version <> :version",
          ExpressionAttributeNames: { "#version": "version", "#at": "claimed_at" },
          ExpressionAttributeValues: { ":version": s(version), ":at": n(now) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async #expire(network: string, sk: string, nowSeconds: number): Promise<void> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: s(eventsPartition(network)), sk: s(sk) },
          UpdateExpression: "SET #ttl = :ttl",
          // Never recreate an item DynamoDB's TTL deleted meanwhile.
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#ttl": "ttl" },
          ExpressionAttributeValues: { ":ttl": n(nowSeconds) },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
