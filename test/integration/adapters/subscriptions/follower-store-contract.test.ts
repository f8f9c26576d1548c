import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../../../functions/adapters/store/state-store.ts";
import {
  DynamoFollowerStore,
  followerPartition,
} from "../../../../functions/adapters/subscriptions/follower-store.ts";
import {
  blockKey,
  claimed,
  type FollowerCursor,
  newCursor,
} from "../../../../functions/core/follower/cursor.ts";
import type { FollowerStore } from "../../../../functions/core/follower/follower-ports.ts";
import {
  isJavaAvailable,
  type LocalDynamoDb,
  startDynalite,
  startDynamoDbLocal,
} from "../../../../local/dynamodb.ts";
import { MemoryFollowerStore } from "../../../support/memory-follower-store.ts";

/**
 * The follower store's contract (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower), on the DynamoDB adapter against the real DynamoDB API (dynalite; DynamoDB Local
 * where Java is present) and on the in-memory store its unit tests use: the cursor reads back
 * as written; a write lands only over the version it names, so of two runs writing at once
 * one loses; expired items are never read; a block's logs come back byte for byte.
 */

const NOW = Date.UTC(2026, 0, 1);
const clock = { now: NOW };

interface Backend {
  readonly store: FollowerStore;
  /** The size of the cursor item in bytes, when the backend can tell (DynamoDB). */
  readonly cursorBytes?: (network: string) => Promise<number>;
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  const client = createDynamoClient({ endpoint: dynamo.endpoint });
  const { GetItemCommand } = await import("@aws-sdk/client-dynamodb");
  return {
    store: new DynamoFollowerStore({ client, tableName: dynamo.tableName, clock: () => clock.now }),
    cursorBytes: async (network) => {
      const { Item } = await client.send(
        new GetItemCommand({
          TableName: dynamo.tableName,
          Key: { pk: { S: followerPartition(network) }, sk: { S: "CURSOR" } },
        }),
      );
      // DynamoDB's item size: attribute names and values (numbers as their digits, roughly).
      let bytes = 0;
      for (const [name, value] of Object.entries(Item ?? {})) {
        bytes += name.length + (value.S?.length ?? value.N?.length ?? value.B?.byteLength ?? 0);
      }
      return bytes;
    },
    close: () => dynamo.close(),
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  [
    "memory",
    async () => ({ store: new MemoryFollowerStore(() => clock.now), close: async () => {} }),
    false,
  ],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "follower" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startDynamoDbLocal({ tableName: "follower" })),
    !isJavaAvailable(),
  ],
];

const hashOf = (number: number) => `0x${number.toString(16).padStart(8, "0")}${"ab".repeat(28)}`;

/** A cursor as a run leaves it after delivering `blocks` blocks from 100. */
function cursorAfter(blocks: number): FollowerCursor {
  let cursor = newCursor(100);
  for (let number = 100; number < 100 + blocks; number++) {
    cursor = claimed(cursor, { number, key: blockKey(hashOf(number)) });
  }
  return {
    ...cursor,
    logsPending: hashOf(99 + blocks),
    pendingSince: NOW - 5,
    catchingUp: [`0x${"1".repeat(32)}`, `0x${"2".repeat(32)}`],
    holder: "run-1",
    leaseUntil: NOW + 58_000,
  };
}

describe.each(backends)("the follower store contract on %s", (_name, start, skip) => {
  let backend: Backend;
  let network = 0;
  const fresh = () => `net-${++network}`;

  beforeAll(async () => {
    if (skip) return;
    backend = await start();
  }, 120_000);
  afterAll(async () => {
    await backend?.close();
  });

  it.skipIf(skip)(
    "reads the cursor back as it was written; none before the first write",
    async () => {
      const net = fresh();
      expect(await backend.store.readCursor(net)).toBeNull();
      const cursor = { ...cursorAfter(200), version: 1 };
      expect(await backend.store.writeCursor(net, cursor, 0, NOW + 60_000)).toBe(true);
      expect(await backend.store.readCursor(net)).toEqual(cursor);
      const released = { ...cursor, holder: null, logsPending: null, catchingUp: [], version: 2 };
      expect(await backend.store.writeCursor(net, released, 1, NOW + 60_000)).toBe(true);
      expect(await backend.store.readCursor(net)).toEqual(released);
    },
  );

  it.skipIf(skip)(
    "writes only over the version named: of two runs at once, one loses",
    async () => {
      const net = fresh();
      const first = { ...cursorAfter(3), version: 1 };
      expect(await backend.store.writeCursor(net, first, 0, NOW + 60_000)).toBe(true);
      expect(
        await backend.store.writeCursor(net, { ...first, holder: "run-2" }, 0, NOW + 60_000),
      ).toBe(false);
      const outcomes = await Promise.all([
        backend.store.writeCursor(net, { ...first, holder: "run-a", version: 2 }, 1, NOW + 60_000),
        backend.store.writeCursor(net, { ...first, holder: "run-b", version: 2 }, 1, NOW + 60_000),
      ]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(["run-a", "run-b"]).toContain((await backend.store.readCursor(net))?.holder);
    },
  );

  it.skipIf(skip)(
    "forgets a cursor that expired: it is written afresh from version 0",
    async () => {
      const net = fresh();
      const cursor = { ...cursorAfter(3), version: 7 };
      expect(await backend.store.writeCursor(net, cursor, 0, NOW + 1_000)).toBe(true);
      clock.now = NOW + 1_000;
      try {
        expect(await backend.store.readCursor(net)).toBeNull();
        expect(
          await backend.store.writeCursor(net, { ...cursor, version: 1 }, 0, NOW + 60_000),
        ).toBe(true);
        expect((await backend.store.readCursor(net))?.version).toBe(1);
      } finally {
        clock.now = NOW;
      }
    },
  );

  it.skipIf(skip)("keeps a block's logs byte for byte until they expire", async () => {
    const net = fresh();
    const block = { number: 150, key: blockKey(hashOf(150)) };
    const logs = [
      '{"address":"0xAB","logIndex":"0x0"}',
      '{ "logIndex" : "0x1", "data":"0x\\u00e9" }',
    ];
    expect(await backend.store.readLogs(net, block)).toBeNull();
    await backend.store.keepLogs(net, block, logs, NOW + 1_000);
    expect(await backend.store.readLogs(net, block)).toEqual(logs);
    expect(await backend.store.readLogs(net, { ...block, key: blockKey(hashOf(151)) })).toBeNull();
    clock.now = NOW + 1_000;
    try {
      expect(await backend.store.readLogs(net, block)).toBeNull();
    } finally {
      clock.now = NOW;
    }
  });

  it.skipIf(skip)("keeps the cursor of 64 remembered blocks small: under 1.5 KB", async () => {
    if (backend.cursorBytes === undefined) return;
    const net = fresh();
    await backend.store.writeCursor(net, { ...cursorAfter(500), version: 1 }, 0, NOW + 60_000);
    const bytes = await backend.cursorBytes(net);
    expect(bytes).toBeLessThan(1_500);
  });
});
