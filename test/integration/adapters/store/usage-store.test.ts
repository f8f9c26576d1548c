import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createKeyLimiter,
  DynamoUsageStore,
} from "../../../../functions/adapters/store/usage-store.ts";
import { KeyUsage } from "../../../../functions/core/http/key-usage.ts";
import {
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
} from "../../../../local/dynamodb.ts";

/**
 * Per-key limits shared by several containers through real DynamoDB counters (dynalite):
 * reservations on the request path (docs/behaviour.md §8.5).
 */

const TABLE = "rpc-gateway-usage-test";
const MINUTE = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);

let dynamo: LocalDynamoDb;
let client: DynamoDBClient;

beforeAll(async () => {
  dynamo = await startDynalite({ tableName: TABLE });
  client = createLocalDynamoDbClient(dynamo.endpoint);
}, 60_000);

afterAll(async () => {
  client?.destroy();
  await dynamo?.close();
});

/** A store that counts its writes. */
function countingStore(target: DynamoDBClient = client) {
  const store = new DynamoUsageStore({ client: target, tableName: TABLE });
  const counted = {
    writes: 0,
    add: (key: string, minute: number, count: number, signal?: AbortSignal) => {
      counted.writes++;
      return store.add(key, minute, count, signal);
    },
  };
  return counted;
}

function container(
  clock: () => number,
  store: ReturnType<typeof countingStore>,
  errors: unknown[] = [],
) {
  return createKeyLimiter({
    usage: new KeyUsage(clock),
    store,
    clock,
    timeoutMs: 5_000,
    onError: (_key, error) => errors.push(error),
  });
}

describe("requests_per_minute across containers", () => {
  it("four containers under a concurrent burst admit the key's limit together, not the limit each", async () => {
    const clock = () => T0 + 1_000;
    const store = countingStore();
    const limit = { name: "burst-key", requestsPerMinute: 60 };
    const containers = Array.from({ length: 4 }, () => container(clock, store));
    // 100 requests in flight on each container at once (Lambda serves them one at a time;
    // at once is the harder case for a container's own bookkeeping).
    const answers = await Promise.all(
      containers.flatMap((limiter) => Array.from({ length: 100 }, () => limiter.admit(limit))),
    );
    expect(answers.filter(Boolean)).toHaveLength(60);
    // Reservations, not one write per request: each container's writes grow with its share.
    expect(store.writes).toBeLessThan(100);
  });

  it("a counter that cannot be reached: the container counts alone, and asks again only after the backoff", async () => {
    let now = T0 + MINUTE;
    const clock = () => now;
    const errors: unknown[] = [];
    // A DynamoDB endpoint nobody listens on: every add fails.
    const unreachable = createLocalDynamoDbClient("http://127.0.0.1:9");
    const store = countingStore(unreachable);
    const limiter = container(clock, store, errors);
    const limit = { name: "k", requestsPerMinute: 5 };
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await limiter.admit(limit));
    expect(answers).toEqual([true, true, true, true, true, false, false]);
    expect(store.writes).toBe(1);
    expect(errors).toHaveLength(1);
    now += 2_000;
    await limiter.admit(limit);
    expect(store.writes).toBe(2);
    unreachable.destroy();
  });

  it("the counter is one item per key and minute, with a TTL", async () => {
    const store = new DynamoUsageStore({ client, tableName: TABLE });
    expect(await store.add("ttl-key", T0, 3)).toBe(3);
    expect(await store.add("ttl-key", T0, 0)).toBe(3);
    expect(await store.add("ttl-key", T0 + MINUTE, 1)).toBe(1);
  });
});
