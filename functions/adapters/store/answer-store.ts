import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import {
  type AttributeValue,
  BatchGetItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { PLATFORM_LIMITS } from "../../core/config/config-bounds.ts";
import type { SharedAnswerStore } from "../../core/ports.ts";

/**
 * The answer cache's shared tier in the state table (docs/architecture.md): immutable answers
 * as `CACHE#<network>` / `<sha-256 of the key>`, the text gzip-compressed in `body`, with a
 * DynamoDB TTL. One GetItem reads a call's answer, one BatchGetItem a batch's. An answer over
 * the item cap compressed (`cache_shared_item_bytes`, and never over what an item holds) is not
 * kept. Written with UpdateItem (the proxy's role has no PutItem).
 */

type Item = Record<string, AttributeValue>;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const cachePartition = (network: string) => `CACHE#${network}`;

/** DynamoDB's item limit is 400 KB, names and key included; this leaves room for those. */
export const MAX_COMPRESSED_BYTES = PLATFORM_LIMITS.maxSharedItemBytes;
/** What a read needs (aliased: several attribute names are reserved words). */
const PROJECTION = {
  ProjectionExpression: "#sk, #body, #ttl",
  ExpressionAttributeNames: { "#sk": "sk", "#body": "body", "#ttl": "ttl" },
};
const NAMES_WRITTEN = { "#body": "body", "#ttl": "ttl" };
/** BatchGetItem reads at most this many keys at once. */
const BATCH_GET_KEYS = 100;

export interface DynamoAnswerStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly clock?: () => number;
  /** A read that takes longer is given up (a miss): the providers are asked instead. */
  readonly readTimeoutMs?: number;
}

export class DynamoAnswerStore implements SharedAnswerStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: () => number;
  readonly #readTimeoutMs: number;
  readonly #writing = new Set<Promise<unknown>>();

  constructor(options: DynamoAnswerStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#clock = options.clock ?? Date.now;
    this.#readTimeoutMs = options.readTimeoutMs ?? 300;
  }

  async read(network: string, keys: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const byHash = new Map(keys.map((key) => [hashOf(key), key]));
    const signal = AbortSignal.timeout(this.#readTimeoutMs);
    const items =
      byHash.size === 1
        ? await this.#getOne(network, [...byHash.keys()][0] ?? "", signal)
        : await this.#getMany(network, [...byHash.keys()], signal);
    const found = new Map<string, string>();
    const nowSeconds = this.#clock() / 1000;
    await Promise.all(
      items.map(async (item) => {
        const key = byHash.get(item.sk?.S ?? "");
        const body = item.body?.B;
        // DynamoDB's TTL deletes late: an expired item is no answer.
        if (key === undefined || body === undefined || Number(item.ttl?.N ?? 0) <= nowSeconds) {
          return;
        }
        const text = await gunzipAsync(body).then(
          (bytes) => bytes.toString("utf8"),
          () => null,
        );
        if (text !== null) found.set(key, text);
      }),
    );
    return found;
  }

  async write(
    network: string,
    key: string,
    text: string,
    expiresAt: number,
    maxBytes: number,
  ): Promise<boolean> {
    const writing = this.#write(
      network,
      key,
      text,
      expiresAt,
      Math.min(maxBytes, MAX_COMPRESSED_BYTES),
    );
    this.#writing.add(writing);
    try {
      return await writing;
    } finally {
      this.#writing.delete(writing);
    }
  }

  /** Resolves once every write started so far has ended (for tests and the bench). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.#writing]);
  }

  async #write(
    network: string,
    key: string,
    text: string,
    expiresAt: number,
    maxBytes: number,
  ): Promise<boolean> {
    const body = await gzipAsync(Buffer.from(text, "utf8"));
    if (body.length > maxBytes) return false;
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: cachePartition(network) }, sk: { S: hashOf(key) } },
        UpdateExpression: "SET #body = :body, #ttl = :ttl",
        ExpressionAttributeNames: NAMES_WRITTEN,
        ExpressionAttributeValues: {
          ":body": { B: body },
          ":ttl": { N: String(Math.ceil(expiresAt / 1000)) },
        },
      }),
    );
    return true;
  }

  async #getOne(network: string, sk: string, signal: AbortSignal): Promise<Item[]> {
    const answer = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: cachePartition(network) }, sk: { S: sk } },
        ...PROJECTION,
      }),
      { abortSignal: signal },
    );
    return answer.Item ? [answer.Item] : [];
  }

  /** One BatchGetItem per 100 keys; keys DynamoDB leaves unprocessed are misses. */
  async #getMany(network: string, sks: readonly string[], signal: AbortSignal): Promise<Item[]> {
    const chunks: string[][] = [];
    for (let start = 0; start < sks.length; start += BATCH_GET_KEYS) {
      chunks.push(sks.slice(start, start + BATCH_GET_KEYS));
    }
    const pages = await Promise.all(
      chunks.map(async (chunk) => {
        const answer = await this.#client.send(
          new BatchGetItemCommand({
            RequestItems: {
              [this.#table]: {
                Keys: chunk.map((sk) => ({ pk: { S: cachePartition(network) }, sk: { S: sk } })),
                ...PROJECTION,
              },
            },
          }),
          { abortSignal: signal },
        );
        return answer.Responses?.[this.#table] ?? [];
      }),
    );
    return pages.flat();
  }
}

function hashOf(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}
