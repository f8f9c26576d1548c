import { type DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventRecorder } from "../../../../functions/adapters/store/event-recorder.ts";
import {
  DynamoEventStore,
  type EventStore,
  eventSortKey,
  eventsPartition,
} from "../../../../functions/adapters/store/event-store.ts";
import { DynamoStateStore } from "../../../../functions/adapters/store/state-store.ts";
import { HEALTHY } from "../../../../functions/core/health/health.ts";
import type { GatewayEvent, StoredEvent } from "../../../../functions/core/status/events.ts";
import { createLocalDynamoDbClient, type LocalDynamoDb } from "../../../../local/dynamodb.ts";
import { dynamoBackends } from "../../../support/environment.ts";

/**
 * The event log against both emulators that speak the real DynamoDB API through the real SDK:
 * dynalite (always) and AWS's DynamoDB Local (where Java is installed, and always under CI).
 * Events live in their own partition with a TTL; the newest are one Query; the bound expires
 * the rest; a config version is claimed once; the proxy's state Query never sees an event.
 */

const TABLE = "rpc-gateway-events-test";
const T0 = 1_800_000_000_000;
const DAY = 86_400;

describe.each(dynamoBackends())("the event log on $name", ({ start }) => {
  let dynamo: LocalDynamoDb;
  /** The table `start` made (on a shared DynamoDB Local, a name of its own). */
  let tableName = TABLE;
  let client: DynamoDBClient;
  let store: DynamoEventStore;
  let networkCount = 0;
  const freshNetwork = () => `net-${++networkCount}`;

  const stored = (network: string, at: number, index = 0): StoredEvent => ({
    id: eventSortKey(at, index.toString(16).padStart(8, "0")),
    network,
    at,
    provider: index % 2 === 0 ? "main" : null,
    kind: "blacklisted",
    reason: "connection",
    detail: `event ${index}`,
  });

  /** Every item of the network's partition, with its TTL, oldest first. */
  async function partition(network: string) {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: eventsPartition(network) } },
      }),
    );
    return (page.Items ?? []).map((item) => ({
      sk: item.sk?.S ?? "",
      ttl: Number(item.ttl?.N ?? Number.NaN),
    }));
  }

  beforeAll(async () => {
    dynamo = await start({ tableName: TABLE });
    tableName = dynamo.tableName;
    client = createLocalDynamoDbClient(dynamo.endpoint);
    store = new DynamoEventStore({ client, tableName });
  }, 120_000);

  afterAll(async () => {
    client?.destroy();
    await dynamo?.close();
  });

  it("stores an event with every field and a TTL of its retention, and reads it back", async () => {
    const network = freshNetwork();
    const event = stored(network, T0);
    await store.write(event, 7 * DAY);
    await store.write({ ...stored(network, T0 + 1, 1), provider: null }, 7 * DAY);
    expect(await store.newest(network, 10, T0)).toEqual([
      { ...stored(network, T0 + 1, 1), provider: null },
      event,
    ]);
    expect((await partition(network)).map((item) => item.ttl)).toEqual([
      T0 / 1000 + 7 * DAY,
      Math.ceil((T0 + 1) / 1000) + 7 * DAY,
    ]);
  });

  it("reads the newest first, at most the limit, in one Query", async () => {
    const network = freshNetwork();
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        store.write(stored(network, T0 + index * 1000, index), DAY),
      ),
    );
    const newest = await store.newest(network, 10, T0);
    expect(newest.map((event) => event.detail)).toEqual(
      Array.from({ length: 10 }, (_, index) => `event ${29 - index}`),
    );
  });

  it("does not show an event past its TTL that DynamoDB has not deleted yet", async () => {
    const network = freshNetwork();
    await store.write(stored(network, T0, 0), 60);
    await store.write(stored(network, T0 + 1000, 1), DAY);
    const later = T0 + 120_000;
    expect((await store.newest(network, 10, later)).map((event) => event.detail)).toEqual([
      "event 1",
    ]);
  });

  it("keeps the newest `keep` and expires the rest (TTL now), so reads never reach them", async () => {
    const network = freshNetwork();
    await Promise.all(
      Array.from({ length: 25 }, (_, index) =>
        store.write(stored(network, T0 + index * 1000, index), DAY),
      ),
    );
    const now = T0 + 60_000;
    expect(await store.tidy(network, 20, now)).toBe(5);
    const items = await partition(network);
    expect(items.filter((item) => item.ttl <= now / 1000).map((item) => item.sk)).toEqual(
      Array.from({ length: 5 }, (_, index) => stored(network, T0 + index * 1000, index).id),
    );
    expect((await store.newest(network, 100, now)).map((event) => event.detail)).toHaveLength(20);
    // Already expired ones are not written again; fewer than `keep` is nothing to do.
    expect(await store.tidy(network, 20, now)).toBe(0);
    expect(await store.tidy(freshNetwork(), 20, now)).toBe(0);
  });

  it("claims a config version once per network, and the next version again", async () => {
    const network = freshNetwork();
    expect(await store.claimConfigVersion(network, 's3:"a"', T0)).toBe(true);
    expect(await store.claimConfigVersion(network, 's3:"a"', T0 + 1)).toBe(false);
    expect(await store.claimConfigVersion(freshNetwork(), 's3:"a"', T0)).toBe(true);
    expect(await store.claimConfigVersion(network, 's3:"b"', T0 + 2)).toBe(true);
    expect(await store.claimConfigVersion(network, 's3:"a"', T0 + 3)).toBe(true);
    // The marker is no event.
    expect(await store.newest(network, 10, T0)).toEqual([]);
  });

  it("the proxy's state Query of the network never reads an event", async () => {
    const network = freshNetwork();
    const state = new DynamoStateStore({ client, tableName, clock: () => T0 });
    await state.writeHealth(network, "main", 0, { ...HEALTHY, version: 1 });
    await store.write(stored(network, T0), DAY);
    await store.claimConfigVersion(network, "file:x", T0);
    const read = await state.readNetwork(network);
    expect([...read.providers.keys()]).toEqual(["main"]);
    expect(read.capabilities.size).toBe(0);
    expect(read.quorum).toBeNull();
  });

  describe("the recorder", () => {
    const gatewayEvent = (network: string, at: number, detail: string): GatewayEvent => ({
      network,
      at,
      provider: "main",
      kind: "probe_failed",
      reason: "timeout",
      detail,
    });

    it("writes each event without being awaited, and its reads merge what is still being written", async () => {
      const network = freshNetwork();
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const slow: EventStore = {
        write: async (event, retention) => {
          await held;
          await store.write(event, retention);
        },
        newest: (n, limit, now) => store.newest(n, limit, now),
        tidy: (n, keep, now) => store.tidy(n, keep, now),
        claimConfigVersion: (n, version, now) => store.claimConfigVersion(n, version, now),
      };
      const errors: unknown[] = [];
      const recorder = new EventRecorder({
        store: slow,
        clock: () => T0,
        retentionSeconds: () => DAY,
        onError: (_network, error) => errors.push(error),
      });
      recorder.record(gatewayEvent(network, T0, "first"));
      recorder.record(gatewayEvent(network, T0 + 5, "second"));
      // Not written yet, but this container shows them.
      expect(await store.newest(network, 10, T0)).toEqual([]);
      expect((await recorder.newest(network, 10)).map((event) => event.detail)).toEqual([
        "second",
        "first",
      ]);
      release();
      await recorder.settled();
      expect((await store.newest(network, 10, T0)).map((event) => event.detail)).toEqual([
        "second",
        "first",
      ]);
      expect((await recorder.newest(network, 1)).map((event) => event.detail)).toEqual(["second"]);
      expect(errors).toEqual([]);
    });

    it("reports a failed write and drops the event; past the bound in flight, it drops at once", async () => {
      const network = freshNetwork();
      const failing: EventStore = {
        write: () =>
          new Promise((_, reject) => setTimeout(() => reject(new Error("throttled")), 5)),
        newest: async () => [],
        tidy: async () => 0,
        claimConfigVersion: async () => false,
      };
      const errors: string[] = [];
      const recorder = new EventRecorder({
        store: failing,
        clock: () => T0,
        retentionSeconds: () => DAY,
        onError: (_network, error) => errors.push((error as Error).message),
        maxInFlight: 2,
      });
      for (const detail of ["a", "b", "c"]) recorder.record(gatewayEvent(network, T0, detail));
      expect(errors).toEqual(["event dropped: 2 writes in flight"]);
      await recorder.settled();
      expect(errors).toEqual(["event dropped: 2 writes in flight", "throttled", "throttled"]);
      expect(await recorder.newest(network, 10)).toEqual([]);
    });

    it("an event of a network the config no longer has is reported, not written", async () => {
      const errors: string[] = [];
      const recorder = new EventRecorder({
        store,
        clock: () => T0,
        retentionSeconds: (network) => {
          throw new Error(`no network ${network}`);
        },
        onError: (_network, error) => errors.push((error as Error).message),
      });
      recorder.record(gatewayEvent("gone", T0, "x"));
      await recorder.settled();
      expect(errors).toEqual(["no network gone"]);
      expect(await recorder.newest("gone", 10)).toEqual([]);
    });
  });
});
