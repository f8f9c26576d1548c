import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SubscriptionStore } from "../../core/ports.ts";
import type {
  ConnectionRecord,
  ConnectOutcome,
  SubscribeOutcome,
  SubscriptionBounds,
  SubscriptionRecord,
} from "../../core/subscriptions/subscription-records.ts";
import { releaseSlot, takeSlot } from "./connection-slots.ts";
import { countDown, countItems, countUp } from "./subscription-counters.ts";
import {
  connectionOf,
  connectionPartition,
  type Item,
  KEY_COUNT_PREFIX,
  NETWORK_COUNT,
  names,
  SUBSCRIPTION_SK_PREFIX,
  slotKey,
  subscriptionOf,
  subscriptionPartition,
  subscriptionSet,
  subscriptionValues,
  ttlOf,
} from "./subscription-items.ts";
import { itemKey, SubscriptionTable } from "./subscription-table.ts";

export { RECOUNT_MS } from "./subscription-counters.ts";

/**
 * WebSocket connections and subscriptions in the state table (items: `subscription-items.ts`),
 * with no transactions (dynalite, which `npm start` runs, has none): each step is one
 * conditional write, ordered so that a step that fails, or a container that dies between two,
 * can only leave something that expires or is counted again, never a bound that stays used up:
 * a key's connections take slots (`connection-slots.ts`), subscriptions are counted per key and
 * per network (`subscription-counters.ts`), and a connection's subscriptions are the `subs` set
 * of its item, so `$disconnect` finds them. Commands: `subscription-table.ts`.
 */

/** Expired subscriptions a `list` removes (the rest go with the next `list`, or DynamoDB's TTL). */
const SWEEP_PER_LIST = 25;

export interface DynamoSubscriptionStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly clock?: () => number;
}

export class DynamoSubscriptionStore implements SubscriptionStore {
  readonly #table: SubscriptionTable;
  readonly #clock: () => number;

  constructor(options: DynamoSubscriptionStoreOptions) {
    this.#table = new SubscriptionTable(options.client, options.tableName);
    this.#clock = options.clock ?? Date.now;
  }

  async connect(
    network: string,
    connection: ConnectionRecord,
    maxPerKey: number,
  ): Promise<ConnectOutcome> {
    let slot: number | null = null;
    if (connection.caller !== "") {
      slot = await takeSlot(this.#table, network, connection, maxPerKey, this.#clock());
      if (slot === null) return "over_key";
    }
    const key = connection.keySha256;
    try {
      await this.#table.update({
        Key: itemKey(connectionPartition(network), connection.id),
        UpdateExpression: `SET #caller = :caller, #connected = :connected, #expires = :expires, #ttl = :ttl${slot === null ? "" : ", #slot = :slot"}${key === undefined ? "" : ", #key = :key"}`,
        ExpressionAttributeNames: names(
          "#caller",
          "#connected",
          "#expires",
          "#ttl",
          ...(slot === null ? [] : (["#slot"] as const)),
          ...(key === undefined ? [] : (["#key"] as const)),
        ),
        ExpressionAttributeValues: {
          ":caller": { S: connection.caller },
          ":connected": { N: String(connection.connectedAt) },
          ":expires": { N: String(connection.expiresAt) },
          ":ttl": { N: ttlOf(connection.expiresAt) },
          ...(slot === null ? {} : { ":slot": { S: slotKey(slot) } }),
          ...(key === undefined ? {} : { ":key": { S: key } }),
        },
      });
    } catch (error) {
      if (slot !== null) {
        await releaseSlot(this.#table, network, connection.caller, slot, connection.id);
      }
      throw error;
    }
    return "ok";
  }

  async connection(network: string, connectionId: string): Promise<ConnectionRecord | null> {
    const item = await this.#table.get(connectionPartition(network), connectionId);
    const record = item === undefined ? null : connectionOf(item);
    return record !== null && record.expiresAt > this.#clock() ? record : null;
  }

  async disconnect(network: string, connectionId: string): Promise<void> {
    const item = await this.#table.get(connectionPartition(network), connectionId);
    if (item === undefined) return;
    // Subscriptions first, the connection item last: while it is there, so is the list of
    // what is left to remove.
    const removals = await Promise.allSettled(
      (item.subs?.SS ?? []).map((id) => this.#remove(network, id, null)),
    );
    const failed = removals.find((removal) => removal.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    const caller = item.caller?.S ?? "";
    const slot = item.slot?.S;
    if (caller !== "" && slot !== undefined) {
      await releaseSlot(this.#table, network, caller, Number.parseInt(slot, 16), connectionId);
    }
    await this.#table.delete({ Key: itemKey(connectionPartition(network), connectionId) });
  }

  async subscribe(
    network: string,
    subscription: SubscriptionRecord,
    bounds: SubscriptionBounds,
  ): Promise<SubscribeOutcome> {
    // The connection first: a subscribe past its bound (or of a gone connection) costs one
    // write that fails and nothing more. An id it keeps without an item (a container that died
    // below) only holds one of that connection's own places, and goes with the connection.
    const joined = await this.#table.conditional({
      Key: itemKey(connectionPartition(network), subscription.connection),
      UpdateExpression: "ADD #subs :id",
      ConditionExpression:
        "attribute_exists(sk) AND #expires > :now AND (attribute_not_exists(#subs) OR size(#subs) < :max)",
      ExpressionAttributeNames: names("#subs", "#expires"),
      ExpressionAttributeValues: {
        ":id": { SS: [subscription.id] },
        ":now": { N: String(this.#clock()) },
        ":max": { N: String(bounds.perConnection) },
      },
    });
    if (!joined) {
      const live = await this.connection(network, subscription.connection);
      return live === null ? "no_connection" : "over_connection";
    }
    const undo: Array<() => Promise<unknown>> = [
      () => this.#leaveConnection(network, subscription.connection, subscription.id),
    ];
    const undone = async () => {
      // Latest first; a step that fails leaves a counter ahead, which a recount sets right.
      for (const step of undo.reverse()) await step().catch(() => undefined);
    };
    try {
      const outcome = await this.#hold(network, subscription, bounds, undo);
      if (outcome !== "ok") await undone();
      return outcome;
    } catch (error) {
      await undone();
      throw error;
    }
  }

  async unsubscribe(
    network: string,
    connectionId: string,
    subscriptionId: string,
  ): Promise<boolean> {
    return this.#remove(network, subscriptionId, connectionId);
  }

  async list(network: string): Promise<readonly SubscriptionRecord[]> {
    const now = this.#clock();
    const live: SubscriptionRecord[] = [];
    const expired: string[] = [];
    await this.#table.query(
      {
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: {
          ":pk": { S: subscriptionPartition(network) },
          ":prefix": { S: SUBSCRIPTION_SK_PREFIX },
        },
      },
      (item) => {
        const record = subscriptionOf(item);
        if (record === null) return;
        if (record.expiresAt > now) live.push(record);
        else expired.push(record.id);
      },
    );
    // What a lost `$disconnect` left: removed (and counted down) as the follower reads past it.
    await Promise.allSettled(
      expired.slice(0, SWEEP_PER_LIST).map((id) => this.#remove(network, id, null)),
    );
    return live;
  }

  async advance(
    network: string,
    subscriptionId: string,
    expected: number,
    next: number,
    live = false,
  ): Promise<boolean> {
    const moved = await this.#table.conditional({
      Key: itemKey(subscriptionPartition(network), subscriptionId),
      UpdateExpression: live ? "SET #next = :next, #live = :live" : "SET #next = :next",
      ConditionExpression: "#next = :expected AND (attribute_not_exists(#live) OR #live = :no)",
      ExpressionAttributeNames: names("#next", "#live"),
      ExpressionAttributeValues: {
        ":next": { N: String(next) },
        ":expected": { N: String(expected) },
        ":no": { BOOL: false },
        ...(live ? { ":live": { BOOL: true } } : {}),
      },
    });
    if (moved) return true;
    // Refused: a retry of this very move whose first answer was lost finds it made. Only the
    // follower holding the network's lease moves subscriptions, so the state asked for is its.
    const item = await this.#table.get(subscriptionPartition(network), subscriptionId);
    const record = item === undefined ? null : subscriptionOf(item);
    return record !== null && record.nextBlock === next && (record.live === true) === live;
  }

  async networksWithSubscribers(networks: readonly string[]): Promise<readonly string[]> {
    const held = await Promise.all(
      networks.map(
        async (network) =>
          (await this.#table.query({
            KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues: {
              ":pk": { S: subscriptionPartition(network) },
              ":prefix": { S: SUBSCRIPTION_SK_PREFIX },
            },
            ProjectionExpression: "sk",
            Limit: 1,
          })) > 0,
      ),
    );
    return networks.filter((_, index) => held[index]);
  }

  /** Writes the subscription's item, then counts it, pushing each step's undo. */
  async #hold(
    network: string,
    subscription: SubscriptionRecord,
    bounds: SubscriptionBounds,
    undo: Array<() => Promise<unknown>>,
  ): Promise<SubscribeOutcome> {
    const subs = subscriptionPartition(network);
    // The item before the counters, so that whatever is counted has an item to be counted
    // down by.
    await this.#table.update({
      Key: itemKey(subs, subscription.id),
      ...subscriptionSet(subscription),
      ConditionExpression: "attribute_not_exists(sk)",
      ExpressionAttributeValues: subscriptionValues(subscription),
    });
    undo.push(() => this.#table.delete({ Key: itemKey(subs, subscription.id) }));
    const now = this.#clock();
    if (subscription.caller !== "") {
      const sk = `${KEY_COUNT_PREFIX}${subscription.caller}`;
      const counted = await countUp(this.#table, subs, sk, bounds.perKey, now, () =>
        countItems(this.#table, network, subscription.caller),
      );
      if (!counted) return "over_key";
      undo.push(() => countDown(this.#table, subs, sk));
    }
    const counted = await countUp(this.#table, subs, NETWORK_COUNT, bounds.perNetwork, now, () =>
      countItems(this.#table, network, null),
    );
    return counted ? "ok" : "over_network";
  }

  /**
   * Removes one subscription (of `connectionId` only, when given): true when this call deleted
   * it. Only the call that deleted the item counts it down, so two removals never both do.
   */
  async #remove(
    network: string,
    subscriptionId: string,
    connectionId: string | null,
  ): Promise<boolean> {
    const subs = subscriptionPartition(network);
    const old: Item | undefined | null = await this.#table.delete({
      Key: itemKey(subs, subscriptionId),
      ConditionExpression:
        connectionId === null ? "attribute_exists(sk)" : "#connection = :connection",
      ...(connectionId === null
        ? {}
        : {
            ExpressionAttributeNames: names("#connection"),
            ExpressionAttributeValues: { ":connection": { S: connectionId } },
          }),
      ReturnValues: "ALL_OLD",
    });
    if (old === null) return false;
    const record = old === undefined ? null : subscriptionOf(old);
    if (record === null) return true;
    // A step that fails leaves a counter ahead of its items, which a recount sets right.
    await Promise.allSettled([
      this.#leaveConnection(network, record.connection, record.id),
      ...(record.caller === ""
        ? []
        : [countDown(this.#table, subs, `${KEY_COUNT_PREFIX}${record.caller}`)]),
      countDown(this.#table, subs, NETWORK_COUNT),
    ]);
    return true;
  }

  async #leaveConnection(
    network: string,
    connectionId: string,
    subscriptionId: string,
  ): Promise<void> {
    await this.#table.conditional({
      Key: itemKey(connectionPartition(network), connectionId),
      UpdateExpression: "DELETE #subs :id",
      ConditionExpression: "attribute_exists(sk)",
      ExpressionAttributeNames: names("#subs"),
      ExpressionAttributeValues: { ":id": { SS: [subscriptionId] } },
    });
  }
}
