import { type DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { KeyLimit, KeyUsage, Reservation } from "../../core/http/key-usage.ts";

/**
 * The shared per-API-key, per-minute counters behind `requests_per_minute`: `USAGE#<key
 * name>` / `<minute start>` with `count` (tokens reserved by every container) and a TTL, added
 * to with `ADD`, one UpdateItem per reservation, whose answer is the new total.
 */

/** Counters are needed for their minute only; the TTL tidies them an hour later. */
const TTL_SECONDS = 3_600;
/** Reservations one request may wait for (each adds to the total: the minute ends soon). */
const MAX_ROUNDS = 16;

export const usagePartition = (key: string) => `USAGE#${key}`;

export class DynamoUsageStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  /** Adds `count` to the key's counter for the minute; returns the counter's new total. */
  async add(key: string, minute: number, count: number, signal?: AbortSignal): Promise<number> {
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
      signal === undefined ? {} : { abortSignal: signal },
    );
    return Number(answer.Attributes?.count?.N ?? count);
  }
}

export interface KeyLimiterOptions {
  readonly usage: KeyUsage;
  readonly store: Pick<DynamoUsageStore, "add">;
  readonly clock: () => number;
  /** A reservation slower than this (default 500 ms) counts as unreachable. */
  readonly timeoutMs?: number;
  /** After a failed reservation, how long the container counts alone (default 2 s). */
  readonly backoffMs?: number;
  readonly onError: (key: string, error: unknown) => void;
}

/**
 * Admits a key's requests from tokens reserved in the shared counters (core/http/key-usage.ts):
 * a request with no token held waits for one reservation (requests of the same key in this
 * container wait for the same one). When the counter cannot be reached, the container counts
 * alone for `backoffMs`, so an unreachable table costs one slow request, not every request.
 * Never rejects.
 */
export function createKeyLimiter(options: KeyLimiterOptions): {
  admit(limit: KeyLimit): Promise<boolean>;
} {
  const { usage, store, clock, onError } = options;
  const timeoutMs = options.timeoutMs ?? 500;
  const backoffMs = options.backoffMs ?? 2_000;
  const reserving = new Map<string, Promise<void>>();
  let aloneUntil = Number.NEGATIVE_INFINITY;

  async function reserve(limit: KeyLimit, reservation: Reservation): Promise<void> {
    try {
      const total = await store.add(
        reservation.key,
        reservation.minute,
        reservation.count,
        AbortSignal.timeout(timeoutMs),
      );
      if (!Number.isSafeInteger(total)) throw new Error(`usage counter answered ${total}`);
      usage.reserved(limit, reservation, total);
    } catch (error) {
      aloneUntil = clock() + backoffMs;
      onError(reservation.key, error);
    }
  }

  return {
    async admit(limit) {
      // Every reservation adds to the minute's total until it is used up, so each round gets
      // this request a token, shows the minute's end, or fails; more rounds than a few mean
      // many requests of the key waited on one container's reservations: the last are refused.
      for (let round = 0; round < MAX_ROUNDS; round++) {
        if (clock() < aloneUntil) return usage.admitAlone(limit);
        const decision = usage.decide(limit);
        if (decision.kind !== "reserve") return decision.kind === "admit";
        let pending = reserving.get(limit.name);
        if (pending === undefined) {
          pending = reserve(limit, decision.reservation).finally(() =>
            reserving.delete(limit.name),
          );
          reserving.set(limit.name, pending);
        }
        await pending;
      }
      return false;
    },
  };
}
