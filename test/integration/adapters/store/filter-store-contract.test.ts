import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DynamoFilterStore,
  filterPartition,
} from "../../../../functions/adapters/store/filter-store.ts";
import { createDynamoClient } from "../../../../functions/adapters/store/state-store.ts";
import type { FilterStore, NewFilter } from "../../../../functions/core/ports.ts";
import { gatewayFilterId } from "../../../../functions/core/request/filters/filter-id.ts";
import { isJavaAvailable, type LocalDynamoDb, startDynalite } from "../../../../local/dynamodb.ts";
import { type DynamoFront, startDynamoFront } from "../../../support/dynamo-front.ts";
import { tableKeys } from "../../../support/gateway-table.ts";
import { MemoryFilterStore } from "../../../support/memory-filter-store.ts";
import { startSharedDynamoDbLocal } from "../../../support/shared-dynamodb-local.ts";

/**
 * The filter store's contract (docs/behaviour.md §14), run against the DynamoDB adapter on the
 * real DynamoDB API (dynalite; DynamoDB Local where Java is present) and against the in-memory
 * store the pipeline's unit tests use: filters read back as written, only by their owner and
 * network; at most `max` live per owner; expired and uninstalled filters gone; and a move
 * conditional on the version read, so of two polls at once exactly one moves the filter.
 */

const NOW = Date.UTC(2026, 0, 1);
const LATER = NOW + 300_000;

interface Backend {
  readonly store: FilterStore;
  /** Items the backend holds for an owner, when it can tell (DynamoDB). */
  readonly items?: (network: string, owner: string) => Promise<number>;
  /** Capacity units consumed so far, as DynamoDB bills them (DynamoDB only). */
  readonly units?: () => { readonly read: number; readonly write: number };
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  const table = {
    client: createDynamoClient({ endpoint: dynamo.endpoint }),
    tableName: dynamo.tableName,
  };
  // Every command asks DynamoDB what it consumed, and the answers are added up.
  const units = { read: 0, write: 0 };
  table.client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } })
        .ConsumedCapacity?.CapacityUnits;
      units[context.commandName === "UpdateItemCommand" ? "write" : "read"] += consumed ?? 0;
      return result;
    },
    { step: "initialize" },
  );
  return {
    units: () => ({ ...units }),
    store: new DynamoFilterStore(table),
    items: async (network, owner) =>
      (await tableKeys(table)).filter((key) =>
        key.startsWith(`${filterPartition(network, owner)} `),
      ).length,
    close: () => dynamo.close(),
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  ["memory", async () => ({ store: new MemoryFilterStore(), close: async () => {} }), false],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "filters" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startSharedDynamoDbLocal({ tableName: "filters" })),
    !isJavaAvailable(),
  ],
];

const LOG_FILTER: NewFilter = {
  kind: "logs",
  logs: {
    criteria: {
      address: ["0x5fbdb2315678afecb367f032d93f642f64180aa3"],
      topics: [null, ["0x".padEnd(66, "a"), null]],
    },
    to: { kind: "tag", tag: "latest" },
  },
  first: 17,
  cursor: 17,
  seen: [],
  span: null,
  expiresAt: LATER,
  chainResetAt: 0,
};

const BLOCK_FILTER: NewFilter = {
  kind: "blocks",
  logs: null,
  first: 5,
  cursor: 5,
  seen: [],
  span: null,
  expiresAt: LATER,
  chainResetAt: 0,
};

const SEEN = [
  { number: 20, hash: `0x${"1".repeat(64)}`, logs: 2 },
  { number: 21, hash: `0x${"2".repeat(64)}`, logs: 0 },
];

describe.each(backends)("the filter store contract on %s", (_name, start, skip) => {
  let backend: Backend;
  let store: FilterStore;
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

  it.skipIf(skip)("a log filter and a block filter read back as they were installed", async () => {
    const net = fresh();
    const logs = await store.install(net, "key-a", LOG_FILTER, 10, NOW);
    const blocks = await store.install(net, "key-a", BLOCK_FILTER, 10, NOW);
    expect(gatewayFilterId(logs)).toBe(logs);
    expect(gatewayFilterId(blocks)).toBe(blocks);
    expect(await store.read(net, "key-a", logs as string, NOW)).toEqual({
      ...LOG_FILTER,
      id: logs,
      version: 0,
    });
    expect(await store.read(net, "key-a", blocks as string, NOW)).toEqual({
      ...BLOCK_FILTER,
      id: blocks,
      version: 0,
    });
  });

  it.skipIf(skip)(
    "a filter is read only by its owner on its network, and not by an id one digit off",
    async () => {
      const net = fresh();
      const id = (await store.install(net, "key-a", LOG_FILTER, 10, NOW)) as string;
      expect(await store.read(net, "key-b", id, NOW)).toBeNull();
      expect(await store.read(fresh(), "key-a", id, NOW)).toBeNull();
      const last = id.at(-1) === "0" ? "1" : "0";
      expect(await store.read(net, "key-a", `${id.slice(0, -1)}${last}`, NOW)).toBeNull();
      expect(
        await store.read(net, "key-a", id.toUpperCase().replace("0X", "0x"), NOW),
      ).not.toBeNull();
    },
  );

  it.skipIf(skip)("an owner holds at most max live filters per network", async () => {
    const net = fresh();
    const ids = await Promise.all(
      [1, 2, 3].map(() => store.install(net, "key-a", LOG_FILTER, 3, NOW)),
    );
    expect(new Set(ids).size).toBe(3);
    expect(ids.every((id) => id !== null)).toBe(true);
    expect(await store.install(net, "key-a", LOG_FILTER, 3, NOW)).toBeNull();
    // Other owners and networks have bounds of their own.
    expect(await store.install(net, "key-b", LOG_FILTER, 3, NOW)).not.toBeNull();
    expect(await store.install(fresh(), "key-a", LOG_FILTER, 3, NOW)).not.toBeNull();
    // An uninstalled filter frees its place; so does an expired one.
    expect(await store.uninstall(net, "key-a", ids[0] as string, NOW)).toBe(true);
    expect(await store.install(net, "key-a", LOG_FILTER, 3, NOW)).not.toBeNull();
    expect(await store.install(net, "key-a", LOG_FILTER, 3, LATER)).not.toBeNull();
  });

  it.skipIf(skip)(
    "installs racing for the last places fill them exactly, and the partition never holds more items than the bound",
    async () => {
      const net = fresh();
      const ids = await Promise.all(
        Array.from({ length: 6 }, () => store.install(net, "key-a", BLOCK_FILTER, 2, NOW)),
      );
      expect(ids.filter((id) => id !== null)).toHaveLength(2);
      // Filters come and go: the slots are reused, never added to.
      for (let round = 1; round <= 5; round++) {
        const at = LATER * round;
        await store.install(net, "key-a", { ...BLOCK_FILTER, expiresAt: at + 300_000 }, 2, at);
      }
      if (backend.items) expect(await backend.items(net, "key-a")).toBe(2);
    },
  );

  it.skipIf(skip)("an expired filter is not read, not moved and not uninstalled", async () => {
    const net = fresh();
    const id = (await store.install(net, "key-a", LOG_FILTER, 10, NOW)) as string;
    expect(await store.read(net, "key-a", id, LATER)).toBeNull();
    expect(await store.uninstall(net, "key-a", id, LATER)).toBe(false);
  });

  it.skipIf(skip)("uninstall is true once, then the filter is gone", async () => {
    const net = fresh();
    const id = (await store.install(net, "key-a", LOG_FILTER, 10, NOW)) as string;
    expect(await store.uninstall(net, "key-b", id, NOW)).toBe(false);
    expect(await store.uninstall(net, "key-a", id, NOW)).toBe(true);
    expect(await store.uninstall(net, "key-a", id, NOW)).toBe(false);
    expect(await store.read(net, "key-a", id, NOW)).toBeNull();
  });

  it.skipIf(skip)(
    "a move lands at the version read and bumps it; a move at a stale version is refused",
    async () => {
      const net = fresh();
      const id = (await store.install(net, "key-a", LOG_FILTER, 10, NOW)) as string;
      const next = { cursor: 22, seen: SEEN, span: 500, expiresAt: LATER + 1000 };
      expect(await store.advance(net, "key-a", id, 0, next)).toBe(true);
      expect(await store.read(net, "key-a", id, NOW)).toEqual({
        ...LOG_FILTER,
        ...next,
        id,
        version: 1,
      });
      expect(await store.advance(net, "key-a", id, 0, { ...next, cursor: 30 })).toBe(false);
      expect(await store.advance(net, "key-a", id, 1, { ...next, span: null })).toBe(true);
      expect((await store.read(net, "key-a", id, NOW))?.span).toBeNull();
    },
  );

  it.skipIf(skip)("of polls moving one filter at once, exactly one moves it", async () => {
    const net = fresh();
    const id = (await store.install(net, "key-a", BLOCK_FILTER, 10, NOW)) as string;
    const moved = await Promise.all(
      Array.from({ length: 8 }, (_, poll) =>
        store.advance(net, "key-a", id, 0, {
          cursor: 6 + poll,
          seen: [],
          span: null,
          expiresAt: LATER,
        }),
      ),
    );
    expect(moved.filter(Boolean)).toHaveLength(1);
    const winner = moved.indexOf(true);
    expect((await store.read(net, "key-a", id, NOW))?.cursor).toBe(6 + winner);
  });

  it.skipIf(skip)(
    "regression: a filter's 64 KiB of criteria were in the item every poll rewrites: a poll, an extension or an uninstall cost 62 write units, and an install's Query read every filter of the key whole; now they cost the small slot item, and the criteria are read, never rewritten",
    async () => {
      if (!backend.units) return;
      const net = fresh();
      const address = Array.from(
        { length: 1400 },
        (_, n) => `0x${n.toString(16).padStart(40, "0")}`,
      );
      const big: NewFilter = {
        ...LOG_FILTER,
        logs: { criteria: { address, topics: [] }, to: { kind: "tag", tag: "latest" } },
      };
      const ids: string[] = [];
      for (let n = 0; n < 10; n++)
        ids.push((await store.install(net, "key-a", big, 10, NOW)) as string);
      const spent = async (work: () => Promise<unknown>) => {
        const before = backend.units?.() ?? { read: 0, write: 0 };
        await work();
        const after = backend.units?.() ?? { read: 0, write: 0 };
        return { read: after.read - before.read, write: after.write - before.write };
      };
      // Ten filters of 62 KB each: the Query read 155 units, and the install wrote 62.
      const install = await spent(() => store.install(net, "key-a", BLOCK_FILTER, 11, NOW));
      expect(install.read).toBeLessThanOrEqual(2);
      expect(install.write).toBeLessThanOrEqual(2);
      const id = ids[0] as string;
      expect((await store.read(net, "key-a", id, NOW))?.logs).toEqual(big.logs);
      const next = { cursor: 22, seen: SEEN, span: null, expiresAt: LATER + 1000 };
      expect(
        (await spent(() => store.advance(net, "key-a", id, 0, next))).write,
      ).toBeLessThanOrEqual(2);
      expect((await spent(() => store.uninstall(net, "key-a", id, NOW))).write).toBeLessThanOrEqual(
        2,
      );
      expect(await store.read(net, "key-a", id, NOW)).toBeNull();
      // Its slot, the only free one of eleven, taken again: the new filter's criteria, not the old.
      const again = (await store.install(net, "key-a", LOG_FILTER, 11, NOW)) as string;
      expect(again.slice(0, 6)).toBe(id.slice(0, 6));
      expect((await store.read(net, "key-a", again, NOW))?.logs).toEqual(LOG_FILTER.logs);
      for (const other of ids.slice(1)) {
        expect((await store.read(net, "key-a", other, NOW))?.logs).toEqual(big.logs);
      }
    },
  );

  it.skipIf(skip)(
    "a filter whose place another took after it expired is gone for its old id",
    async () => {
      const net = fresh();
      const old = (await store.install(net, "key-a", LOG_FILTER, 1, NOW)) as string;
      const taken = (await store.install(net, "key-a", BLOCK_FILTER, 1, LATER)) as string;
      expect(taken).not.toBe(old);
      expect(await store.read(net, "key-a", old, NOW)).toBeNull();
      expect(await store.advance(net, "key-a", old, 0, { ...BLOCK_FILTER })).toBe(false);
      expect((await store.read(net, "key-a", taken, NOW))?.kind).toBe("blocks");
    },
  );
});

describe("the DynamoDB filter store when a write lands and its answer is lost (the SDK sends it again)", () => {
  let dynamo: LocalDynamoDb;
  let front: DynamoFront;
  let store: DynamoFilterStore;

  beforeAll(async () => {
    dynamo = await startDynalite({ tableName: "filters" });
    front = await startDynamoFront(dynamo.endpoint);
    store = new DynamoFilterStore({
      client: createDynamoClient({ endpoint: front.endpoint }),
      tableName: dynamo.tableName,
    });
  }, 60_000);

  afterAll(async () => {
    await front?.close();
    await dynamo?.close();
  });

  it("regression: a poll's move that landed, sent again, failed its condition (its own version bump) and was taken for another poll's: the poll reported nothing and its logs were never reported; now the move is known for its own", async () => {
    const id = (await store.install("net", "key-a", LOG_FILTER, 10, NOW)) as string;
    front.loseAnswers("UpdateItem");
    const next = { cursor: 22, seen: SEEN, span: null, expiresAt: LATER };
    expect(await store.advance("net", "key-a", id, 0, next)).toBe(true);
    expect((await store.read("net", "key-a", id, NOW))?.cursor).toBe(22);
  });

  it("regression: an install that landed, sent again, found its slot taken (by itself) and took another: one filter held two slots; now it holds one", async () => {
    front.loseAnswers("UpdateItem");
    const id = await store.install("net", "key-c", LOG_FILTER, 10, NOW);
    expect(id).not.toBeNull();
    expect(await store.read("net", "key-c", id as string, NOW)).not.toBeNull();
    const slots = (
      await tableKeys({
        client: createDynamoClient({ endpoint: dynamo.endpoint }),
        tableName: dynamo.tableName,
      })
    ).filter((key) => key.startsWith(`${filterPartition("net", "key-c")} `));
    // The slot and its criteria item (docs/behaviour.md §14.9): one filter, one slot.
    expect(slots.filter((key) => !key.includes(" logs#"))).toHaveLength(1);
  });

  it("another poll's move at the same version is still another's, even with the same blocks", async () => {
    const id = (await store.install("net", "key-b", LOG_FILTER, 10, NOW)) as string;
    const next = { cursor: 22, seen: SEEN, span: null, expiresAt: LATER };
    const other = new DynamoFilterStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
    });
    expect(await other.advance("net", "key-b", id, 0, next)).toBe(true);
    expect(await store.advance("net", "key-b", id, 0, next)).toBe(false);
  });
});
