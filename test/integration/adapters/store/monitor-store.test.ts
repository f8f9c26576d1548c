import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../../functions/adapters/store/monitor-store.ts";
import { DynamoStateStore } from "../../../../functions/adapters/store/state-store.ts";
import {
  createStatsFlusher,
  DynamoStatsStore,
} from "../../../../functions/adapters/store/stats-store.ts";
import { type CheckMemory, initialCheckMemory } from "../../../../functions/core/chain/quorum.ts";
import { HEALTHY, type ProviderHealth } from "../../../../functions/core/health/health.ts";
import { windowOf } from "../../../../functions/core/health/request-stats.ts";
import { monitorLease, runMonitorLoop } from "../../../../functions/core/monitor/loop.ts";
import type { QuorumSnapshot } from "../../../../functions/core/routing/network-state.ts";
import { createLocalDynamoDbClient, type LocalDynamoDb } from "../../../../local/dynamodb.ts";
import { dynamoBackends } from "../../../support/environment.ts";

/**
 * The monitor's DynamoDB operations against both emulators that speak the real API through
 * the real SDK: dynalite (always) and AWS's DynamoDB Local (where Java is installed, and
 * always under CI).
 */

const TABLE = "rpc-gateway-monitor-test";
const T0 = 1_800_000_000_000;

describe.each(dynamoBackends())("monitor storage on $name", ({ start }) => {
  let dynamo: LocalDynamoDb;
  /** The table `start` made (on a shared DynamoDB Local, a name of its own). */
  let tableName = TABLE;
  let client: DynamoDBClient;
  let monitorStore: DynamoMonitorStore;
  let stateStore: DynamoStateStore;
  let statsStore: DynamoStatsStore;
  let networkCount = 0;
  /** A network name of its own per test, so tests share the table but not state. */
  const freshNetwork = () => `net-${++networkCount}`;

  beforeAll(async () => {
    dynamo = await start({ tableName: TABLE });
    tableName = dynamo.tableName;
    client = createLocalDynamoDbClient(dynamo.endpoint);
    const tables = { client, tableName };
    monitorStore = new DynamoMonitorStore(tables);
    stateStore = new DynamoStateStore({ ...tables, clock: () => T0 });
    statsStore = new DynamoStatsStore(tables);
  }, 120_000);

  afterAll(async () => {
    client?.destroy();
    await dynamo?.close();
  });

  describe("monitor lease", () => {
    it("refuses a second holder until the lease expires or is released; the holder may renew", async () => {
      expect(await monitorStore.acquireMonitorLease("run-1", T0, T0 + 58_000)).toBe(true);
      expect(await monitorStore.acquireMonitorLease("run-2", T0 + 1_000, T0 + 59_000)).toBe(false);
      expect(await monitorStore.acquireMonitorLease("run-1", T0 + 1_000, T0 + 58_000)).toBe(true);
      // Expired at exactly expires_at.
      expect(await monitorStore.acquireMonitorLease("run-2", T0 + 58_000, T0 + 116_000)).toBe(true);
      expect(await monitorStore.acquireMonitorLease("run-1", T0 + 60_000, T0 + 118_000)).toBe(
        false,
      );
      // Releasing someone else's lease does nothing; releasing our own frees it at once.
      await monitorStore.releaseMonitorLease("run-1");
      expect(await monitorStore.acquireMonitorLease("run-3", T0 + 60_000, T0 + 118_000)).toBe(
        false,
      );
      await monitorStore.releaseMonitorLease("run-2");
      expect(await monitorStore.acquireMonitorLease("run-3", T0 + 60_000, T0 + 118_000)).toBe(true);
      await monitorStore.releaseMonitorLease("run-3");
    });

    it("runs one loop at a time: an overlapping run gets the lease refused and ticks nothing", async () => {
      let now = T0 + 1_000_000;
      const clock = () => now;
      const sleep = async (ms: number) => {
        now += ms;
      };
      let ticks = 0;
      let overlapping: Awaited<ReturnType<typeof runMonitorLoop>> | undefined;
      const until = now + 58_000;
      const second = {
        monitor: { tick: async () => {} },
        lease: monitorLease(monitorStore, "second", clock, until),
        clock,
        sleep,
        until,
        intervalMs: 15_000,
        tickBudgetMs: 13_000,
      };
      const first = await runMonitorLoop({
        ...second,
        lease: monitorLease(monitorStore, "first", clock, until),
        monitor: {
          tick: async () => {
            ticks++;
            // Another scheduled run starts while this one holds the lease.
            if (ticks === 2) overlapping = await runMonitorLoop(second);
            now += 2_000;
          },
        },
      });
      // Ticks at +0, +15, +30 and +45 s: the last one fits, as 45 + 13 ≤ 58.
      expect(first).toEqual({ leased: true, ticks: 4 });
      expect(overlapping).toEqual({ leased: false, ticks: 0 });
      // Released at the end: the next run takes it at once.
      expect(await monitorStore.acquireMonitorLease("next", now, now + 58_000)).toBe(true);
      await monitorStore.releaseMonitorLease("next");
    });
  });

  describe("probe lease", () => {
    it("admits one probe at a time, only while the health is at the version read", async () => {
      const network = freshNetwork();
      const blacklisted: ProviderHealth = {
        ...HEALTHY,
        strikes: 1,
        reason: "connection",
        blacklistedUntil: T0 - 1,
        probeGated: true,
        version: 1,
      };
      expect((await stateStore.writeHealth(network, "a", 0, blacklisted)).written).toBe(true);

      expect(await monitorStore.readProbeLeases(network)).toEqual(new Map());
      expect(await monitorStore.acquireProbeLease(network, "a", 1, T0, T0 + 10_000)).toBe(true);
      expect(await monitorStore.readProbeLeases(network)).toEqual(new Map([["a", T0 + 10_000]]));
      // Another monitor, same instant: refused while the lease runs.
      expect(await monitorStore.acquireProbeLease(network, "a", 1, T0 + 1, T0 + 10_001)).toBe(
        false,
      );
      // The lease leaves the health as it was (the proxy's reads are unaffected).
      expect(await stateStore.readHealth(network, "a")).toEqual(blacklisted);

      await monitorStore.releaseProbeLease(network, "a", T0 + 10_000);
      expect(await monitorStore.readProbeLeases(network)).toEqual(new Map());
      // A monitor that read an older version may not probe the same incident again.
      expect(await monitorStore.acquireProbeLease(network, "a", 0, T0 + 2, T0 + 10_002)).toBe(
        false,
      );
      expect(await monitorStore.acquireProbeLease(network, "a", 1, T0 + 2, T0 + 10_002)).toBe(true);
      // An expired lease is free again.
      expect(await monitorStore.acquireProbeLease(network, "a", 1, T0 + 10_002, T0 + 20_000)).toBe(
        true,
      );
      // Releasing with a lease that is not the current one leaves the current one alone.
      await monitorStore.releaseProbeLease(network, "a", T0 + 10_002);
      expect(await monitorStore.readProbeLeases(network)).toEqual(new Map([["a", T0 + 20_000]]));
    });

    it("a probe result written with writeHealth keeps the lease attribute out of the health", async () => {
      const network = freshNetwork();
      const awaiting: ProviderHealth = {
        ...HEALTHY,
        strikes: 2,
        reason: "timeout",
        blacklistedUntil: T0 - 1,
        probeGated: true,
        version: 3,
      };
      await stateStore.writeHealth(network, "b", 0, awaiting);
      expect(await monitorStore.acquireProbeLease(network, "b", 3, T0, T0 + 10_000)).toBe(true);
      const passed: ProviderHealth = {
        ...awaiting,
        reason: null,
        blacklistedUntil: 0,
        probeGated: false,
        lastProbe: { at: T0, result: "pass", detail: "alive at block 7" },
        version: 4,
      };
      expect((await stateStore.writeHealth(network, "b", 3, passed)).written).toBe(true);
      await monitorStore.releaseProbeLease(network, "b", T0 + 10_000);
      const state = await stateStore.readNetwork(network);
      expect(state.providers.get("b")).toEqual(passed);
    });
  });

  describe("check memory", () => {
    it("round-trips, and an older tick's memory does not overwrite a newer one", async () => {
      const network = freshNetwork();
      expect(await monitorStore.readCheckMemory(network)).toEqual({});
      const memory: Record<string, CheckMemory> = {
        a: initialCheckMemory(),
        b: {
          failedRecentlyRemaining: 2,
          recentChecks: [false, true, true],
          failingOftenUntil: T0 + 300_000,
          wrongChain: true,
          lastChainIdCheckAt: T0,
        },
      };
      expect(await monitorStore.writeCheckMemory(network, memory, T0)).toBe(true);
      expect(await monitorStore.readCheckMemory(network)).toEqual(memory);
      expect(
        await monitorStore.writeCheckMemory(network, { a: initialCheckMemory() }, T0 - 1),
      ).toBe(false);
      expect(await monitorStore.readCheckMemory(network)).toEqual(memory);
      // The memory lives outside the proxy's partition.
      const state = await stateStore.readNetwork(network);
      expect(state.providers.size).toBe(0);
    });
  });

  describe("quorum snapshot and heartbeat", () => {
    it("are read back by the proxy's DynamoStateStore.readNetwork", async () => {
      const network = freshNetwork();
      const snapshot: QuorumSnapshot = {
        head: 21_000_000,
        headTimestamp: 1_764_400_000,
        members: ["a", "b"],
        excluded: { c: "behind", d: "wrong_chain" },
        heads: {
          a: { number: 21_000_000, timestamp: 1_764_400_000 },
          b: { number: 20_999_999, timestamp: 1_764_399_988 },
          c: { number: 20_999_000, timestamp: 1_764_388_000 },
        },
        computedAt: T0,
      };
      expect(await monitorStore.writeQuorum(network, snapshot)).toBe(true);
      await monitorStore.writeHeartbeat(network, T0 + 50);
      let state = await stateStore.readNetwork(network);
      expect(state.quorum).toEqual(snapshot);
      expect(state.monitorTickAt).toBe(T0 + 50);

      // An overlapping run's older snapshot and heartbeat do not replace newer ones.
      expect(await monitorStore.writeQuorum(network, { ...snapshot, computedAt: T0 - 1 })).toBe(
        false,
      );
      await monitorStore.writeHeartbeat(network, T0 - 1);
      const newer = { ...snapshot, members: ["a"], computedAt: T0 + 15_000 };
      expect(await monitorStore.writeQuorum(network, newer)).toBe(true);
      state = await stateStore.readNetwork(network);
      expect(state.quorum).toEqual(newer);
      expect(state.monitorTickAt).toBe(T0 + 50);
    });
  });

  describe("request stats", () => {
    it("flushes from two containers merge by addition; a read covers the window only", async () => {
      const network = freshNetwork();
      let now = T0;
      const clock = () => now;
      const errors: unknown[] = [];
      const container = () =>
        createStatsFlusher({
          statsStore,
          clock,
          intervalMs: 5_000,
          onError: (_network, error) => errors.push(error),
        });
      // An old bucket, outside a 60 s window read later.
      const earlier = container();
      earlier.record(network, "a", true, 10);
      await earlier.flush();
      now += 120_000;

      const one = container();
      const two = container();
      for (let i = 0; i < 3; i++) one.record(network, "a", true, 40);
      one.record(network, "a", false, 900);
      for (let i = 0; i < 2; i++) two.record(network, "a", false, 40);
      two.record(network, "b", true, 5);

      // Not due yet: nothing is written.
      now += 1_000;
      await one.flushIfDue();
      expect((await statsStore.read(network, now, 60)).a).toBeUndefined();

      now += 4_000;
      await Promise.all([one.flushIfDue(), two.flushIfDue()]);
      // Flushed deltas are reset: a second flush adds nothing.
      await Promise.all([one.flush(), two.flush()]);
      expect(errors).toEqual([]);

      const stats = await statsStore.read(network, now, 60);
      expect(Object.keys(stats).sort()).toEqual(["a", "b"]);
      const a = windowOf(stats.a ?? [], now, 60);
      expect({ requests: a.requests, errors: a.errors }).toEqual({ requests: 6, errors: 3 });
      expect(a.latency_ms.p50).toBeGreaterThan(32);
      expect(a.latency_ms.p50).toBeLessThanOrEqual(64);
      expect(windowOf(stats.b ?? [], now, 60).requests).toBe(1);
      // The whole history, old bucket included, with a longer window.
      const all = await statsStore.read(network, now, 3600);
      expect(windowOf(all.a ?? [], now, 3600).requests).toBe(7);
    });

    it("flushes once per clock slot, so a flush holds one bucket per provider: every 10 s while all succeeds, every 5 s with a failure", async () => {
      let now = T0 + 4_000;
      const flushed: Array<Record<string, number[]>> = [];
      const flusher = createStatsFlusher({
        statsStore: {
          flush: async (_network, stats) => {
            flushed.push(
              Object.fromEntries(
                Object.entries(stats).map(([provider, buckets]) => [
                  provider,
                  buckets.map((bucket) => bucket.start - T0),
                ]),
              ),
            );
          },
        },
        clock: () => now,
        intervalMs: 5_000,
        quietIntervalMs: 10_000,
        bucketSeconds: 10,
        onError: () => undefined,
      });
      const at = async (ms: number, record?: () => void) => {
        now = T0 + ms;
        record?.();
        await flusher.flushIfDue();
      };
      await at(4_000, () => flusher.record("x", "a", true, 10));
      // Successes only: not due until the bucket [0 s, 10 s) ends.
      await at(5_000);
      await at(9_900, () => flusher.record("x", "a", true, 10));
      expect(flushed).toEqual([]);
      await at(10_050);
      expect(flushed).toEqual([{ a: [0] }]);
      // A failure: due when the 5 s slot ends.
      await at(12_000, () => flusher.record("x", "b", false, 10));
      await at(14_999);
      expect(flushed).toHaveLength(1);
      await at(15_000);
      await at(16_000, () => flusher.record("x", "a", true, 10));
      await at(19_999);
      await at(20_000);
      expect(flushed).toEqual([{ a: [0] }, { b: [10_000] }, { a: [10_000] }]);
    });

    it("a failed flush is reported and dropped, not retried", async () => {
      let now = T0;
      const failures: string[] = [];
      const flusher = createStatsFlusher({
        statsStore: {
          flush: async () => {
            throw new Error("throttled");
          },
        },
        clock: () => now,
        onError: (network, error) => failures.push(`${network}: ${(error as Error).message}`),
      });
      flusher.record("x", "a", true, 10);
      now += 5_000;
      await flusher.flushIfDue();
      await flusher.flush();
      expect(failures).toEqual(["x: throttled"]);
    });
  });
});
