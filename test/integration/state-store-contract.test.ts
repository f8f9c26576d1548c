import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../functions/adapters/monitor-store.ts";
import { createDynamoClient, DynamoStateStore } from "../../functions/adapters/state-store.ts";
import type { ChainHead } from "../../functions/core/chain-head.ts";
import { HEALTHY, type ProviderHealth } from "../../functions/core/health.ts";
import type { StateStore } from "../../functions/core/ports.ts";
import {
  isJavaAvailable,
  type LocalDynamoDb,
  startDynalite,
  startDynamoDbLocal,
} from "../../local/dynamodb.ts";
import { MemoryStateStore } from "../support/memory-state-store.ts";

/**
 * The state store's contract, run against the DynamoDB adapter on the real DynamoDB API
 * (dynalite; DynamoDB Local where Java is present) and against the in-memory store the
 * pipeline's unit tests use, so the two cannot drift apart: conditional health writes on
 * `version`, capability blacklists that only move later, expired blacklists not read, a served
 * head that never goes back.
 */

const NOW = Date.now();

interface Backend {
  readonly store: StateStore;
  /** Writes the chain position as the monitor does, beside which the served head is kept. */
  writeHead(network: string, head: ChainHead): Promise<void>;
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  const tables = {
    client: createDynamoClient({ endpoint: dynamo.endpoint }),
    tableName: dynamo.tableName,
  };
  const monitor = new DynamoMonitorStore(tables);
  return {
    store: new DynamoStateStore({ ...tables, clock: () => NOW }),
    writeHead: (network, head) => monitor.writeHead(network, head),
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
    () => dynamoBackend(() => startDynamoDbLocal({ tableName: "contract" })),
    !isJavaAvailable(),
  ],
];

/** The chain position as a monitor tick writes it, with no served head yet. */
const monitorHead = (latest: number): ChainHead => ({
  latest: { number: latest, hash: null },
  safe: null,
  finalized: null,
  served: null,
  previousServed: null,
  updatedAt: NOW - 60_000,
  reorgSeenAt: 0,
  finalityBrokenAt: 0,
});

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
      expect(await store.publishServed(net, 1_000_000, NOW, 0)).toBe(false);
      expect((await store.readNetwork(net)).head).toBeNull();
    },
  );

  it.skipIf(skip)(
    "the served head never goes back: 100 published, then 90 later is refused and 100 kept (docs/behaviour.md §10)",
    async () => {
      const net = fresh();
      await backend.writeHead(net, monitorHead(100));
      expect(await store.publishServed(net, 100, NOW - 10_000, 0)).toBe(true);
      expect(await store.publishServed(net, 90, NOW, 2_500)).toBe(false);
      expect(await store.publishServed(net, 100, NOW, 2_500)).toBe(false);
      expect((await store.readNetwork(net)).head).toMatchObject({
        served: { block: 100, at: NOW - 10_000 },
        previousServed: null,
      });
      // Higher and old enough: published, the one before kept beside it.
      expect(await store.publishServed(net, 101, NOW, 2_500)).toBe(true);
      expect((await store.readNetwork(net)).head).toMatchObject({
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

  it.skipIf(skip)("networks do not see each other's state", async () => {
    const [a, b] = [fresh(), fresh()];
    await store.writeHealth(a, "p", 0, blacklisted(1));
    const state = await store.readNetwork(b);
    expect(state.providers.size).toBe(0);
  });
});
