import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import type { SubscriptionStore } from "../core/ports.ts";
import type {
  ConnectionRecord,
  ConnectOutcome,
  SubscribeOutcome,
  SubscriptionBounds,
  SubscriptionRecord,
} from "../core/subscriptions/subscription-records.ts";
import {
  connectionOf,
  connectionPartition,
  type Item,
  KEY_COUNT_PREFIX,
  NETWORK_COUNT,
  names,
  num,
  SUBSCRIPTION_SET,
  SUBSCRIPTION_SK_PREFIX,
  slotKey,
  slotPartition,
  subscriptionOf,
  subscriptionPartition,
  subscriptionValues,
  ttlOf,
} from "./subscription-items.ts";

/**
 * WebSocket connections and subscriptions in the state table (items: `subscription-items.ts`),
 * with no transactions (dynalite, which `npm start` runs, has none): each step is one
 * conditional write, ordered so that a step that fails, or a container that dies between two,
 * can only leave something that expires or is counted again, never a bound that stays used up.
 *
 * - A key's connections take slots (as filters do, `filter-store.ts`): exact across containers,
 *   and a slot whose connection never said goodbye frees itself when it expires.
 * - Subscriptions are counted per key and per network in counter items. A subscription item is
 *   written before it is counted and counted down only by the one removal that deleted it, so
 *   a counter can only run ahead of its items (a removal that died half-way); then, at most
 *   once a `RECOUNT_MS`, a refusal counts the items again and sets the counter right.
 * - A connection's subscriptions are the `subs` set of its item, so `$disconnect` finds them.
 *
 * Only GetItem, Query, UpdateItem and DeleteItem.
 */

/** How often a counter that refuses may be checked against its items (a Query of them). */
export const RECOUNT_MS = 60_000;
/** Rounds of a slot reservation: each reads the slots in use and tries a free one. */
const SLOT_ROUNDS = 5;
/** Expired subscriptions a `list` removes (the rest go with the next `list`, or DynamoDB's TTL). */
const SWEEP_PER_LIST = 25;

export interface DynamoSubscriptionStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly clock?: () => number;
}

export class DynamoSubscriptionStore implements SubscriptionStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: () => number;

  constructor(options: DynamoSubscriptionStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#clock = options.clock ?? Date.now;
  }

  async connect(
    network: string,
    connection: ConnectionRecord,
    maxPerKey: number,
  ): Promise<ConnectOutcome> {
    let slot: number | null = null;
    if (connection.caller !== "") {
      slot = await this.#takeSlot(network, connection, maxPerKey);
      if (slot === null) return "over_key";
    }
    const key = connection.keySha256;
    try {
      await this.#update({
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
      if (slot !== null) await this.#releaseSlot(network, connection.caller, slot, connection.id);
      throw error;
    }
    return "ok";
  }

  async connection(network: string, connectionId: string): Promise<ConnectionRecord | null> {
    const item = await this.#get(connectionPartition(network), connectionId);
    const record = item === undefined ? null : connectionOf(item);
    return record !== null && record.expiresAt > this.#clock() ? record : null;
  }

  async disconnect(network: string, connectionId: string): Promise<void> {
    const item = await this.#get(connectionPartition(network), connectionId);
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
      await this.#releaseSlot(network, caller, Number.parseInt(slot, 16), connectionId);
    }
    await this.#client.send(
      new DeleteItemCommand({
        TableName: this.#table,
        Key: itemKey(connectionPartition(network), connectionId),
      }),
    );
  }

  async subscribe(
    network: string,
    subscription: SubscriptionRecord,
    bounds: SubscriptionBounds,
  ): Promise<SubscribeOutcome> {
    const now = this.#clock();
    // The connection first: a subscribe past its bound (or of a gone connection) costs one
    // write that fails and nothing more. An id it keeps without an item (a container that died
    // below) only holds one of that connection's own places, and goes with the connection.
    const joined = await this.#conditional({
      Key: itemKey(connectionPartition(network), subscription.connection),
      UpdateExpression: "ADD #subs :id",
      ConditionExpression:
        "attribute_exists(sk) AND #expires > :now AND (attribute_not_exists(#subs) OR size(#subs) < :max)",
      ExpressionAttributeNames: names("#subs", "#expires"),
      ExpressionAttributeValues: {
        ":id": { SS: [subscription.id] },
        ":now": { N: String(now) },
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
    await this.#update({
      Key: itemKey(subs, subscription.id),
      UpdateExpression: SUBSCRIPTION_SET,
      ConditionExpression: "attribute_not_exists(sk)",
      ExpressionAttributeNames: names(
        "#connection",
        "#caller",
        "#kind",
        "#filter",
        "#next",
        "#first",
        "#expires",
        "#ttl",
      ),
      ExpressionAttributeValues: subscriptionValues(subscription),
    });
    undo.push(() => this.#deleteSubscriptionItem(network, subscription.id));
    if (subscription.caller !== "") {
      const sk = `${KEY_COUNT_PREFIX}${subscription.caller}`;
      const counted = await this.#count(subs, sk, bounds.perKey, () =>
        this.#countItems(network, subscription.caller),
      );
      if (!counted) return "over_key";
      undo.push(() => this.#countDown(subs, sk));
    }
    const counted = await this.#count(subs, NETWORK_COUNT, bounds.perNetwork, () =>
      this.#countItems(network, null),
    );
    return counted ? "ok" : "over_network";
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
    await this.#query(
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
    return this.#conditional({
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
  }

  async networksWithSubscribers(networks: readonly string[]): Promise<readonly string[]> {
    const held = await Promise.all(
      networks.map(async (network) => {
        const page = await this.#client.send(
          new QueryCommand({
            TableName: this.#table,
            KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues: {
              ":pk": { S: subscriptionPartition(network) },
              ":prefix": { S: SUBSCRIPTION_SK_PREFIX },
            },
            ProjectionExpression: "sk",
            Limit: 1,
          }),
        );
        return (page.Count ?? 0) > 0;
      }),
    );
    return networks.filter((_, index) => held[index]);
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
    let old: Item | undefined;
    try {
      const deleted = await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: itemKey(subscriptionPartition(network), subscriptionId),
          ConditionExpression:
            connectionId === null ? "attribute_exists(sk)" : "#connection = :connection",
          ...(connectionId === null
            ? {}
            : {
                ExpressionAttributeNames: names("#connection"),
                ExpressionAttributeValues: { ":connection": { S: connectionId } },
              }),
          ReturnValues: "ALL_OLD",
        }),
      );
      old = deleted.Attributes;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
    const record = old === undefined ? null : subscriptionOf(old);
    if (record === null) return true;
    const subs = subscriptionPartition(network);
    // A step that fails leaves a counter ahead of its items, which a recount sets right.
    await Promise.allSettled([
      this.#leaveConnection(network, record.connection, record.id),
      ...(record.caller === ""
        ? []
        : [this.#countDown(subs, `${KEY_COUNT_PREFIX}${record.caller}`)]),
      this.#countDown(subs, NETWORK_COUNT),
    ]);
    return true;
  }

  async #deleteSubscriptionItem(network: string, subscriptionId: string): Promise<void> {
    await this.#client.send(
      new DeleteItemCommand({
        TableName: this.#table,
        Key: itemKey(subscriptionPartition(network), subscriptionId),
      }),
    );
  }

  async #leaveConnection(
    network: string,
    connectionId: string,
    subscriptionId: string,
  ): Promise<void> {
    await this.#conditional({
      Key: itemKey(connectionPartition(network), connectionId),
      UpdateExpression: "DELETE #subs :id",
      ConditionExpression: "attribute_exists(sk)",
      ExpressionAttributeNames: names("#subs"),
      ExpressionAttributeValues: { ":id": { SS: [subscriptionId] } },
    });
  }

  /**
   * Counts one more in the counter at `pk`/`sk`, unless it is at `max`. A counter at `max` that
   * was not counted from the items for `RECOUNT_MS` is counted again first (`items`, which
   * include the subscription being counted, written before).
   */
  async #count(
    pk: string,
    sk: string,
    max: number,
    items: () => Promise<number>,
  ): Promise<boolean> {
    const countUp = () =>
      this.#conditional({
        Key: itemKey(pk, sk),
        UpdateExpression: "ADD #n :one",
        ConditionExpression: "attribute_not_exists(#n) OR #n < :max",
        ExpressionAttributeNames: names("#n"),
        ExpressionAttributeValues: { ":one": { N: "1" }, ":max": { N: String(max) } },
      });
    if (await countUp()) return true;
    const counter = await this.#get(pk, sk);
    const now = this.#clock();
    if (counter === undefined || now - num(counter, "counted_at") < RECOUNT_MS) return false;
    const actual = (await items()) - 1;
    const seen = num(counter, "n");
    if (actual >= seen) {
      // Right after all: only the time of the count moves.
      await this.#update({
        Key: itemKey(pk, sk),
        UpdateExpression: "SET #counted = :now",
        ExpressionAttributeNames: names("#counted"),
        ExpressionAttributeValues: { ":now": { N: String(now) } },
      });
      return false;
    }
    const set = await this.#conditional({
      Key: itemKey(pk, sk),
      UpdateExpression: "SET #n = :actual, #counted = :now",
      ConditionExpression: "#n = :seen",
      ExpressionAttributeNames: names("#n", "#counted"),
      ExpressionAttributeValues: {
        ":actual": { N: String(Math.max(0, actual)) },
        ":now": { N: String(now) },
        ":seen": { N: String(seen) },
      },
    });
    return set && (await countUp());
  }

  async #countDown(pk: string, sk: string): Promise<void> {
    await this.#conditional({
      Key: itemKey(pk, sk),
      UpdateExpression: "ADD #n :minus",
      ConditionExpression: "#n > :zero",
      ExpressionAttributeNames: names("#n"),
      ExpressionAttributeValues: { ":minus": { N: "-1" }, ":zero": { N: "0" } },
    });
  }

  /** The network's subscription items (of `caller` only, when given), expired ones too. */
  async #countItems(network: string, caller: string | null): Promise<number> {
    let count = 0;
    await this.#query(
      {
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ...(caller === null
          ? {}
          : { FilterExpression: "#caller = :caller", ExpressionAttributeNames: names("#caller") }),
        ExpressionAttributeValues: {
          ":pk": { S: subscriptionPartition(network) },
          ":prefix": { S: SUBSCRIPTION_SK_PREFIX },
          ...(caller === null ? {} : { ":caller": { S: caller } }),
        },
        Select: "COUNT",
        ConsistentRead: true,
      },
      () => undefined,
      (page) => {
        count += page;
      },
    );
    return count;
  }

  /** A free slot of the connection's key, taken for it; null when the key holds `max` live ones. */
  async #takeSlot(
    network: string,
    connection: ConnectionRecord,
    max: number,
  ): Promise<number | null> {
    const pk = slotPartition(network, connection.caller);
    const now = this.#clock();
    for (let round = 0; round < SLOT_ROUNDS; round++) {
      const live = new Set<number>();
      await this.#query(
        {
          KeyConditionExpression: "pk = :pk",
          ProjectionExpression: "sk, #expires",
          ExpressionAttributeNames: names("#expires"),
          ExpressionAttributeValues: { ":pk": { S: pk } },
          ConsistentRead: true,
        },
        (item) => {
          const slot = Number.parseInt(item.sk?.S ?? "", 16);
          if (Number.isInteger(slot) && num(item, "expires_at") > now) live.add(slot);
        },
      );
      if (live.size >= max) return null;
      // Racing connects take the `round`-th free slot, so a lost race tries another.
      const free = Array.from({ length: max }, (_, slot) => slot).filter((slot) => !live.has(slot));
      const slot = free[Math.min(round, free.length - 1)];
      if (slot === undefined) return null;
      const taken = await this.#conditional({
        Key: itemKey(pk, slotKey(slot)),
        UpdateExpression: "SET #connection = :connection, #expires = :expires, #ttl = :ttl",
        ConditionExpression: "attribute_not_exists(sk) OR #expires <= :now",
        ExpressionAttributeNames: names("#connection", "#expires", "#ttl"),
        ExpressionAttributeValues: {
          ":connection": { S: connection.id },
          ":expires": { N: String(connection.expiresAt) },
          ":ttl": { N: ttlOf(connection.expiresAt) },
          ":now": { N: String(now) },
        },
      });
      if (taken) return slot;
    }
    throw new Error(
      `connection slots of "${connection.caller}" on ${network} are contended: try again`,
    );
  }

  async #releaseSlot(
    network: string,
    caller: string,
    slot: number,
    connectionId: string,
  ): Promise<void> {
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: itemKey(slotPartition(network, caller), slotKey(slot)),
          ConditionExpression: "#connection = :connection",
          ExpressionAttributeNames: names("#connection"),
          ExpressionAttributeValues: { ":connection": { S: connectionId } },
        }),
      );
    } catch (error) {
      // Another connection holds the slot now (this one's had expired): not ours to free.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async #get(pk: string, sk: string): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: itemKey(pk, sk), ConsistentRead: true }),
    );
    return Item;
  }

  /** Every page of a Query: each item to `onItem`, each page's count to `onCount`. */
  async #query(
    input: Omit<QueryCommandInput, "TableName" | "ExclusiveStartKey">,
    onItem: (item: Item) => void,
    onCount?: (count: number) => void,
  ): Promise<void> {
    let start: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          ...input,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) onItem(item);
      onCount?.(page.Count ?? 0);
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
  }

  async #update(input: Omit<UpdateItemCommandInput, "TableName">): Promise<void> {
    await this.#client.send(new UpdateItemCommand({ TableName: this.#table, ...input }));
  }

  /** A conditional UpdateItem: false when its condition failed. */
  async #conditional(input: Omit<UpdateItemCommandInput, "TableName">): Promise<boolean> {
    try {
      await this.#update(input);
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

const itemKey = (pk: string, sk: string): Item => ({ pk: { S: pk }, sk: { S: sk } });
