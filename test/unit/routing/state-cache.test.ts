import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../functions/core/chain/chain-head.ts";
import { HEALTHY, type ProviderHealth } from "../../../functions/core/health/health.ts";
import type { StateStore, Telemetry } from "../../../functions/core/ports.ts";
import {
  EMPTY_NETWORK_STATE,
  type NetworkState,
} from "../../../functions/core/routing/network-state.ts";
import { StateCache } from "../../../functions/core/routing/state-cache.ts";

/** The per-container cache of shared state, with a store whose reads the test releases. */

const silent: Telemetry = {
  log: () => undefined,
  count: () => undefined,
  measure: () => undefined,
};

function stateWith(health: Record<string, ProviderHealth>): NetworkState {
  return { ...EMPTY_NETWORK_STATE, providers: new Map(Object.entries(health)) };
}

function harness() {
  let now = 1_000_000;
  const pending: Array<{ resolve: (state: NetworkState) => void; reject: (error: Error) => void }> =
    [];
  const heads: Array<{
    resolve: (head: ChainHead | null) => void;
    reject: (error: Error) => void;
  }> = [];
  let reads = 0;
  let headReads = 0;
  const store: StateStore = {
    readNetwork: () => {
      reads++;
      return new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
      });
    },
    readHead: () => {
      headReads++;
      return new Promise((resolve, reject) => {
        heads.push({ resolve, reject });
      });
    },
    writeHealth: async () => ({ written: true }),
    blacklistCapability: async () => undefined,
    recordBatchLimit: async () => undefined,
    recordLogsRange: async () => undefined,
    recordHistoryBound: async () => undefined,
    forgetHistoryBound: async () => undefined,
    recordHistoryProbe: async () => undefined,
    publishServed: async () => false,
  };
  const cache = new StateCache({
    store,
    clock: () => now,
    telemetry: silent,
    ttlMs: () => 1000,
    headTtlMs: () => 250,
  });
  return {
    cache,
    advance: (ms: number) => {
      now += ms;
    },
    release: (state: NetworkState) => pending.shift()?.resolve(state),
    fail: () => pending.shift()?.reject(new Error("store down")),
    reads: () => reads,
    releaseHead: (head: ChainHead | null) => heads.shift()?.resolve(head),
    failHead: () => heads.shift()?.reject(new Error("store down")),
    headReads: () => headReads,
  };
}

/** A chain position at `latest` with the served head published at `served` (at `at`). */
function headAt(latest: number, served: number, at: number, updatedAt = 0): ChainHead {
  return {
    latest: { number: latest, hash: null },
    safe: null,
    finalized: null,
    served: { block: served, at },
    previousServed: null,
    updatedAt,
    reorgSeenAt: 0,
  };
}

/** Lets the cache's handlers of settled reads run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const blacklisted: ProviderHealth = {
  ...HEALTHY,
  strikes: 1,
  reason: "connection",
  blacklistedUntil: 9e15,
  version: 1,
};

describe("StateCache", () => {
  it("reads once per TTL and serves the old copy while one refresh runs", async () => {
    const h = harness();
    const first = h.cache.get("eth");
    h.release(stateWith({}));
    expect(await first).toEqual(stateWith({}));
    expect(await h.cache.get("eth")).toEqual(stateWith({}));
    expect(h.reads()).toBe(1);
    h.advance(1500);
    const stale = await h.cache.get("eth");
    expect(stale).toEqual(stateWith({}));
    await h.cache.get("eth");
    expect(h.reads()).toBe(2);
  });

  it("a request that needs the served head waits for a consistent read of the chain position only when its copy is older than head_cache_ms, reading ahead from 80% of it", async () => {
    const h = harness();
    const cold = h.cache.get("eth", { freshHead: true });
    h.release(stateWith({}));
    h.releaseHead(headAt(10, 9, 0));
    expect((await cold).head?.served?.block).toBe(9);
    expect(h.headReads()).toBe(1);
    h.advance(199);
    await h.cache.get("eth", { freshHead: true });
    expect(h.headReads()).toBe(1);
    h.advance(1);
    // 80% old: answered at once with the copy in hand, while the next one is read.
    expect((await h.cache.get("eth", { freshHead: true })).head?.served?.block).toBe(9);
    expect(h.headReads()).toBe(2);
    h.advance(100);
    // Too old to use: the read in flight, begun 100 ms ago, is waited for, not a third one.
    const waiting = h.cache.get("eth", { freshHead: true });
    h.releaseHead(headAt(11, 10, 150));
    expect((await waiting).head?.served?.block).toBe(10);
    expect(h.headReads()).toBe(2);
  });

  it("a request that needs no fresh copy never waits nor reads: it takes the newer of the copies in hand", async () => {
    const h = harness();
    const cold = h.cache.get("eth", { freshHead: true });
    h.release(stateWith({}));
    h.releaseHead(headAt(10, 9, 0));
    await cold;
    h.advance(5_000);
    const old = h.cache.get("eth");
    // The state's Query is read again (its TTL passed) and served stale meanwhile.
    expect((await old).head?.served?.block).toBe(9);
    h.release({ ...stateWith({}), head: headAt(12, 11, 4_900) });
    await settle();
    expect((await h.cache.get("eth")).head?.served?.block).toBe(11);
    expect(h.headReads()).toBe(1);
  });

  it("without a copy of its own, the Query's chain position stands", async () => {
    const h = harness();
    const cold = h.cache.get("eth");
    h.release({ ...stateWith({}), head: headAt(10, 9, 0) });
    expect((await cold).head?.served?.block).toBe(9);
    h.advance(5_000);
    await h.cache.get("eth");
    expect(h.headReads()).toBe(0);
  });

  it("the newer of the consistent copy and the Query's is used, field by field", async () => {
    const h = harness();
    const cold = h.cache.get("eth", { freshHead: true });
    // The Query's copy has a newer publication; the consistent one a newer monitor tick.
    h.release({ ...stateWith({}), head: headAt(10, 12, 500, 100) });
    h.releaseHead(headAt(11, 10, 400, 200));
    const head = (await cold).head;
    expect({ latest: head?.latest.number, served: head?.served }).toEqual({
      latest: 11,
      served: { block: 12, at: 500 },
    });
  });

  it("a chain position that cannot be read keeps the last copy, and is tried again once per head_cache_ms", async () => {
    const h = harness();
    const cold = h.cache.get("eth", { freshHead: true });
    h.release(stateWith({}));
    h.releaseHead(headAt(10, 9, 0));
    await cold;
    h.advance(300);
    const failing = h.cache.get("eth", { freshHead: true });
    h.failHead();
    expect((await failing).head?.served?.block).toBe(9);
    await settle();
    h.advance(100);
    await h.cache.get("eth", { freshHead: true });
    expect(h.headReads()).toBe(2);
  });

  it("a refresh that started before this container's own blacklist does not undo it", async () => {
    const h = harness();
    const first = h.cache.get("eth");
    h.release(stateWith({ p: HEALTHY }));
    await first;
    h.advance(1500);
    await h.cache.get("eth"); // starts a refresh that reads the store before the write lands
    h.cache.update("eth", (state) => ({ ...state, providers: new Map([["p", blacklisted]]) }));
    h.release(stateWith({ p: HEALTHY }));
    await Promise.resolve();
    await Promise.resolve();
    expect((await h.cache.get("eth")).providers.get("p")).toEqual(blacklisted);
  });

  it("a refresh that started after the update takes the store's copy", async () => {
    const h = harness();
    const first = h.cache.get("eth");
    h.release(stateWith({ p: HEALTHY }));
    await first;
    h.cache.update("eth", (state) => ({ ...state, providers: new Map([["p", blacklisted]]) }));
    h.advance(1500);
    await h.cache.get("eth");
    const probePassed = { ...blacklisted, reason: null, blacklistedUntil: 0, version: 2 };
    h.release(stateWith({ p: probePassed }));
    await Promise.resolve();
    await Promise.resolve();
    expect((await h.cache.get("eth")).providers.get("p")).toEqual(probePassed);
  });

  it("a store that fails keeps the last copy, and a cold one fails open", async () => {
    const h = harness();
    const cold = h.cache.get("eth");
    h.fail();
    expect(await cold).toBe(EMPTY_NETWORK_STATE);
    h.advance(1500);
    await h.cache.get("eth"); // the empty copy, while the store is read again
    h.release(stateWith({ p: blacklisted }));
    await Promise.resolve();
    await Promise.resolve();
    expect((await h.cache.get("eth")).providers.get("p")).toEqual(blacklisted);
    h.advance(1500);
    await h.cache.get("eth");
    h.fail();
    await Promise.resolve();
    await Promise.resolve();
    expect((await h.cache.get("eth")).providers.get("p")).toEqual(blacklisted);
  });
});
