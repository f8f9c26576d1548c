import { describe, expect, it } from "vitest";
import { HEALTHY, type ProviderHealth } from "../../functions/core/health.ts";
import { EMPTY_NETWORK_STATE, type NetworkState } from "../../functions/core/network-state.ts";
import type { StateStore, Telemetry } from "../../functions/core/ports.ts";
import { StateCache } from "../../functions/core/state-cache.ts";

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
  let reads = 0;
  const store: StateStore = {
    readNetwork: () => {
      reads++;
      return new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
      });
    },
    writeHealth: async () => ({ written: true }),
    blacklistCapability: async () => undefined,
    recordBatchLimit: async () => undefined,
    recordLogsRange: async () => undefined,
    publishServed: async () => false,
  };
  const cache = new StateCache({ store, clock: () => now, telemetry: silent, ttlMs: () => 1000 });
  return {
    cache,
    advance: (ms: number) => {
      now += ms;
    },
    release: (state: NetworkState) => pending.shift()?.resolve(state),
    fail: () => pending.shift()?.reject(new Error("store down")),
    reads: () => reads,
  };
}

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
