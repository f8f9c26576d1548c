import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../../../functions/adapters/store/state-store.ts";
import {
  DynamoSubscriptionStore,
  RECOUNT_MS,
} from "../../../../functions/adapters/subscriptions/subscription-store.ts";
import type { SubscriptionStore } from "../../../../functions/core/ports.ts";
import type {
  ConnectionRecord,
  SubscriptionBounds,
  SubscriptionRecord,
} from "../../../../functions/core/subscriptions/subscription-records.ts";
import {
  isJavaAvailable,
  type LocalDynamoDb,
  startDynalite,
  startDynamoDbLocal,
} from "../../../../local/dynamodb.ts";
import { startLossyRelay } from "../../../support/lossy-relay.ts";
import { MemorySubscriptionStore } from "../../../support/memory-subscription-store.ts";

/**
 * The subscription store's contract (docs/behaviour.md "Subscriptions over WebSocket"), run
 * against the DynamoDB adapter on the real DynamoDB API (dynalite; DynamoDB Local where Java
 * is present) and the in-memory store the socket's and follower's unit tests use, so the two
 * cannot drift apart: connections bounded per key, subscriptions per connection, key and
 * network, removals only by their owner, a disconnect taking its subscriptions with it,
 * expired records never read and their bounds freed, moves conditional on `nextBlock`.
 */

const START = 1_800_000_000_000;
const HOUR = 3_600_000;

interface Backend {
  readonly store: SubscriptionStore;
  /** Every DynamoDB command the store sent, by name (DynamoDB only). */
  readonly commands?: string[];
  /** Writes a counter as a removal that died half-way would leave it (DynamoDB only). */
  readonly setCounter?: (
    network: string,
    sk: string,
    n: number,
    countedAt: number,
  ) => Promise<void>;
  /** The next request whose body holds `text` is made, and its answer lost (DynamoDB only). */
  readonly loseAnswer?: (text: string) => void;
  close(): Promise<void>;
}

let now = START;
const clock = () => now;

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  const relay = await startLossyRelay(dynamo.endpoint);
  const client = createDynamoClient({ endpoint: relay.url });
  const commands: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      commands.push(String(context.commandName).replace(/Command$/, ""));
      return next(args);
    },
    { step: "initialize" },
  );
  return {
    commands,
    store: new DynamoSubscriptionStore({ client, tableName: dynamo.tableName, clock }),
    setCounter: async (network, sk, n, countedAt) => {
      await client.send(
        new PutItemCommand({
          TableName: dynamo.tableName,
          Item: {
            pk: { S: `WSSUB#${network}` },
            sk: { S: sk },
            n: { N: String(n) },
            counted_at: { N: String(countedAt) },
          },
        }),
      );
    },
    loseAnswer: (text) => relay.lose((body) => body.includes(text)),
    close: async () => {
      client.destroy();
      await relay.close();
      await dynamo.close();
    },
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  [
    "memory",
    async () => ({ store: new MemorySubscriptionStore(clock), close: async () => {} }),
    false,
  ],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "subs" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startDynamoDbLocal({ tableName: "subs" })),
    !isJavaAvailable(),
  ],
];

const WIDE: SubscriptionBounds = { perConnection: 32, perKey: 1000, perNetwork: 10_000 };

describe.each(backends)("the subscription store contract on %s", (_name, start, skip) => {
  let backend: Backend;
  let store: SubscriptionStore;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}-${++counter}`;

  beforeAll(async () => {
    if (skip) return;
    backend = await start();
    store = backend.store;
  }, 120_000);
  afterAll(async () => {
    await backend?.close();
  });

  const connection = (
    caller: string,
    overrides: Partial<ConnectionRecord> = {},
  ): ConnectionRecord => ({
    id: fresh("conn"),
    caller,
    connectedAt: now,
    expiresAt: now + 2 * HOUR,
    ...overrides,
  });
  const subscription = (
    conn: ConnectionRecord,
    overrides: Partial<SubscriptionRecord> = {},
  ): SubscriptionRecord => ({
    id: `0x${(++counter).toString(16).padStart(32, "0")}`,
    connection: conn.id,
    caller: conn.caller,
    kind: "newHeads",
    filter: null,
    nextBlock: 101,
    firstBlock: 101,
    live: false,
    expiresAt: now + 2 * HOUR,
    ...overrides,
  });
  const connected = async (network: string, caller: string) => {
    const conn = connection(caller);
    expect(await store.connect(network, conn, 100)).toBe("ok");
    return conn;
  };

  it.skipIf(skip)("a connection is read back until it expires, and not after", async () => {
    const net = fresh("net");
    const conn = connection("alice", { expiresAt: now + 1000, keySha256: "ab".repeat(32) });
    expect(await store.connect(net, conn, 10)).toBe("ok");
    expect(await store.connection(net, conn.id)).toEqual(conn);
    const keyless = connection("");
    await store.connect(net, keyless, 10);
    expect(await store.connection(net, keyless.id)).toEqual(keyless);
    expect(await store.connection(net, "nobody")).toBeNull();
    expect(await store.connection(fresh("net"), conn.id)).toBeNull();
    now += 1000;
    expect(await store.connection(net, conn.id)).toBeNull();
  });

  it.skipIf(skip)(
    "a key holds at most its bound of live connections; a disconnect or an expiry frees one; without a key there is no bound",
    async () => {
      const net = fresh("net");
      const first = connection("alice", { expiresAt: now + 5000 });
      expect(await store.connect(net, first, 2)).toBe("ok");
      const second = connection("alice");
      expect(await store.connect(net, second, 2)).toBe("ok");
      expect(await store.connect(net, connection("alice"), 2)).toBe("over_key");
      expect(await store.connect(net, connection("bob"), 2)).toBe("ok");
      expect(await store.connect(fresh("net"), connection("alice"), 2)).toBe("ok");
      await store.disconnect(net, second.id);
      const third = connection("alice");
      expect(await store.connect(net, third, 2)).toBe("ok");
      expect(await store.connect(net, connection("alice"), 2)).toBe("over_key");
      // The first never said goodbye: once it expires, its slot is free again.
      now += 5000;
      expect(await store.connect(net, connection("alice"), 2)).toBe("ok");
      for (let index = 0; index < 5; index++) {
        expect(await store.connect(net, connection(""), 1)).toBe("ok");
      }
    },
  );

  it.skipIf(skip)(
    "of concurrent connects of one key beyond its bound, exactly the bound get in",
    async () => {
      const net = fresh("net");
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, () => store.connect(net, connection("alice"), 3)),
      );
      expect(outcomes.filter((outcome) => outcome === "ok")).toHaveLength(3);
    },
  );

  it.skipIf(skip)(
    "a subscription is listed with what it was given (its key's hash too), and moves on only from the block it is at",
    async () => {
      const net = fresh("net");
      const conn = await connected(net, "alice");
      const logs = subscription(conn, {
        kind: "logs",
        keySha256: "ef".repeat(32),
        filter: { address: [`0x${"ab".repeat(20)}`], topics: [null, [`0x${"cd".repeat(32)}`]] },
      });
      const heads = subscription(conn);
      expect(await store.subscribe(net, logs, WIDE)).toBe("ok");
      expect(await store.subscribe(net, heads, WIDE)).toBe("ok");
      const listed = await store.list(net);
      expect([...listed].sort((a, b) => a.id.localeCompare(b.id))).toEqual(
        [logs, heads].sort((a, b) => a.id.localeCompare(b.id)),
      );
      expect(await store.advance(net, heads.id, 100, 102)).toBe(false);
      expect(await store.advance(net, heads.id, 101, 102)).toBe(true);
      expect(await store.advance(net, heads.id, 101, 103)).toBe(false);
      expect((await store.list(net)).find((record) => record.id === heads.id)?.nextBlock).toBe(102);
      expect(await store.advance(net, `0x${"0".repeat(32)}`, 1, 2)).toBe(false);
    },
  );

  it.skipIf(skip)(
    "a subscription made live keeps its first block and is moved no more (the follower's cursor takes it)",
    async () => {
      const net = fresh("net");
      const conn = await connected(net, "");
      const heads = subscription(conn);
      expect(await store.subscribe(net, heads, WIDE)).toBe("ok");
      expect(await store.advance(net, heads.id, 101, 105, true)).toBe(true);
      const listed = (await store.list(net)).find((record) => record.id === heads.id);
      expect(listed).toMatchObject({ nextBlock: 105, firstBlock: 101, live: true });
      expect(await store.advance(net, heads.id, 105, 106)).toBe(false);
      expect(await store.advance(net, heads.id, 105, 106, true)).toBe(false);
    },
  );

  it.skipIf(skip)(
    "a move found made as asked is true: the same move again (a retry), not another",
    async () => {
      const net = fresh("net");
      const heads = subscription(await connected(net, ""));
      expect(await store.subscribe(net, heads, WIDE)).toBe("ok");
      expect(await store.advance(net, heads.id, 101, 101, true)).toBe(true);
      expect(await store.advance(net, heads.id, 101, 101, true)).toBe(true);
      expect(await store.advance(net, heads.id, 101, 101)).toBe(false);
      expect(await store.advance(net, heads.id, 101, 102, true)).toBe(false);
    },
  );

  it.skipIf(skip || _name === "memory")(
    "regression: a move whose answer was lost was sent again by the SDK and refused by its own first attempt, so the follower took a subscription it had made live for one it had not (a block missed); now it is found made",
    async () => {
      const net = fresh("net");
      const heads = subscription(await connected(net, ""));
      expect(await store.subscribe(net, heads, WIDE)).toBe("ok");
      backend.loseAnswer?.(heads.id);
      expect(await store.advance(net, heads.id, 101, 101, true)).toBe(true);
      expect((await store.list(net)).find((record) => record.id === heads.id)?.live).toBe(true);
    },
  );

  it.skipIf(skip)("of concurrent moves from one block exactly one lands", async () => {
    const net = fresh("net");
    const sub = subscription(await connected(net, "alice"));
    await store.subscribe(net, sub, WIDE);
    const moved = await Promise.all(
      Array.from({ length: 6 }, (_, index) => store.advance(net, sub.id, 101, 102 + index)),
    );
    expect(moved.filter(Boolean)).toHaveLength(1);
  });

  it.skipIf(skip)("a subscription needs a live connection", async () => {
    const net = fresh("net");
    expect(await store.subscribe(net, subscription(connection("alice")), WIDE)).toBe(
      "no_connection",
    );
    const conn = connection("alice", { expiresAt: now + 10 });
    await store.connect(net, conn, 10);
    now += 10;
    expect(await store.subscribe(net, subscription(conn), WIDE)).toBe("no_connection");
    expect(await store.list(net)).toEqual([]);
  });

  it.skipIf(skip)(
    "subscriptions are bounded per connection, per key over its connections, and per network over its keys",
    async () => {
      const net = fresh("net");
      const bounds = { perConnection: 2, perKey: 3, perNetwork: 4 };
      const a1 = await connected(net, "alice");
      const a2 = await connected(net, "alice");
      const b1 = await connected(net, "bob");
      expect(await store.subscribe(net, subscription(a1), bounds)).toBe("ok");
      expect(await store.subscribe(net, subscription(a1), bounds)).toBe("ok");
      expect(await store.subscribe(net, subscription(a1), bounds)).toBe("over_connection");
      expect(await store.subscribe(net, subscription(a2), bounds)).toBe("ok");
      expect(await store.subscribe(net, subscription(a2), bounds)).toBe("over_key");
      expect(await store.subscribe(net, subscription(b1), bounds)).toBe("ok");
      expect(await store.subscribe(net, subscription(b1), bounds)).toBe("over_network");
      // What was refused holds nothing: the network still has exactly its 4.
      expect(await store.list(net)).toHaveLength(4);
    },
  );

  it.skipIf(skip)(
    "only the connection that holds a subscription removes it, and a removal frees its bounds",
    async () => {
      const net = fresh("net");
      const bounds = { perConnection: 1, perKey: 1, perNetwork: 1 };
      const mine = await connected(net, "alice");
      const other = await connected(net, "alice");
      const sub = subscription(mine);
      expect(await store.subscribe(net, sub, bounds)).toBe("ok");
      expect(await store.unsubscribe(net, other.id, sub.id)).toBe(false);
      expect(await store.unsubscribe(net, mine.id, `0x${"f".repeat(32)}`)).toBe(false);
      expect(await store.unsubscribe(net, mine.id, sub.id)).toBe(true);
      expect(await store.unsubscribe(net, mine.id, sub.id)).toBe(false);
      expect(await store.list(net)).toEqual([]);
      expect(await store.subscribe(net, subscription(other), bounds)).toBe("ok");
    },
  );

  it.skipIf(skip)(
    "a disconnect takes its subscriptions with it and frees the key's and network's bounds",
    async () => {
      const net = fresh("net");
      const bounds = { perConnection: 5, perKey: 3, perNetwork: 3 };
      const gone = await connected(net, "alice");
      const stays = await connected(net, "alice");
      for (let index = 0; index < 3; index++) {
        expect(await store.subscribe(net, subscription(gone), bounds)).toBe("ok");
      }
      expect(await store.subscribe(net, subscription(stays), bounds)).toBe("over_key");
      await store.disconnect(net, gone.id);
      await store.disconnect(net, gone.id);
      expect(await store.connection(net, gone.id)).toBeNull();
      expect(await store.list(net)).toEqual([]);
      for (let index = 0; index < 3; index++) {
        expect(await store.subscribe(net, subscription(stays), bounds)).toBe("ok");
      }
    },
  );

  it.skipIf(skip)(
    "an expired subscription is not listed, and once listed past, its bounds are free",
    async () => {
      const net = fresh("net");
      const bounds = { perConnection: 5, perKey: 5, perNetwork: 1 };
      const conn = connection("alice", { expiresAt: now + 10 * HOUR });
      await store.connect(net, conn, 10);
      expect(await store.subscribe(net, subscription(conn, { expiresAt: now + 100 }), bounds)).toBe(
        "ok",
      );
      now += 100;
      expect(await store.list(net)).toEqual([]);
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("ok");
    },
  );

  it.skipIf(skip)("names the networks that hold subscriptions, of those asked about", async () => {
    const [busy, idle, other] = [fresh("net"), fresh("net"), fresh("net")];
    await store.subscribe(busy, subscription(await connected(busy, "")), WIDE);
    await store.subscribe(other, subscription(await connected(other, "alice")), WIDE);
    expect(await store.networksWithSubscribers([busy, idle])).toEqual([busy]);
    expect(await store.networksWithSubscribers([])).toEqual([]);
  });

  it.skipIf(skip || _name === "memory")(
    "regression: a subscribe past its connection's bound wrote an item, then read and deleted it; now it costs the one write that fails and a read",
    async () => {
      const net = fresh("net");
      const conn = await connected(net, "alice");
      const bounds = { perConnection: 1, perKey: 10, perNetwork: 10 };
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("ok");
      const commands = backend.commands as string[];
      commands.length = 0;
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("over_connection");
      expect(commands).toEqual(["UpdateItem", "GetItem"]);
    },
  );

  it.skipIf(skip || _name === "memory")(
    "a counter left ahead of its items (a removal that died half-way) refuses until it is counted again, at most once a minute",
    async () => {
      const net = fresh("net");
      const conn = await connected(net, "alice");
      await backend.setCounter?.(net, "COUNT", 2, now);
      const bounds = { perConnection: 5, perKey: 5, perNetwork: 2 };
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("over_network");
      now += RECOUNT_MS;
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("ok");
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("ok");
      // Counted right now: the third is refused, and the recount that says so costs no more.
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("over_network");
      now += RECOUNT_MS;
      expect(await store.subscribe(net, subscription(conn), bounds)).toBe("over_network");
      expect(await store.list(net)).toHaveLength(2);
    },
  );
});
