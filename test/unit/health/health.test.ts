import { describe, expect, it } from "vitest";
import type { CooldownReason } from "../../../functions/core/classify/verdict.ts";
import { cooldownSecondsSchema } from "../../../functions/core/config/config-schema.ts";
import {
  applyIncident,
  applyProbeFail,
  applyProbePass,
  applySuccess,
  cooldownMs,
  HEALTHY,
  healthState,
  type ProviderHealth,
} from "../../../functions/core/health/health.ts";

const policy = { cooldownSeconds: cooldownSecondsSchema.parse({}), maxBlacklistMinutes: 30 };
const MIN = 60_000;
const T0 = 1_000_000_000_000;

describe("cooldown = base × 2^(strikes − 1), capped (docs/behaviour.md §6)", () => {
  it.each<[CooldownReason, number, number]>([
    ["rate_limit", 1, 5 * MIN],
    ["rate_limit", 2, 10 * MIN],
    ["rate_limit", 3, 20 * MIN],
    ["rate_limit", 4, 30 * MIN],
    ["rate_limit", 9, 30 * MIN],
    ["quota", 1, 5 * MIN],
    ["timeout", 1, 3 * MIN],
    ["timeout", 2, 6 * MIN],
    ["connection", 1, 2 * MIN],
    ["connection", 5, 30 * MIN],
    ["tls", 1, 2 * MIN],
    ["batch_limit", 1, 1 * MIN],
    ["slow", 1, 2 * MIN],
    ["force_rotate", 1, 1 * MIN],
    ["transient", 1, 1 * MIN],
    ["forbidden", 1, 24 * 60 * MIN],
    ["forbidden", 3, 24 * 60 * MIN],
    ["chain_unavailable", 2, 24 * 60 * MIN],
    ["capability", 1, 24 * 60 * MIN],
  ])("%s at strike %i → %i ms", (reason, strikes, expected) => {
    expect(cooldownMs(reason, strikes, policy)).toBe(expected);
  });
});

describe("a provider's state (docs/behaviour.md §6)", () => {
  it("starts healthy: no strike, no blacklist, no probe gate, never written", () => {
    expect(HEALTHY).toEqual({
      strikes: 0,
      blacklistedUntil: 0,
      reason: null,
      probeGated: false,
      lastProbe: null,
      version: 0,
    });
    expect(healthState(HEALTHY, T0)).toBe("healthy");
  });

  it("is healthy whenever no reason is recorded: the reason is what marks a blacklist", () => {
    const unmarked = { ...HEALTHY, blacklistedUntil: T0 + MIN, probeGated: true, strikes: 2 };
    expect(healthState(unmarked, T0)).toBe("healthy");
  });
});

describe("incidents", () => {
  it("a first incident blacklists with strike 1 and a probe gate", () => {
    const next = applyIncident(HEALTHY, "rate_limit", T0, policy);
    expect(next).toMatchObject({
      strikes: 1,
      reason: "rate_limit",
      blacklistedUntil: T0 + 5 * MIN,
      probeGated: true,
      version: 1,
    });
  });

  // Connection at T0: blacklisted for 2 min at strike 1, probe-gated. A rate limit here asks
  // for 10 min.
  it.each<[string, CooldownReason, number, number | null]>([
    ["the same failure again: the same incident, nothing written", "connection", T0 + 1000, null],
    ["a timeout ending later (3 min): expiry moved, no strike", "timeout", T0 + MIN, T0 + 4 * MIN],
    ["a 403 (24 h): expiry moved, no strike", "forbidden", T0 + MIN, T0 + MIN + 24 * 60 * MIN],
    ["a rate limit asking 10 min: expiry moved, no strike", "rate_limit", T0 + MIN, T0 + 11 * MIN],
  ])(
    "failures during an active blacklist add no strike (one strike per incident): %s",
    (_name, reason, at, until) => {
      const first = applyIncident(HEALTHY, "connection", T0, policy) as ProviderHealth;
      const requested = reason === "rate_limit" ? 10 * MIN : undefined;
      expect(applyIncident(first, reason, at, policy, requested)).toEqual(
        until === null
          ? null
          : {
              ...first,
              strikes: 1,
              blacklistedUntil: until,
              reason,
              probeGated: true,
              version: 2,
            },
      );
    },
  );

  it("during a timer-only blacklist a later-ending failure needing a probe gates it; a timer-only one does not", () => {
    const forbidden = applyIncident(HEALTHY, "forbidden", T0, policy) as ProviderHealth;
    expect(forbidden.probeGated).toBe(false);
    const chain = applyIncident(forbidden, "chain_unavailable", T0 + MIN, policy);
    expect(chain).toMatchObject({ reason: "chain_unavailable", probeGated: false, strikes: 1 });
    const timedOut = applyIncident(forbidden, "timeout", T0 + 24 * 60 * MIN - 1, policy);
    expect(timedOut).toMatchObject({ reason: "timeout", probeGated: true, strikes: 1 });
  });

  it("a failure during a later strike's blacklist is timed at that strike", () => {
    const third: ProviderHealth = {
      ...HEALTHY,
      strikes: 3,
      reason: "connection",
      blacklistedUntil: T0 + MIN,
      probeGated: true,
      version: 7,
    };
    // timeout at strike 3: 3 min × 4 = 12 min.
    expect(applyIncident(third, "timeout", T0, policy)).toMatchObject({
      strikes: 3,
      blacklistedUntil: T0 + 12 * MIN,
      version: 8,
    });
  });

  it("a later-expiring failure extends the expiry (e.g. a 403), an earlier one does not", () => {
    const first = applyIncident(HEALTHY, "connection", T0, policy) as ProviderHealth;
    expect(applyIncident(first, "batch_limit", T0 + 1000, policy)).toBeNull();
    const extended = applyIncident(first, "forbidden", T0 + 1000, policy);
    expect(extended).toMatchObject({
      strikes: 1,
      reason: "forbidden",
      blacklistedUntil: T0 + 1000 + 24 * 60 * MIN,
    });
  });

  it("an incident after expiry and probe pass is the next strike, doubling", () => {
    const first = applyIncident(HEALTHY, "timeout", T0, policy) as ProviderHealth;
    const passed = applyProbePass(first, { at: T0 + 3 * MIN, result: "pass", detail: "" });
    const second = applyIncident(passed, "timeout", T0 + 4 * MIN, policy);
    expect(second).toMatchObject({ strikes: 2, blacklistedUntil: T0 + 4 * MIN + 6 * MIN });
  });

  it("an incident while awaiting a probe changes nothing", () => {
    const first = applyIncident(HEALTHY, "timeout", T0, policy) as ProviderHealth;
    expect(healthState(first, T0 + 4 * MIN)).toBe("awaiting_probe");
    expect(applyIncident(first, "timeout", T0 + 4 * MIN, policy)).toBeNull();
  });

  it.each<[CooldownReason, "healthy" | "awaiting_probe"]>([
    ["rate_limit", "awaiting_probe"],
    ["connection", "awaiting_probe"],
    ["timeout", "awaiting_probe"],
    ["forbidden", "healthy"],
    ["chain_unavailable", "healthy"],
    ["force_rotate", "healthy"],
    ["slow", "healthy"],
  ])("after a %s blacklist expires the provider is %s", (reason, after) => {
    const health = applyIncident(HEALTHY, reason, T0, policy) as ProviderHealth;
    expect(healthState(health, health.blacklistedUntil - 1)).toBe("blacklisted");
    expect(healthState(health, health.blacklistedUntil)).toBe(after);
  });
});

describe("success and probes", () => {
  it("a success resets strikes", () => {
    const health: ProviderHealth = { ...HEALTHY, strikes: 3, version: 4 };
    expect(applySuccess(health, T0)).toMatchObject({ strikes: 0, version: 5 });
  });

  it("a success with no strikes writes nothing", () => {
    expect(applySuccess(HEALTHY, T0)).toBeNull();
  });

  it("a probe pass un-blacklists but keeps strikes until traffic succeeds", () => {
    const first = applyIncident(HEALTHY, "connection", T0, policy) as ProviderHealth;
    const probe = { at: T0 + 2 * MIN, result: "pass", detail: "ok" } as const;
    const passed = applyProbePass(first, probe);
    expect(healthState(passed, T0 + 2 * MIN)).toBe("healthy");
    expect(passed).toEqual({
      strikes: 1,
      reason: null,
      blacklistedUntil: 0,
      probeGated: false,
      lastProbe: probe,
      version: first.version + 1,
    });
  });

  it("a probe fail is the next strike with a doubled cooldown", () => {
    const first = applyIncident(HEALTHY, "connection", T0, policy) as ProviderHealth;
    const failed = applyProbeFail(
      first,
      { at: T0 + 2 * MIN, result: "fail", detail: "stuck" },
      T0 + 2 * MIN,
      policy,
    );
    expect(failed).toMatchObject({
      strikes: 2,
      blacklistedUntil: T0 + 2 * MIN + 4 * MIN,
      probeGated: true,
      version: first.version + 1,
    });
    expect(failed.lastProbe?.result).toBe("fail");
  });
});
