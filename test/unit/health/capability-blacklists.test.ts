import { describe, expect, it } from "vitest";
import {
  capability,
  iso,
  MIN,
  NOW,
  recorder,
  settled,
  three,
} from "../../support/health-recorder-harness.ts";

/**
 * Capability blacklists (docs/behaviour.md §4, §6): a provider that does not serve a method is
 * blacklisted for that method only, once per method, bounded by `max_capability_blacklists`
 * so the state every container reads stays small whatever callers send.
 */

describe("capability blacklists (per method, bounded)", () => {
  it("one per method failed, each recorded once with its event and metric", async () => {
    const r = recorder({ net: { providers: three } });
    const attempt = await r.attempt("p1");
    r.health.penalise(attempt, capability, ["trace_block", "trace_block", "debug_x"]);
    await settled(attempt);
    const until = NOW + 24 * 60 * MIN;
    const state = await r.store.readNetwork("net");
    expect([...(state.capabilities.get("p1") ?? [])]).toEqual([
      ["trace_block", until],
      ["debug_x", until],
    ]);
    expect(r.events.map((event) => [event.kind, event.reason, event.detail])).toEqual([
      ["capability_blacklisted", "capability", `trace_block until ${iso(until)}: method not found`],
      ["capability_blacklisted", "capability", `debug_x until ${iso(until)}: method not found`],
    ]);
    expect(r.counts).toEqual([
      {
        name: "blacklist_events",
        dimensions: { network: "net", provider: "p1", reason: "capability" },
      },
      {
        name: "blacklist_events",
        dimensions: { network: "net", provider: "p1", reason: "capability" },
      },
    ]);
  });

  it("a method still blacklisted is not recorded again; an expired one is", async () => {
    const r = recorder({ net: { providers: three } });
    await r.store.blacklistCapability("net", "p1", "trace_block", NOW + MIN);
    await r.store.blacklistCapability("net", "p1", "debug_x", NOW - 1);
    const attempt = await r.attempt("p1");
    r.health.penalise(attempt, capability, ["trace_block", "debug_x"]);
    await settled(attempt);
    expect(r.events.map((event) => event.detail.split(" ")[0])).toEqual(["debug_x"]);
  });

  it("at the bound, live blacklists count against it and the rest are warned about, at most 10", async () => {
    const r = recorder({ net: { providers: three, max_capability_blacklists: 3 } });
    await r.store.blacklistCapability("net", "p1", "live_one", NOW + MIN);
    const attempt = await r.attempt("p1");
    const methods = Array.from({ length: 14 }, (_, index) => `m${index}`);
    r.health.penalise(attempt, capability, methods);
    await settled(attempt);
    expect(r.events.map((event) => event.detail.split(" ")[0])).toEqual(["m0", "m1"]);
    expect(r.logs).toEqual([
      {
        level: "warn",
        message: "capability blacklists at their bound: not recorded",
        fields: { network: "net", provider: "p1", bound: 3, methods: methods.slice(2, 12) },
      },
    ]);
  });

  it("a blacklist that has just ended counts neither against the bound nor as still recorded", async () => {
    const r = recorder({ net: { providers: three, max_capability_blacklists: 3 } });
    await r.store.blacklistCapability("net", "p1", "ended", NOW + MIN);
    // This container's copy still holds it when it ends.
    const attempt = await r.attempt("p1");
    r.advance(MIN);
    r.health.penalise(attempt, capability, ["ended", "a", "b", "c"]);
    await settled(attempt);
    expect(r.events.map((event) => event.detail.split(" ")[0])).toEqual(["ended", "a", "b"]);
  });

  it("under the bound nothing is warned about", async () => {
    const r = recorder({ net: { providers: three, max_capability_blacklists: 2 } });
    const attempt = await r.attempt("p1");
    r.health.penalise(attempt, capability, ["a", "b"]);
    await settled(attempt);
    expect(r.events).toHaveLength(2);
    expect(r.logs).toEqual([]);
  });
});
