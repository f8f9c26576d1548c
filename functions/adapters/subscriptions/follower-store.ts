import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { FollowerCursor, RecentBlock } from "../../core/follower/cursor.ts";
import type { FollowerStore } from "../../core/follower/follower-ports.ts";

/**
 * The head follower's memory in the state table (docs/architecture.md): the cursor,
 * `WSFOLLOW#<network>` / `CURSOR` (under 1.5 KB: the remembered blocks packed as one string of
 * hash keys), written only conditionally on its version; and the logs sent of each recent
 * block, `WSFOLLOW#<network>` / `LOGS#<block>#<key>`, gzip-compressed, for a reorg to send them
 * again as removed. Both expire (DynamoDB TTL; an expired item is never read meanwhile). Only
 * GetItem and UpdateItem.
 */

type Item = Record<string, AttributeValue>;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const followerPartition = (network: string) => `WSFOLLOW#${network}`;
const CURSOR = "CURSOR";
const logsKey = (block: RecentBlock) =>
  `LOGS#${block.number.toString(16).padStart(12, "0")}#${block.key}`;

/** The most a block's kept logs may take compressed: a DynamoDB item holds 400 KB. */
export const KEPT_LOGS_MAX_BYTES = 350_000;

const ttlOf = (expiresAt: number) => String(Math.ceil(expiresAt / 1000));

export interface DynamoFollowerStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly clock?: () => number;
}

export class DynamoFollowerStore implements FollowerStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: () => number;

  constructor(options: DynamoFollowerStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#clock = options.clock ?? Date.now;
  }

  async readCursor(network: string): Promise<FollowerCursor | null> {
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: this.#key(network, CURSOR),
        ConsistentRead: true,
      }),
    );
    if (Item === undefined || num(Item, "expires_at") <= this.#clock()) return null;
    return cursorOf(Item);
  }

  async writeCursor(
    network: string,
    cursor: FollowerCursor,
    expectedVersion: number,
    expiresAt: number,
  ): Promise<boolean> {
    const pending = cursor.logsPending === null ? "" : ", #pending = :pending";
    const holder = cursor.holder === null ? "" : ", #holder = :holder";
    const removed = [
      ...(cursor.logsPending === null ? ["#pending"] : []),
      ...(cursor.holder === null ? ["#holder"] : []),
    ];
    const values: Item = {
      ":next": { N: String(cursor.next) },
      ":done": { N: String(cursor.done) },
      ":since": { N: String(cursor.pendingSince) },
      ":from": { N: String(cursor.recent[0]?.number ?? cursor.next) },
      ":recent": { S: packRecent(cursor.recent) },
      ":catching": { S: cursor.catchingUp.join(",") },
      ":until": { N: String(cursor.leaseUntil) },
      ":version": { N: String(cursor.version) },
      ":expires": { N: String(expiresAt) },
      ":ttl": { N: ttlOf(expiresAt) },
      ...(cursor.logsPending === null ? {} : { ":pending": { S: cursor.logsPending } }),
      ...(cursor.holder === null ? {} : { ":holder": { S: cursor.holder } }),
    };
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#key(network, CURSOR),
          UpdateExpression: `SET #next = :next, #done = :done, #since = :since, #from = :from, #recent = :recent, #catching = :catching, #until = :until, #version = :version, #expires = :expires, #ttl = :ttl${pending}${holder}${removed.length > 0 ? ` REMOVE ${removed.join(", ")}` : ""}`,
          // Version 0 is a cursor never written, or one whose item expired.
          ConditionExpression:
            expectedVersion === 0
              ? "attribute_not_exists(#version) OR #expires <= :now"
              : "#version = :expected AND #expires > :now",
          ExpressionAttributeNames: {
            "#next": "next",
            "#done": "done",
            "#since": "pending_since",
            "#from": "recent_from",
            "#recent": "recent",
            "#catching": "catching_up",
            "#until": "lease_until",
            "#version": "version",
            "#expires": "expires_at",
            "#ttl": "ttl",
            "#pending": "logs_pending",
            "#holder": "holder",
          },
          ExpressionAttributeValues: {
            ...values,
            ":now": { N: String(this.#clock()) },
            ...(expectedVersion === 0 ? {} : { ":expected": { N: String(expectedVersion) } }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async keepLogs(
    network: string,
    block: RecentBlock,
    logs: readonly string[],
    expiresAt: number,
  ): Promise<void> {
    // The texts as they were sent (a JSON list of strings), so they come back byte for byte.
    const body = await gzipAsync(Buffer.from(JSON.stringify(logs), "utf8"));
    if (body.byteLength > KEPT_LOGS_MAX_BYTES) {
      throw new Error(
        `the logs sent of block ${block.number} are ${body.byteLength} bytes compressed, over the ${KEPT_LOGS_MAX_BYTES} an item may keep`,
      );
    }
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: this.#key(network, logsKey(block)),
        UpdateExpression: "SET #body = :body, #expires = :expires, #ttl = :ttl",
        ExpressionAttributeNames: { "#body": "body", "#expires": "expires_at", "#ttl": "ttl" },
        ExpressionAttributeValues: {
          ":body": { B: body },
          ":expires": { N: String(expiresAt) },
          ":ttl": { N: ttlOf(expiresAt) },
        },
      }),
    );
  }

  async readLogs(network: string, block: RecentBlock): Promise<readonly string[] | null> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: this.#key(network, logsKey(block)) }),
    );
    const body = Item?.body?.B;
    if (Item === undefined || body === undefined || num(Item, "expires_at") <= this.#clock()) {
      return null;
    }
    const parsed: unknown = JSON.parse((await gunzipAsync(body)).toString("utf8"));
    return Array.isArray(parsed) && parsed.every((log) => typeof log === "string") ? parsed : null;
  }

  #key(network: string, sk: string): Item {
    return { pk: { S: followerPartition(network) }, sk: { S: sk } };
  }
}

/** The remembered blocks as one string: their keys without `0x`, oldest first (the numbers follow from `recent_from`). */
function packRecent(recent: readonly RecentBlock[]): string {
  return recent.map((block) => block.key.slice(2)).join("");
}

function unpackRecent(from: number, packed: string): RecentBlock[] {
  const width = 12;
  const recent: RecentBlock[] = [];
  for (let at = 0; at + width <= packed.length; at += width) {
    recent.push({ number: from + at / width, key: `0x${packed.slice(at, at + width)}` });
  }
  return recent;
}

function cursorOf(item: Item): FollowerCursor {
  const catching = item.catching_up?.S ?? "";
  return {
    next: num(item, "next"),
    done: num(item, "done"),
    logsPending: item.logs_pending?.S ?? null,
    pendingSince: num(item, "pending_since"),
    recent: unpackRecent(num(item, "recent_from"), item.recent?.S ?? ""),
    catchingUp: catching === "" ? [] : catching.split(","),
    holder: item.holder?.S ?? null,
    leaseUntil: num(item, "lease_until"),
    version: num(item, "version"),
  };
}

function num(item: Item, name: string): number {
  const value = Number(item[name]?.N);
  return Number.isFinite(value) ? value : 0;
}
