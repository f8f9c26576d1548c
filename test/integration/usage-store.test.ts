import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUsageFlusher, DynamoUsageStore } from "../../functions/adapters/usage-store.ts";
import { KeyUsage } from "../../functions/core/key-usage.ts";
import {
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
} from "../../local/dynamodb.ts";

/** Per-key limits shared by two containers through real DynamoDB counters (dynalite). */

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

function container(clock: () => number, errors: unknown[] = []) {
  const usage = new KeyUsage(clock);
  const flusher = createUsageFlusher({
    usage,
    store: new DynamoUsageStore({ client, tableName: TABLE }),
    clock,
    intervalMs: 2_000,
    onError: (_key, error) => errors.push(error),
  });
  return { usage, flusher };
}

describe("requests_per_minute across containers", () => {
  it("two containers together admit the key's limit, not the limit each", async () => {
    let now = T0;
    const clock = () => now;
    const limit = { name: "shared-key", requestsPerMinute: 10 };
    const a = container(clock);
    const b = container(clock);

    const admittedByA = Array.from({ length: 6 }, () => a.usage.admit(limit)).filter(
      Boolean,
    ).length;
    await a.flusher.flushIfDue();
    await b.flusher.flushIfDue(); // b had nothing, yet learns nothing of a's key until it uses it
    const firstOfB = b.usage.admit(limit);
    now += 2_000;
    await b.flusher.flushIfDue(); // adds b's one request, learns the total of 7
    const restOfB = Array.from({ length: 10 }, () => b.usage.admit(limit)).filter(Boolean).length;

    expect(admittedByA).toBe(6);
    expect(firstOfB).toBe(true);
    expect(admittedByA + 1 + restOfB).toBe(10);
  });

  it("a flush that cannot reach DynamoDB keeps its counts for the next one", async () => {
    let now = T0 + MINUTE;
    const clock = () => now;
    const errors: unknown[] = [];
    const unreachable = createLocalDynamoDbClient("http://127.0.0.1:9");
    const broken = new KeyUsage(clock);
    const failing = createUsageFlusher({
      usage: broken,
      // A DynamoDB endpoint nobody listens on: every add fails.
      store: new DynamoUsageStore({ client: unreachable, tableName: TABLE }),
      clock,
      onError: (_key, error) => errors.push(error),
    });
    broken.admit({ name: "k", requestsPerMinute: 5 });
    await failing.flushIfDue();
    expect(errors).toHaveLength(1);
    now += 1;
    expect(broken.takePending()).toEqual([{ key: "k", minute: T0 + MINUTE, count: 1 }]);
    unreachable.destroy();
  });

  it("the counter is one item per key and minute, with a TTL", async () => {
    const store = new DynamoUsageStore({ client, tableName: TABLE });
    expect(await store.add("ttl-key", T0, 3)).toBe(3);
    expect(await store.add("ttl-key", T0, 0)).toBe(3);
    expect(await store.add("ttl-key", T0 + MINUTE, 1)).toBe(1);
  });
});
