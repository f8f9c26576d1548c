import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../../functions/adapters/store/monitor-store.ts";
import {
  createDynamoClient,
  DynamoStateStore,
} from "../../../../functions/adapters/store/state-store.ts";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import { HEALTHY, type ProviderHealth } from "../../../../functions/core/health/health.ts";
import type { StateStore } from "../../../../functions/core/ports.ts";
import { isJavaAvailable, type LocalDynamoDb, startDynalite } from "../../../../local/dynamodb.ts";
import { MemoryStateStore } from "../../../support/memory-state-store.ts";
import { startSharedDynamoDbLocal } from "../../../support/shared-dynamodb-local.ts";

/**
 * The state store's contract, run against the DynamoDB adapter on the real DynamoDB API
 * (dynalite; DynamoDB Local where Java is present) and against the in-memory store the
 * pipeline's unit tests use, so the two cannot drift apart: conditional health writes on
 * `version`, capability blacklists that only move later, expired blacklists not read, the
 * chain position read alone and its served head published forward only, a delay apart, and
 * only beside the reset of the chain position the publisher read.
 */

const NOW = Date.now();

interface Backend {
  readonly store: StateStore;
  /** Writes the chain position as the monitor does (`reset`: with the served head it took). */
  writeHead(network: string, head: ChainHead, reset?: boolean): Promise<void>;
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  const client = createDynamoClient({ endpoint: dynamo.endpoint });
  const monitorStore = new DynamoMonitorStore({ client, tableName: dynamo.tableName });
  return {
    store: new DynamoStateStore({ client, tableName: dynamo.tableName, clock: () => NOW }),
    writeHead: (network, head, reset) => monitorStore.writeHead(network, head, reset),
    close: () => dynamo.close(),
  };
}

function memoryBackend(): Backend {
  const store = new MemoryStateStore(() => NOW);
  return {
    store,
    writeHead: async (network, head) => store.setHead(network, head),
    close: async () => {},
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  ["memory", async () => memoryBackend(), false],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "contract" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startSharedDynamoDbLocal({ tableName: "contract" })),
    !isJavaAvailable(),
  ],
];

const blacklisted = (version: number, strikes = 1): ProviderHealth => ({
  ...HEALTHY,
  strikes,
  reason: "timeout",
  blacklistedUntil: NOW + 180_000,
  probeGated: true,
  version,
});

describe.each(backends)("the state store contract on %s", (_name, start, skip) => {
  let backend: Backend;
  let store: StateStore;
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

  it.skipIf(skip)("a first write at version 0 lands and is read back", async () => {
    const net = fresh();
    expect(await store.writeHealth(net, "p", 0, blacklisted(1))).toEqual({ written: true });
    const state = await store.readNetwork(net);
    expect(state.providers.get("p")).toEqual(blacklisted(1));
  });

  it.skipIf(skip)("a write at a stale version is refused with the stored item", async () => {
    const net = fresh();
    await store.writeHealth(net, "p", 0, blacklisted(1));
    await store.writeHealth(net, "p", 1, blacklisted(2, 2));
    const outcome = await store.writeHealth(net, "p", 1, blacklisted(2, 5));
    expect(outcome).toEqual({ written: false, current: blacklisted(2, 2) });
  });

  it.skipIf(skip)(
    "a read consensus's minority record is written with the health, read back, and kept by a later write without one",
    async () => {
      const net = fresh();
      const consensus = { count: 2, since: NOW - 5000, sitOutUntil: NOW + 60_000 };
      await store.writeHealth(net, "p", 0, { ...blacklisted(1), consensus });
      expect((await store.readNetwork(net)).providers.get("p")).toEqual({
        ...blacklisted(1),
        consensus,
      });
      // A probe's or a success's write knows nothing of consensus: the record stays.
      await store.writeHealth(net, "p", 1, { ...HEALTHY, version: 2 });
      const kept = (await store.readNetwork(net)).providers.get("p");
      expect(kept?.consensus).toEqual(consensus);
    },
  );

  it.skipIf(skip)("of concurrent writes at one version exactly one lands", async () => {
    const net = fresh();
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, strikes) =>
        store.writeHealth(net, "p", 0, blacklisted(1, strikes + 1)),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.written)).toHaveLength(1);
  });

  it.skipIf(skip)(
    "a capability blacklist only moves later, and expired ones are not read",
    async () => {
      const net = fresh();
      await store.blacklistCapability(net, "p", "trace_block", NOW + 60_000);
      await store.blacklistCapability(net, "p", "trace_block", NOW + 30_000);
      await store.blacklistCapability(net, "p", "debug_x", NOW - 1);
      const state = await store.readNetwork(net);
      expect([...(state.capabilities.get("p") ?? [])]).toEqual([["trace_block", NOW + 60_000]]);
    },
  );

  it.skipIf(skip)(
    "regression: a served head published before the monitor wrote any chain position was kept in DynamoDB (the in-memory store refused it), so one provider's number far ahead froze every container's eth_blockNumber there; now it is refused on both",
    async () => {
      const net = fresh();
      expect(await store.publishServed(net, 1_000_000, NOW, 0, 0)).toBe(false);
      expect((await store.readNetwork(net)).head).toBeNull();
    },
  );

  const position = (overrides: Partial<ChainHead> = {}): ChainHead => ({
    latest: { number: 100, hash: "0xaa" },
    safe: { number: 90, hash: "0xbb" },
    finalized: { number: 80, hash: "0xcc" },
    served: null,
    previousServed: null,
    updatedAt: NOW,
    reorgSeenAt: 0,
    finalityBrokenAt: 0,
    resetAt: 0,
    belowChecks: 0,
    ...overrides,
  });

  it.skipIf(skip)(
    "the chain position is read alone as written; its served head goes forward only, a delay apart, keeping the one before",
    async () => {
      const net = fresh();
      expect(await store.readHead(net)).toBeNull();
      await backend.writeHead(net, position());
      expect(await store.publishServed(net, 101, NOW, 500, 0)).toBe(true);
      expect(await store.publishServed(net, 102, NOW + 100, 500, 0)).toBe(false);
      expect(await store.publishServed(net, 100, NOW + 600, 500, 0)).toBe(false);
      expect(await store.publishServed(net, 103, NOW + 600, 500, 0)).toBe(true);
      const head = await store.readHead(net);
      expect(head).toMatchObject({
        latest: { number: 100, hash: "0xaa" },
        finalized: { number: 80, hash: "0xcc" },
        served: { block: 103, at: NOW + 600 },
        previousServed: { block: 101, at: NOW },
      });
      expect((await store.readNetwork(net)).head).toEqual(head);
    },
  );

  it.skipIf(skip)(
    "a publication made before a reset of the chain position is refused; one made after it lands",
    async () => {
      const net = fresh();
      await backend.writeHead(net, position());
      await store.publishServed(net, 400, NOW, 500, 0);
      // The chain restarted: the position and the served head reset to block 60.
      const reset = position({
        latest: { number: 60, hash: "0x60" },
        safe: null,
        finalized: null,
        served: { block: 60, at: 0 },
        updatedAt: NOW + 1,
        resetAt: NOW + 1,
      });
      await backend.writeHead(net, reset, true);
      expect(await store.publishServed(net, 401, NOW + 1_000, 500, 0)).toBe(false);
      expect(await store.publishServed(net, 61, NOW + 1_000, 500, NOW + 1)).toBe(true);
      expect(await store.readHead(net)).toMatchObject({
        latest: { number: 60 },
        safe: null,
        served: { block: 61, at: NOW + 1_000 },
        previousServed: { block: 60, at: 0 },
        resetAt: NOW + 1,
      });
    },
  );

  it.skipIf(skip)(
    "the served head never goes back: 100 published, then 90 later is refused and 100 kept (docs/behaviour.md §10)",
    async () => {
      const net = fresh();
      await backend.writeHead(net, position());
      expect(await store.publishServed(net, 100, NOW - 10_000, 0, 0)).toBe(true);
      expect(await store.publishServed(net, 90, NOW, 2_500, 0)).toBe(false);
      expect(await store.publishServed(net, 100, NOW, 2_500, 0)).toBe(false);
      expect(await store.readHead(net)).toMatchObject({
        served: { block: 100, at: NOW - 10_000 },
        previousServed: null,
      });
      // Higher and old enough: published, the one before kept beside it.
      expect(await store.publishServed(net, 101, NOW, 2_500, 0)).toBe(true);
      expect(await store.readHead(net)).toMatchObject({
        served: { block: 101, at: NOW },
        previousServed: { block: 100, at: NOW - 10_000 },
      });
    },
  );

  it.skipIf(skip)("a learned batch limit only shrinks until it expires", async () => {
    const net = fresh();
    await store.recordBatchLimit(net, "p", 10, NOW + 60_000);
    await store.recordBatchLimit(net, "p", 20, NOW + 90_000);
    await store.recordBatchLimit(net, "p", 5, NOW + 30_000);
    await store.recordBatchLimit(net, "q", 3, NOW - 1);
    const state = await store.readNetwork(net);
    expect([...state.batchLimits]).toEqual([["p", { value: 5, until: NOW + 30_000 }]]);
  });

  it.skipIf(skip)(
    "a learned log range only shrinks until it expires, apart from batch limits",
    async () => {
      const net = fresh();
      await store.recordLogsRange(net, "p", 10_000, NOW + 60_000);
      await store.recordLogsRange(net, "p", 50_000, NOW + 90_000);
      await store.recordLogsRange(net, "p", 2_000, NOW + 30_000);
      await store.recordLogsRange(net, "q", 500, NOW - 1);
      await store.recordBatchLimit(net, "p", 7, NOW + 60_000);
      const state = await store.readNetwork(net);
      expect([...state.logsRanges]).toEqual([["p", { value: 2_000, until: NOW + 30_000 }]]);
      expect([...state.batchLimits]).toEqual([["p", { value: 7, until: NOW + 60_000 }]]);
    },
  );

  const bound = (from: number, until = NOW + 60_000) => ({
    from,
    refusedAt: from - 1,
    at: NOW,
    until,
  });

  it.skipIf(skip)(
    "a learned history bound only tightens while in force, per provider and resource (§16.3)",
    async () => {
      const net = fresh();
      await store.recordHistoryBound(net, "p", "state", bound(100));
      await store.recordHistoryBound(net, "p", "state", bound(50)); // older news: kept out
      await store.recordHistoryBound(net, "p", "state", bound(300));
      await store.recordHistoryBound(net, "p", "logs", bound(7));
      await store.recordHistoryBound(net, "q", "state", bound(9, NOW - 1)); // expired: not read
      const state = await store.readNetwork(net);
      expect(Object.fromEntries(state.history.get("p")?.learned ?? [])).toEqual({
        state: bound(300),
        logs: bound(7),
      });
      expect(state.history.get("q")?.learned.size ?? 0).toBe(0);
      // An expired bound is replaced by any.
      await store.recordHistoryBound(net, "q", "state", bound(4));
      expect((await store.readNetwork(net)).history.get("q")?.learned.get("state")).toEqual(
        bound(4),
      );
    },
  );

  it.skipIf(skip)(
    "a learned history bound is forgotten only when it leaves out the block",
    async () => {
      const net = fresh();
      await store.recordHistoryBound(net, "p", "state", bound(100));
      await store.forgetHistoryBound(net, "p", "state", 150); // within the bound: kept
      expect((await store.readNetwork(net)).history.get("p")?.learned.has("state")).toBe(true);
      await store.forgetHistoryBound(net, "p", "state", 40);
      expect((await store.readNetwork(net)).history.get("p")?.learned.has("state") ?? false).toBe(
        false,
      );
    },
  );

  it.skipIf(skip)(
    "a history probe replaces the previous one, beside the learned bounds",
    async () => {
      const net = fresh();
      const probe = (at: number) => ({
        at,
        capabilities: "supported" as const,
        capabilitiesAt: at,
        resources: { state: { from: 0, window: 128, how: "capabilities" as const } },
        detail: "eth_capabilities answered",
      });
      await store.recordHistoryProbe(net, "p", probe(NOW - 1000));
      await store.recordHistoryProbe(net, "p", probe(NOW));
      await store.recordHistoryBound(net, "p", "logs", bound(7));
      const history = (await store.readNetwork(net)).history.get("p");
      expect(history?.probe).toEqual(probe(NOW));
      expect(history?.learned.get("logs")).toEqual(bound(7));
    },
  );

  it.skipIf(skip)("networks do not see each other's state", async () => {
    const [a, b] = [fresh(), fresh()];
    await store.writeHealth(a, "p", 0, blacklisted(1));
    const state = await store.readNetwork(b);
    expect(state.providers.size).toBe(0);
  });
});
