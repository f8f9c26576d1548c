import { describe, expect, it } from "vitest";
import { verdicts } from "./analysis.ts";
import type { ScenarioFigures } from "./figures.ts";

/**
 * The chaos matrix's "failover within one attempt" target: the first op that met the fault
 * gets its answer from another provider in the attempt after the failed one. A log query near
 * the head may also make its completeness check's own call, which `x-gateway-attempts` counts
 * (docs/behaviour.md §12.10): one more call for a `logs` op, and only for one.
 */

type FirstHit = NonNullable<ScenarioFigures["failover"]["firstHit"]>;

function figuresWith(firstHit: FirstHit | null): ScenarioFigures {
  return {
    ops: { total: 10, calls: 10, before: 4, fault: 4, after: 2 },
    success: { ok: 10, total: 10 },
    wrong: 0,
    stale: { count: 0, strict: 0, beyondTrail: 0, maxSeconds: 0, afterVerdict: 0 },
    failover: {
      ms: firstHit === null ? null : 40,
      attempts: firstHit?.attempts ?? null,
      via: firstHit?.providers ?? null,
      firstHit,
      maxAttemptsDuringFault: firstHit?.attempts ?? 0,
      retriedOps: 1,
    },
    returnMs: 100,
    observed: { maxStrikes: 1, blacklists: [], quorumReasons: [], probes: { pass: 0, fail: 0 } },
    latencyMs: { p50: 1, p99: 2, max: 3 },
    allDown: null,
    failures: [],
    staleSamples: [],
    logs: { checked: 0, mismatches: 0, samples: [] },
  };
}

function failoverVerdict(firstHit: FirstHit | null): boolean {
  const verdict = verdicts(figuresWith(firstHit), false).find(
    (entry) => entry.target === "failover within one attempt",
  );
  if (verdict === undefined) throw new Error("no failover verdict");
  return verdict.pass;
}

const hit = (extraAttempts: number, kind: string, ok = true): FirstHit => ({
  ok,
  attempts: extraAttempts + 1,
  extraAttempts,
  providers: "secondary",
  kind,
  calls: 1,
});

describe("the failover target", () => {
  it.each([
    ["the next attempt answers", hit(1, "blockLatest"), true],
    ["no retry was needed (the fault missed the op)", hit(0, "balance"), true],
    ["a second extra attempt on a block read", hit(2, "blockLatest"), false],
    ["a second extra call on a log query (its check's own)", hit(2, "logs"), true],
    ["a third extra call on a log query", hit(3, "logs"), false],
    ["the first hit failed", hit(1, "balance", false), false],
    ["no failover seen", null, false],
  ])("%s", (_, firstHit, pass) => {
    expect(failoverVerdict(firstHit)).toBe(pass);
  });
});
