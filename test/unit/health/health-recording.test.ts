import { describe, expect, it } from "vitest";
import { HEALTHY, type ProviderHealth } from "../../../functions/core/health/health.ts";
import { settleWrites } from "../../../functions/core/request/attempts/health-recorder.ts";
import type { FailureVerdict } from "../../../functions/core/request/vocabulary.ts";
import {
  behind,
  capability,
  iso,
  MIN,
  NOW,
  ok,
  type Providers,
  recorder,
  settled,
  three,
  timeout,
} from "../../support/health-recorder-harness.ts";

/**
 * What one attempt does to a provider's health (docs/behaviour.md §4, §6, §7): the incident
 * and its one strike, a success and the slow rule, a state store that fails, and what each
 * tells the logs, the metrics and the event log. Capability blacklists and force-rotate have
 * their own files.
 */

describe("a failed attempt, counted and logged at once", () => {
  it.each<[string, FailureVerdict, boolean, string]>([
    ["a retry: its kind", timeout, true, "timeout"],
    ["a capability miss", capability, true, "capability"],
    ["behind: a failed request only once another provider had the block", behind, false, "behind"],
  ])("%s", async (_name, verdict, counted, kind) => {
    const r = recorder({ net: { providers: three } });
    const attempt = await r.attempt("p1", { elapsedMs: 42, emergency: true });
    r.health.noteFailure(attempt, verdict);
    expect(r.outcomes).toEqual(counted ? [["net", "p1", false, 42]] : []);
    expect(r.counts).toEqual([
      { name: "retried_errors", dimensions: { network: "net", provider: "p1", kind } },
    ]);
    expect(r.logs).toEqual([
      {
        level: "info",
        message: "failover: upstream error, trying the next provider",
        fields: {
          network: "net",
          provider: "p1",
          kind,
          detail: verdict.detail.replaceAll("s3cr3t", "***"),
          emergency: true,
        },
      },
    ]);
    expect(attempt.writes).toEqual([]);
  });
});

describe("penalties once the request is over", () => {
  it("an incident: one strike, the metric, a warning and an event, the detail scrubbed", async () => {
    const r = recorder({ net: { providers: three } });
    const attempt = await r.attempt("p1");
    r.health.penalise(attempt, timeout, ["eth_call"]);
    await settled(attempt);
    const until = NOW + 3 * MIN;
    expect(r.store.healthWrites.map((write) => write.next)).toEqual([
      {
        ...HEALTHY,
        strikes: 1,
        reason: "timeout",
        blacklistedUntil: until,
        probeGated: true,
        version: 1,
      },
    ]);
    expect(r.counts).toEqual([
      {
        name: "blacklist_events",
        dimensions: { network: "net", provider: "p1", reason: "timeout" },
      },
    ]);
    expect(r.logs).toEqual([
      {
        level: "warn",
        message: "provider blacklisted",
        fields: {
          network: "net",
          provider: "p1",
          reason: "timeout",
          strikes: 1,
          until: iso(until),
          cooldown_ms: 3 * MIN,
          extended_only: false,
        },
      },
    ]);
    expect(r.events).toEqual([
      {
        network: "net",
        at: NOW,
        provider: "p1",
        kind: "blacklisted",
        reason: "timeout",
        detail: `no answer from http://p1.test/*** in 5000 ms; strike 1, until ${iso(until)}`,
      },
    ]);
    // This container acts on it at once.
    expect((await r.cache.get("net")).providers.get("p1")?.blacklistedUntil).toBe(until);
  });

  it("a failure ending later during the blacklist: extended, no strike, logged at info", async () => {
    const r = recorder({ net: { providers: three } });
    const first = await r.attempt("p1");
    r.health.penalise(first, { ...timeout, reason: "connection", kind: "connection" }, []);
    await settled(first);
    r.advance(MIN);
    const second = await r.attempt("p1");
    r.health.penalise(second, { ...timeout, retryAfterMs: 10 * MIN }, []);
    await settled(second);
    const until = NOW + 11 * MIN;
    expect(r.store.healthWrites.at(-1)?.next).toMatchObject({
      strikes: 1,
      blacklistedUntil: until,
    });
    expect(r.logs.at(-1)).toMatchObject({
      level: "info",
      fields: { strikes: 1, extended_only: true, cooldown_ms: 10 * MIN },
    });
    expect(r.events.at(-1)?.detail).toBe(
      `no answer from http://p1.test/*** in 5000 ms; extended to ${iso(until)} (strike 1)`,
    );
  });

  it("the same failure again within a second of the expiry writes and tells nothing", async () => {
    const r = recorder({ net: { providers: three } });
    for (const _ of [1, 2]) {
      const attempt = await r.attempt("p1");
      r.health.penalise(attempt, timeout, []);
      await settled(attempt);
    }
    expect(r.store.healthWrites).toHaveLength(1);
    expect(r.events).toHaveLength(1);
  });

  it("another container won the write: the stored health is judged again, and stands", async () => {
    const r = recorder({ net: { providers: three } });
    const blacklisted: ProviderHealth = {
      ...HEALTHY,
      strikes: 2,
      reason: "rate_limit",
      blacklistedUntil: NOW + 10 * MIN,
      probeGated: true,
      version: 4,
    };
    const attempt = await r.attempt("p1");
    r.store.setHealth("net", "p1", blacklisted);
    r.health.penalise(attempt, timeout, []);
    await settled(attempt);
    expect(r.store.healthWrites).toEqual([]);
    expect(r.events).toEqual([]);
    expect((await r.cache.get("net")).providers.get("p1")).toEqual(blacklisted);
  });

  it("an emergency attempt penalises nobody; behind counts a failed request, no strike", async () => {
    const r = recorder({ net: { providers: three } });
    const emergency = await r.attempt("p1", { emergency: true });
    r.health.penalise(emergency, timeout, []);
    const late = await r.attempt("p2", { elapsedMs: 7 });
    r.health.penalise(late, behind, []);
    expect([...emergency.writes, ...late.writes]).toEqual([]);
    expect(r.outcomes).toEqual([["net", "p2", false, 7]]);
  });

  it("a state store that fails: kept locally, warned and counted, no event", async () => {
    const r = recorder({ net: { providers: three } });
    r.store.writeHealth = async () => {
      throw new Error("ProvisionedThroughputExceeded");
    };
    r.store.blacklistCapability = async () => {
      throw new Error("ProvisionedThroughputExceeded");
    };
    const attempt = await r.attempt("p1");
    r.health.penalise(attempt, timeout, []);
    r.health.penalise(attempt, capability, ["trace_block"]);
    await settled(attempt);
    const warning = {
      level: "warn",
      message: "state store write failed: kept locally",
      fields: { network: "net", error: "ProvisionedThroughputExceeded" },
    };
    expect(r.logs).toEqual([warning, warning]);
    expect(r.counts.filter((count) => count.name === "state_store_errors")).toEqual([
      { name: "state_store_errors", dimensions: { network: "net" } },
      { name: "state_store_errors", dimensions: { network: "net" } },
    ]);
    expect(r.events).toEqual([]);
    const local = await r.cache.get("net");
    expect(local.providers.get("p1")?.reason).toBe("timeout");
    expect(local.capabilities.get("p1")?.get("trace_block")).toBe(NOW + 24 * 60 * MIN);
  });
});

describe("an answer the caller gets", () => {
  it("counts a good request, notes when, and resets strikes", async () => {
    const r = recorder({ net: { providers: three } });
    r.store.setHealth("net", "p1", { ...HEALTHY, strikes: 2, version: 3 });
    const attempt = await r.attempt("p1", { elapsedMs: 12 });
    r.health.succeeded(attempt, ok);
    await settled(attempt);
    expect(r.outcomes).toEqual([["net", "p1", true, 12]]);
    expect(r.health.lastSuccessAt(r.network(), "p1")).toBe(NOW);
    expect(r.health.lastSuccessAt(r.network(), "p2")).toBeUndefined();
    expect(r.store.healthWrites.map((write) => write.next)).toEqual([{ ...HEALTHY, version: 4 }]);
  });

  // slow_response_ms is 3000 by default; the rule needs 3 plain-read candidates.
  it.each<[string, Providers, number, boolean, boolean]>([
    [
      "slower than slow_response_ms with 3 candidates: blacklisted as slow",
      three,
      5001,
      false,
      true,
    ],
    ["exactly slow_response_ms is not slow", three, 3000, false, false],
    ["a heavy call is slow by nature", three, 60_000, true, false],
    ["with only 2 candidates the slow one is kept", three.slice(0, 2), 60_000, false, false],
  ])("%s", async (_name, providers, elapsedMs, heavy, blacklisted) => {
    const r = recorder({ net: { providers } });
    const attempt = await r.attempt("p1", { elapsedMs, heavy });
    r.health.succeeded(attempt, ok);
    await settled(attempt);
    expect(r.store.healthWrites.map((write) => write.next.reason)).toEqual(
      blacklisted ? ["slow"] : [],
    );
    expect(r.events.map((event) => event.detail.split(";")[0])).toEqual(
      blacklisted ? [`answered in ${elapsedMs} ms, over slow_response_ms 3000`] : [],
    );
  });
});

describe("settleWrites: the answer waits a little for the request's state writes", () => {
  function controlledWait() {
    const calls: Array<{ ms: number; signal: AbortSignal | undefined }> = [];
    let elapse = () => {};
    const wait = (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        calls.push({ ms, signal });
        elapse = resolve;
      });
    return { calls, wait, elapse: () => elapse() };
  }

  it("none to wait for: no wait at all", async () => {
    const timer = controlledWait();
    await settleWrites([], timer.wait);
    expect(timer.calls).toEqual([]);
  });

  it("writes done first: the wait is cut short", async () => {
    const timer = controlledWait();
    await settleWrites([Promise.resolve(), Promise.reject(new Error("lost"))], timer.wait);
    expect(timer.calls.map((call) => [call.ms, call.signal?.aborted])).toEqual([[200, true]]);
  });

  it("a write that hangs: the answer goes after 200 ms", async () => {
    const timer = controlledWait();
    const settling = settleWrites([new Promise(() => {})], timer.wait);
    await Promise.resolve();
    timer.elapse();
    await settling;
    expect(timer.calls.map((call) => call.ms)).toEqual([200]);
  });
});
