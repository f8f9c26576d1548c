import { type DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { KeyUsage, PendingCount } from "../core/key-usage.ts";

/**
 * The shared per-API-key, per-minute request counters behind `requests_per_minute`:
 * `USAGE#<key name>` / `<minute start>` with `count` and a TTL, added to with `ADD` (one
 * UpdateItem per key per flush, whose answer is the total across containers).
 */

/** Counters are needed for their minute only; the TTL tidies them an hour later. */
const TTL_SECONDS = 3_600;

export const usagePartition = (key: string) => `USAGE#${key}`;

export class DynamoUsageStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  /** Adds `count` to the key's counter for the minute; returns the counter's new total. */
  async add(key: string, minute: number, count: number): Promise<number> {
    const answer = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: usagePartition(key) }, sk: { S: String(minute) } },
        UpdateExpression: "SET #ttl = :ttl ADD #count :count",
        ExpressionAttributeNames: { "#ttl": "ttl", "#count": "count" },
        ExpressionAttributeValues: {
          ":ttl": { N: String(Math.ceil(minute / 1000) + TTL_SECONDS) },
          ":count": { N: String(count) },
        },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    return Number(answer.Attributes?.count?.N ?? count);
  }
}

export interface UsageFlusherOptions {
  readonly usage: KeyUsage;
  readonly store: Pick<DynamoUsageStore, "add">;
  readonly clock: () => number;
  /** How often a container adds its counts (default 2 s): the bound on overshooting a limit. */
  readonly intervalMs?: number;
  readonly onError: (key: string, error: unknown) => void;
}

/**
 * Adds a container's counts to the shared counters at most every `intervalMs`, and learns the
 * totals. A failed add is counted again at the next flush (a limit errs on the strict side).
 * Never rejects.
 */
export function createUsageFlusher(options: UsageFlusherOptions): { flushIfDue(): Promise<void> } {
  const { usage, store, clock, onError } = options;
  const intervalMs = options.intervalMs ?? 2_000;
  let lastFlush = Number.NEGATIVE_INFINITY;
  let inflight: Promise<void> | null = null;

  async function flush(): Promise<void> {
    lastFlush = clock();
    const counts = usage.takePending();
    await Promise.all(
      counts.map(async (pending: PendingCount) => {
        try {
          usage.recordShared(
            pending.key,
            pending.minute,
            await store.add(pending.key, pending.minute, pending.count),
          );
        } catch (error) {
          usage.restore([pending]);
          onError(pending.key, error);
        }
      }),
    );
  }

  return {
    flushIfDue() {
      if (inflight !== null || clock() - lastFlush < intervalMs)
        return inflight ?? Promise.resolve();
      inflight = flush().finally(() => {
        inflight = null;
      });
      return inflight;
    },
  };
}
