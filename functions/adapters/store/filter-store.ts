import { randomBytes } from "node:crypto";
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { FilterStore, NewFilter } from "../../core/ports.ts";
import type { FilterEnd, LogCriteria } from "../../core/request/filters/filter-criteria.ts";
import {
  FILTER_ID_RANDOM_BYTES,
  FILTER_SLOTS,
  filterIdOf,
  gatewayFilterId,
  slotOfFilterId,
} from "../../core/request/filters/filter-id.ts";
import type {
  FilterAdvance,
  FilterRecord,
  SeenBlock,
} from "../../core/request/filters/filter-progress.ts";

/**
 * The filters the gateway serves, in the state table (docs/architecture.md): one item per
 * filter, `FILTER#<network>#<owner>` / `<slot>`, the owner being the API key's name. An owner
 * has at most `max` slots in use, so its partition never holds more than that many filters,
 * whatever filters come and go: an install takes a slot whose filter expired (or a new one)
 * with a conditional write, and the id names the slot (`filter-id.ts`). Reads are consistent,
 * and every move is conditional on the version read. The DynamoDB TTL tidies expired items;
 * an expired one is never read as a filter meanwhile. Only GetItem, Query and UpdateItem.
 *
 * A log filter's criteria (up to 64 KiB of addresses and topics) are a second item of the slot,
 * `logs#<slot>`, written once by the install that took the slot and naming its filter's id:
 * DynamoDB bills a write by the whole item, so with the criteria in the filter's item every
 * poll, extension and uninstall (even a refused one, with a wrong id) cost up to 64 write
 * units, and every install's Query read each of the owner's filters whole (100 polls in one
 * request: 6,200 units). The Query reads the slots' range only, so never the criteria. A
 * slot's criteria item is overwritten when the slot is taken again, so an owner's partition
 * holds at most `max` of them too.
 */

type Item = Record<string, AttributeValue>;

export const filterPartition = (network: string, owner: string) => `FILTER#${network}#${owner}`;
const slotKey = (slot: number) => slot.toString(16).padStart(4, "0");
/** Sorts after every slot's key (hex digits), so the slots' Query never reads one. */
const criteriaKey = (slot: number) => `logs#${slotKey(slot)}`;
const SLOT_KEYS = { ":first": { S: slotKey(0) }, ":last": { S: slotKey(FILTER_SLOTS - 1) } };

/** Install rounds: each reads the slots in use and tries a free one (another install may take it). */
const INSTALL_ROUNDS = 3;

const NAMES = {
  "#id": "id",
  "#kind": "kind",
  "#logs": "logs",
  "#first": "first",
  "#cursor": "cursor",
  "#seen": "seen",
  "#span": "span",
  "#version": "version",
  "#expires": "expires_at",
  "#ttl": "ttl",
  "#chain": "chain_reset_at",
};
/** Who made a filter's last move (advance's token). */
const MOVER = { "#mover": "moved_by" };

/** Bytes of the token a move writes, to know it for its own when its answer was lost. */
const MOVE_TOKEN_BYTES = 12;

export interface DynamoFilterStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The ids' random part (default: node:crypto). */
  readonly randomBytes?: (size: number) => Uint8Array;
}

export class DynamoFilterStore implements FilterStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #random: (size: number) => Uint8Array;

  constructor(options: DynamoFilterStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#random = options.randomBytes ?? randomBytes;
  }

  async install(
    network: string,
    owner: string,
    filter: NewFilter,
    max: number,
    now: number,
  ): Promise<string | null> {
    const pk = filterPartition(network, owner);
    const limit = Math.min(max, FILTER_SLOTS);
    for (let round = 0; round < INSTALL_ROUNDS; round++) {
      const live = await this.#liveSlots(pk, now);
      if (live.size >= limit) return null;
      const free = Array.from({ length: limit }, (_, slot) => slot).filter(
        (slot) => !live.has(slot),
      );
      // A random free slot: installs racing from several containers rarely pick the same one.
      const slot =
        free[(this.#random(4).reduce((sum, byte) => sum * 256 + byte, 0) >>> 0) % free.length];
      if (slot === undefined) return null;
      const id = filterIdOf(slot, this.#random(FILTER_ID_RANDOM_BYTES));
      // The id is random: a slot holding it is this install's own write, landed on a try whose
      // answer was lost (the SDK sent it again), not another install's.
      const taken =
        (await this.#take(pk, slot, id, filter, now)) || (await this.#idIn(pk, slot)) === id;
      if (!taken) continue;
      if (filter.logs !== null) await this.#writeCriteria(pk, slot, id, filter.logs);
      return id;
    }
    return null;
  }

  async read(
    network: string,
    owner: string,
    id: string,
    now: number,
  ): Promise<FilterRecord | null> {
    const ours = gatewayFilterId(id);
    if (ours === null) return null;
    const pk = filterPartition(network, owner);
    const slot = slotOfFilterId(ours);
    // Both at once: a block filter's criteria read finds nothing, for a read unit.
    const [item, criteria] = await Promise.all([
      this.#get({ pk: { S: pk }, sk: { S: slotKey(slot) } }),
      this.#get({ pk: { S: pk }, sk: { S: criteriaKey(slot) } }),
    ]);
    if (item === undefined || item.id?.S !== ours || num(item, "expires_at") <= now) return null;
    // A filter written before its criteria moved out holds them itself.
    const logs = item.logs ?? (criteria?.id?.S === ours ? criteria.logs : undefined);
    return recordOf(item, logs);
  }

  async #get(key: Item): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: key, ConsistentRead: true }),
    );
    return Item;
  }

  async advance(
    network: string,
    owner: string,
    id: string,
    version: number,
    next: FilterAdvance,
  ): Promise<boolean> {
    const ours = gatewayFilterId(id);
    if (ours === null) return false;
    const span = next.span === null ? "" : ", #span = :span";
    const key = this.#key(network, owner, ours);
    // A token of this move: the SDK sends a write again when its answer is lost, and the
    // second try fails the condition on the version the first one bumped. Without knowing the
    // move for its own, the poll would report nothing and its blocks would never be reported.
    const token = Buffer.from(this.#random(MOVE_TOKEN_BYTES)).toString("hex");
    const moved = await this.#conditional({
      Key: key,
      UpdateExpression: `SET #cursor = :cursor, #seen = :seen, #version = :next, #expires = :expires, #ttl = :ttl, #mover = :mover${span}${next.span === null ? " REMOVE #span" : ""}`,
      ConditionExpression: "#id = :id AND #version = :version",
      ExpressionAttributeNames: {
        ...pick("#cursor", "#seen", "#version", "#expires", "#ttl", "#span", "#id"),
        ...MOVER,
      },
      ExpressionAttributeValues: {
        ":cursor": { N: String(next.cursor) },
        ":seen": { S: seenText(next.seen) },
        ":next": { N: String(version + 1) },
        ":expires": { N: String(next.expiresAt) },
        ":ttl": { N: ttlOf(next.expiresAt) },
        ":mover": { S: token },
        ":id": { S: ours },
        ":version": { N: String(version) },
        ...(next.span === null ? {} : { ":span": { N: String(next.span) } }),
      },
    });
    if (moved) return true;
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: key,
        ConsistentRead: true,
        ProjectionExpression: "#version, #mover",
        ExpressionAttributeNames: { ...pick("#version"), ...MOVER },
      }),
    );
    return Item?.moved_by?.S === token && num(Item, "version") === version + 1;
  }

  async uninstall(network: string, owner: string, id: string, now: number): Promise<boolean> {
    const ours = gatewayFilterId(id);
    if (ours === null) return false;
    // Expired at once (the slot is free again); DynamoDB's TTL removes the item later.
    return this.#conditional({
      Key: this.#key(network, owner, ours),
      UpdateExpression: "SET #expires = :zero, #ttl = :ttl",
      ConditionExpression: "#id = :id AND #expires > :now",
      ExpressionAttributeNames: pick("#expires", "#ttl", "#id"),
      ExpressionAttributeValues: {
        ":zero": { N: "0" },
        ":ttl": { N: ttlOf(now) },
        ":id": { S: ours },
        ":now": { N: String(now) },
      },
    });
  }

  #key(network: string, owner: string, id: string): Item {
    return { pk: { S: filterPartition(network, owner) }, sk: { S: slotKey(slotOfFilterId(id)) } };
  }

  async #idIn(pk: string, slot: number): Promise<string | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: pk }, sk: { S: slotKey(slot) } },
        ConsistentRead: true,
        ProjectionExpression: "#id",
        ExpressionAttributeNames: pick("#id"),
      }),
    );
    return Item?.id?.S;
  }

  /** The owner's slots holding a filter that has not expired (a Query, page by page). */
  async #liveSlots(pk: string, now: number): Promise<Set<number>> {
    const live = new Set<number>();
    let start: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk AND sk BETWEEN :first AND :last",
          ProjectionExpression: "sk, #expires",
          ExpressionAttributeNames: pick("#expires"),
          ExpressionAttributeValues: { ":pk": { S: pk }, ...SLOT_KEYS },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const slot = Number.parseInt(item.sk?.S ?? "", 16);
        if (Number.isInteger(slot) && num(item, "expires_at") > now) live.add(slot);
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return live;
  }

  /** Writes a new filter into `slot`, unless a live filter holds it (another install won it). */
  async #take(
    pk: string,
    slot: number,
    id: string,
    filter: NewFilter,
    now: number,
  ): Promise<boolean> {
    return this.#conditional({
      Key: { pk: { S: pk }, sk: { S: slotKey(slot) } },
      UpdateExpression:
        "SET #id = :id, #kind = :kind, #first = :first, #cursor = :cursor, #seen = :seen, #version = :zero, #expires = :expires, #ttl = :ttl, #chain = :chain REMOVE #logs, #span",
      ConditionExpression: "attribute_not_exists(#id) OR #expires <= :now",
      ExpressionAttributeNames: NAMES,
      ExpressionAttributeValues: {
        ":id": { S: id },
        ":kind": { S: filter.kind },
        ":first": { N: String(filter.first) },
        ":cursor": { N: String(filter.cursor) },
        ":seen": { S: seenText(filter.seen) },
        ":zero": { N: "0" },
        ":expires": { N: String(filter.expiresAt) },
        ":ttl": { N: ttlOf(filter.expiresAt) },
        ":now": { N: String(now) },
        ":chain": { N: String(filter.chainResetAt) },
      },
    });
  }

  /** The criteria of the filter `id` that just took `slot`: only that install writes them. */
  async #writeCriteria(
    pk: string,
    slot: number,
    id: string,
    logs: NonNullable<NewFilter["logs"]>,
  ): Promise<void> {
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: pk }, sk: { S: criteriaKey(slot) } },
        UpdateExpression: "SET #id = :id, #logs = :logs",
        ExpressionAttributeNames: pick("#id", "#logs"),
        ExpressionAttributeValues: { ":id": { S: id }, ":logs": { S: JSON.stringify(logs) } },
      }),
    );
  }

  /** A conditional UpdateItem: false when its condition failed. */
  async #conditional(
    update: Omit<ConstructorParameters<typeof UpdateItemCommand>[0], "TableName">,
  ): Promise<boolean> {
    try {
      await this.#client.send(new UpdateItemCommand({ TableName: this.#table, ...update }));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

function pick(...names: Array<keyof typeof NAMES>): Record<string, string> {
  return Object.fromEntries(names.map((name) => [name, NAMES[name]]));
}

const num = (item: Item, name: string): number => Number(item[name]?.N ?? 0);

/** DynamoDB's TTL, in seconds: never before the filter expires. */
const ttlOf = (expiresAt: number) => String(Math.ceil(expiresAt / 1000));

/** Remembered blocks, compact: `[[number, hash, logs], …]`. */
function seenText(seen: readonly SeenBlock[]): string {
  return JSON.stringify(seen.map((block) => [block.number, block.hash, block.logs]));
}

function seenOf(text: string | undefined): SeenBlock[] {
  const parsed: unknown = JSON.parse(text ?? "[]");
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((entry: unknown) => {
    if (!Array.isArray(entry)) return [];
    const [number, hash, logs] = entry as unknown[];
    return typeof number === "number" && typeof hash === "string" && typeof logs === "number"
      ? [{ number, hash, logs }]
      : [];
  });
}

function recordOf(item: Item, criteria: AttributeValue | undefined): FilterRecord | null {
  const kind = item.kind?.S;
  const id = item.id?.S;
  if ((kind !== "logs" && kind !== "blocks") || id === undefined) return null;
  try {
    const logs =
      kind === "logs"
        ? (JSON.parse(criteria?.S ?? "null") as { criteria: LogCriteria; to: FilterEnd } | null)
        : null;
    if (kind === "logs" && logs === null) return null;
    return {
      id,
      kind,
      logs,
      first: num(item, "first"),
      cursor: num(item, "cursor"),
      seen: seenOf(item.seen?.S),
      span: item.span?.N === undefined ? null : Number(item.span.N),
      version: num(item, "version"),
      expiresAt: num(item, "expires_at"),
      chainResetAt: num(item, "chain_reset_at"),
    };
  } catch {
    // Not an item this store wrote: no filter.
    return null;
  }
}
