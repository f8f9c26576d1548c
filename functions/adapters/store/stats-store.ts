import {
  type AttributeValue,
  type DynamoDBClient,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import {
  LATENCY_BOUNDS_MS,
  type RequestStats,
  recordOutcome,
  type StatsBucket,
} from "../../core/health/request-stats.ts";
import { HISTORY_WINDOW_SECONDS } from "../../core/health/stats-history.ts";
import {
  STATS_BUCKET_SECONDS,
  STATS_FLUSH_INTERVAL_MS,
  STATS_QUIET_FLUSH_INTERVAL_MS,
} from "../../core/policies.ts";

/**
 * Request stats across containers (docs/behaviour.md §5.5). Each container counts outcomes in memory and
 * flushes its deltas every few seconds; one item per (bucket, provider) in the partition
 * `STATS#<network>` receives them with `ADD`, so merging many containers is plain addition
 * done by DynamoDB. The sort key leads with the zero-padded bucket start so a window is one
 * key-range Query: `<bucketStart>#<provider>`. Histogram bins are the numbered attributes
 * `l0`…`l16` (bins of `LATENCY_BOUNDS_MS`, overflow last).
 */

type Item = Record<string, AttributeValue>;

export const statsPartition = (network: string) => `STATS#${network}`;
/** 15 digits hold any ms timestamp for the next 30 000 years, and keep string order = time order. */
const bucketSortKey = (start: number, provider: string) =>
  `${String(start).padStart(15, "0")}#${provider}`;

const BINS = LATENCY_BOUNDS_MS.length + 1;

/**
 * A bucket may be deleted this long after it starts: twice the status page's hour of history,
 * so the hour is whole however promptly DynamoDB's TTL deletes once it is due.
 */
const DEFAULT_RETENTION_SECONDS = 2 * HISTORY_WINDOW_SECONDS;

export interface StatsWriter {
  /** Adds these counters to the stored ones. */
  flush(network: string, stats: RequestStats): Promise<void>;
}

export class DynamoStatsStore implements StatsWriter {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #retentionSeconds: number;

  /** `retentionSeconds`: how long after its start a bucket may be deleted (DynamoDB TTL). */
  constructor(options: { client: DynamoDBClient; tableName: string; retentionSeconds?: number }) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
  }

  async flush(network: string, stats: RequestStats): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    for (const [provider, buckets] of Object.entries(stats)) {
      for (const bucket of buckets) {
        if (bucket.requests > 0) writes.push(this.#add(network, provider, bucket));
      }
    }
    // Every write is tried even when one fails; each item's ADD is atomic on its own.
    const failed = (await Promise.allSettled(writes)).find((write) => write.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Every provider's buckets that start within the last `windowSeconds`, oldest first. */
  async read(network: string, now: number, windowSeconds: number): Promise<RequestStats> {
    const from = now - windowSeconds * 1000;
    const stats: RequestStats = {};
    let startKey: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk AND sk >= :from",
          ExpressionAttributeValues: {
            ":pk": { S: statsPartition(network) },
            ":from": { S: bucketSortKey(Math.max(0, from), "") },
          },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const provider = item.provider?.S;
        if (provider === undefined) continue;
        const buckets = stats[provider] ?? [];
        stats[provider] = buckets;
        buckets.push(bucketFromItem(item));
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return stats;
  }

  #add(network: string, provider: string, bucket: StatsBucket): Promise<unknown> {
    const names: Record<string, string> = {
      "#provider": "provider",
      "#start": "bucket_start",
      "#ttl": "ttl",
      "#requests": "requests",
      "#errors": "errors",
    };
    const values: Item = {
      ":provider": { S: provider },
      ":start": { N: String(bucket.start) },
      ":ttl": { N: String(Math.ceil(bucket.start / 1000) + this.#retentionSeconds) },
      ":requests": { N: String(bucket.requests) },
      ":errors": { N: String(bucket.errors) },
    };
    const additions = ["#requests :requests", "#errors :errors"];
    bucket.latency.forEach((count, bin) => {
      if (count === 0) return;
      names[`#l${bin}`] = `l${bin}`;
      values[`:l${bin}`] = { N: String(count) };
      additions.push(`#l${bin} :l${bin}`);
    });
    return this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: {
          pk: { S: statsPartition(network) },
          sk: { S: bucketSortKey(bucket.start, provider) },
        },
        UpdateExpression: `SET #provider = :provider, #start = :start, #ttl = :ttl ADD ${additions.join(", ")}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }
}

function bucketFromItem(item: Item): StatsBucket {
  const count = (name: string) => Number(item[name]?.N ?? 0);
  return {
    start: count("bucket_start"),
    requests: count("requests"),
    errors: count("errors"),
    latency: Array.from({ length: BINS }, (_, bin) => count(`l${bin}`)),
  };
}

export interface StatsFlusher {
  /** Counts one attempt's outcome in memory (no I/O). */
  record(network: string, provider: string, ok: boolean, latencyMs: number): void;
  /**
   * Flushes the first time it is called in a new slot of the clock (slots start at multiples
   * of their length): `intervalMs` slots while the counts hold a failure, `quietIntervalMs`
   * slots otherwise. Never rejects.
   */
  flushIfDue(): Promise<void>;
  /** Writes the accumulated deltas now and starts counting afresh; never rejects. */
  flush(): Promise<void>;
}

export interface StatsFlusherOptions {
  readonly statsStore: StatsWriter;
  readonly clock: () => number;
  readonly intervalMs?: number;
  /** The flush interval while every counted outcome succeeded; a multiple of `intervalMs`. */
  readonly quietIntervalMs?: number;
  /** Bucket length; every writer of a network must use the same one. */
  readonly bucketSeconds?: number;
  /** A failed flush is dropped, not retried: an ADD that timed out may still have landed. */
  readonly onError: (network: string, error: unknown) => void;
}

/**
 * The proxy container's accumulator: no DynamoDB write per request, one batch per interval.
 * Flushes fall due when the clock enters a new slot rather than an interval after the last
 * one: a batch then holds only outcomes of one slot, and with slots that divide the buckets,
 * one bucket, so a flush writes one item per provider instead of two whenever the counts
 * straddled a bucket's start. Failures go out every `intervalMs` (5 s), for "failing often";
 * while all is well a bucket's counts go out once, when it ends (every 10 s).
 */
export function createStatsFlusher(options: StatsFlusherOptions): StatsFlusher {
  const { statsStore, clock, onError } = options;
  const intervalMs = options.intervalMs ?? STATS_FLUSH_INTERVAL_MS;
  const quietIntervalMs = options.quietIntervalMs ?? STATS_QUIET_FLUSH_INTERVAL_MS;
  const bucketSeconds = options.bucketSeconds ?? STATS_BUCKET_SECONDS;
  let pending = new Map<string, RequestStats>();
  let pendingFailure = false;
  let lastFlush = clock();

  async function flush(): Promise<void> {
    lastFlush = clock();
    // Swapped before the first await, so concurrent requests count into the next batch.
    const batch = pending;
    pending = new Map();
    pendingFailure = false;
    await Promise.all(
      [...batch].map(([network, stats]) =>
        statsStore.flush(network, stats).catch((error: unknown) => onError(network, error)),
      ),
    );
  }

  return {
    record(network, provider, ok, latencyMs) {
      let stats = pending.get(network);
      if (stats === undefined) {
        stats = {};
        pending.set(network, stats);
      }
      recordOutcome(stats, provider, ok, latencyMs, clock(), bucketSeconds);
      if (!ok) pendingFailure = true;
    },
    async flushIfDue() {
      if (pending.size === 0) return;
      const slotMs = pendingFailure ? intervalMs : quietIntervalMs;
      if (Math.floor(clock() / slotMs) === Math.floor(lastFlush / slotMs)) return;
      await flush();
    },
    flush,
  };
}
