import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoAnswerStore } from "../../../../functions/adapters/store/answer-store.ts";
import { createDynamoClient } from "../../../../functions/adapters/store/state-store.ts";
import type { SharedAnswerStore } from "../../../../functions/core/ports.ts";
import { isJavaAvailable, type LocalDynamoDb, startDynalite } from "../../../../local/dynamodb.ts";
import { MemoryAnswerStore } from "../../../support/memory-answer-store.ts";
import { startSharedDynamoDbLocal } from "../../../support/shared-dynamodb-local.ts";

/**
 * The shared answer store's contract, run against the DynamoDB adapter on the real DynamoDB
 * API (dynalite; DynamoDB Local where Java is present) and against the in-memory store the
 * pipeline's unit tests use: answers read back byte for byte, by network and key, one or many
 * at once; expired answers not read; answers over the item cap (`cache_shared_item_bytes`) or
 * too large for an item not kept.
 */

const NOW = Date.now();
const LATER = NOW + 3_600_000;
/** The default `cache_shared_item_bytes`. */
const CAP = 65_536;
/** No cap of the config's: only what an item holds. */
const ANY_SIZE = Number.POSITIVE_INFINITY;

interface Backend {
  readonly store: SharedAnswerStore;
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  return {
    store: new DynamoAnswerStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
      clock: () => NOW,
      // Emulators on a busy machine are slower than DynamoDB: the bound is not under test.
      readTimeoutMs: 5000,
    }),
    close: () => dynamo.close(),
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  [
    "memory",
    async () => ({ store: new MemoryAnswerStore(() => NOW), close: async () => {} }),
    false,
  ],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "answers" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startSharedDynamoDbLocal({ tableName: "answers" })),
    !isJavaAvailable(),
  ],
];

/** A block answer as a node writes it, with a character JSON escapes and one it does not. */
const BLOCK =
  '{"jsonrpc":"2.0","id":1,"result":{"number":"0x1","hash":"0xab","extraData":"\\u00e9 é","transactions":[]}}\n';

describe.each(backends)("the shared answer store contract on %s", (_name, start, skip) => {
  let backend: Backend;
  let store: SharedAnswerStore;
  let network = 0;
  const fresh = () => `net-${++network}`;

  beforeAll(async () => {
    if (skip) return;
    backend = await start();
    store = backend.store;
  }, 120_000);
  afterAll(async () => {
    await backend?.close();
  });

  it.skipIf(skip)("an answer is read back byte for byte, by its network and key", async () => {
    const net = fresh();
    expect(
      await store.write(net, '1\neth_getBlockByNumber\n["0x1",false]', BLOCK, LATER, CAP),
    ).toBe(true);
    const found = await store.read(net, ['1\neth_getBlockByNumber\n["0x1",false]']);
    expect(found.get('1\neth_getBlockByNumber\n["0x1",false]')).toBe(BLOCK);
    expect((await store.read(fresh(), ['1\neth_getBlockByNumber\n["0x1",false]'])).size).toBe(0);
  });

  it.skipIf(skip)("many keys at once: those stored are found, the others absent", async () => {
    const net = fresh();
    const keys = Array.from({ length: 130 }, (_, i) => `key-${i}`);
    for (const key of keys.filter((_, i) => i % 3 === 0)) {
      await store.write(net, key, `{"result":"${key}"}`, LATER, CAP);
    }
    const found = await store.read(net, keys);
    expect([...found.keys()].sort()).toEqual(keys.filter((_, i) => i % 3 === 0).sort());
    expect(found.get("key-99")).toBe('{"result":"key-99"}');
  });

  it.skipIf(skip)("an expired answer is not read, even before the TTL deletes it", async () => {
    const net = fresh();
    await store.write(net, "old", "{}", NOW - 1000, CAP);
    expect((await store.read(net, ["old"])).size).toBe(0);
  });

  it.skipIf(skip)("a second write of a key replaces the first", async () => {
    const net = fresh();
    await store.write(net, "k", '{"result":1}', LATER, CAP);
    await store.write(net, "k", '{"result":2}', LATER, CAP);
    expect((await store.read(net, ["k"])).get("k")).toBe('{"result":2}');
  });

  it.skipIf(skip)(
    "a large answer that compresses under the item limit is kept; one that does not is refused",
    async () => {
      const net = fresh();
      const compressible = `{"result":"0x${"00".repeat(1_000_000)}"}`;
      expect(await store.write(net, "big", compressible, LATER, ANY_SIZE)).toBe(true);
      expect((await store.read(net, ["big"])).get("big")).toBe(compressible);
      const random = `{"result":"0x${randomBytes(500_000).toString("hex")}"}`;
      expect(await store.write(net, "random", random, LATER, ANY_SIZE)).toBe(false);
      expect((await store.read(net, ["random"])).size).toBe(0);
    },
  );

  it.skipIf(skip)(
    "an answer over the item cap compressed is refused; one under it compressed is kept, however long",
    async () => {
      const net = fresh();
      // 140,000 incompressible bytes: ~140 KB gzipped, over the 64 KB cap, under the item limit.
      const random = `{"result":"0x${randomBytes(70_000).toString("hex")}"}`;
      expect(await store.write(net, "random", random, LATER, CAP)).toBe(false);
      expect((await store.read(net, ["random"])).size).toBe(0);
      // 200,000 characters that compress to a few hundred bytes.
      const zeros = `{"result":"0x${"00".repeat(100_000)}"}`;
      expect(await store.write(net, "zeros", zeros, LATER, CAP)).toBe(true);
      expect((await store.read(net, ["zeros"])).get("zeros")).toBe(zeros);
    },
  );
});
