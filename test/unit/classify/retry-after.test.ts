import { describe, expect, it } from "vitest";
import { retryAfterMs } from "../../../functions/core/classify/retry-after.ts";
import { applyIncident, cooldownPolicy, HEALTHY } from "../../../functions/core/health/health.ts";

/** `Retry-After` sets the cooldown a provider asked for (docs/behaviour.md §6.1). */

const NOW = Date.parse("2026-11-30T12:00:00Z");

describe("retryAfterMs", () => {
  it.each<[string | undefined, number | null]>([
    [undefined, null],
    ["2", 2000],
    [" 120 ", 120_000],
    ["0", 0],
    ["Mon, 30 Nov 2026 12:00:30 GMT", 30_000],
    ["Mon, 30 Nov 2026 11:59:00 GMT", 0],
    ["soon", null],
    ["-5", null],
    ["1.5", null],
    ["2026-11-30", null],
  ])("%s → %s", (header, expected) => {
    expect(retryAfterMs(header, NOW)).toBe(expected);
  });
});

describe("applyIncident with a requested cooldown", () => {
  const policy = cooldownPolicy({
    cooldown_seconds: {
      rate_limit: 300,
      quota: 300,
      timeout: 180,
      connection: 120,
      tls: 120,
      batch_limit: 60,
      transient: 60,
      slow: 120,
      force_rotate: 60,
      forbidden: 86_400,
      redirect: 120,
      chain_unavailable: 86_400,
      wrong_chain: 600,
      capability: 86_400,
      inconsistent: 300,
    },
    max_blacklist_minutes: 30,
  });

  it.each<[string, number | undefined, number]>([
    ["regression: Retry-After 2 gave a 300 s cooldown", 2000, 2000],
    ["no Retry-After: the base", undefined, 300_000],
    ["below a second: a second", 0, 1000],
    ["above the cap: the cap", 7_200_000, 1_800_000],
  ])("%s", (_name, requested, expected) => {
    const next = applyIncident(HEALTHY, "rate_limit", NOW, policy, requested);
    expect(next?.blacklistedUntil).toBe(NOW + expected);
    expect(next?.strikes).toBe(1);
  });
});
