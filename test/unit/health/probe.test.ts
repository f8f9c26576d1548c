import { describe, expect, it } from "vitest";
import {
  type ProbeCall,
  type ProbeHealth,
  type ProbePlanInput,
  probePlan,
  probeVerdict,
  providersToProbe,
} from "../../../functions/core/health/probe.ts";

const NOW = 1_800_000_000_000;

describe("probePlan", () => {
  it.each<{ name: string; input: ProbePlanInput; compareWith: string | null }>([
    {
      name: "compares with the active provider",
      input: { candidate: "a", providers: ["a", "b"], activeProvider: "b", activeAvailable: true },
      compareWith: "b",
    },
    {
      name: "skips step 2 for a lone provider",
      input: { candidate: "a", providers: ["a"], activeProvider: "a", activeAvailable: true },
      compareWith: null,
    },
    {
      name: "skips step 2 without an active provider",
      input: {
        candidate: "a",
        providers: ["a", "b"],
        activeProvider: null,
        activeAvailable: false,
      },
      compareWith: null,
    },
    {
      name: "skips step 2 when the active provider is unavailable",
      input: { candidate: "a", providers: ["a", "b"], activeProvider: "b", activeAvailable: false },
      compareWith: null,
    },
    {
      name: "skips step 2 when the candidate is the active provider",
      input: { candidate: "a", providers: ["a", "b"], activeProvider: "a", activeAvailable: true },
      compareWith: null,
    },
  ])("$name", ({ input, compareWith }) => {
    expect(probePlan(input)).toEqual({ compareWith });
  });
});

const block = (timestamp: number): ProbeCall => ({ number: 100, timestamp });

describe("probeVerdict", () => {
  it.each<{
    name: string;
    candidate: ProbeCall;
    reference: ProbeCall | null;
    result: "pass" | "fail";
    detail: string;
  }>([
    {
      name: "candidate errors: fail",
      candidate: { error: "connection refused" },
      reference: block(5000),
      result: "fail",
      detail: "no answer: connection refused",
    },
    {
      name: "candidate errors without a reference: fail",
      candidate: { error: "timeout" },
      reference: null,
      result: "fail",
      detail: "no answer: timeout",
    },
    {
      name: "step 2 skipped: alive is enough",
      candidate: block(1000),
      reference: null,
      result: "pass",
      detail: "alive at block 100",
    },
    {
      name: "reference errors: alive is enough",
      candidate: block(1000),
      reference: { error: "timeout" },
      result: "pass",
      detail: "alive at block 100; backup did not answer, so not compared",
    },
    {
      name: "exactly 60 s behind: pass",
      candidate: block(4940),
      reference: block(5000),
      result: "pass",
      detail: "alive at block 100, up to date with backup",
    },
    {
      name: "61 s behind: fail",
      candidate: block(4939),
      reference: block(5000),
      result: "fail",
      detail: "61 s behind backup",
    },
    {
      name: "ahead of the reference: pass",
      candidate: block(5100),
      reference: block(5000),
      result: "pass",
      detail: "alive at block 100, up to date with backup",
    },
  ])("$name", ({ candidate, reference, result, detail }) => {
    expect(
      probeVerdict({ candidate, reference, referenceName: "backup", maxLagSeconds: 60 }),
    ).toEqual({
      result,
      detail,
    });
  });

  it("names the reference generically when no name is given", () => {
    expect(
      probeVerdict({ candidate: block(4000), reference: block(5000), maxLagSeconds: 60 }).detail,
    ).toBe("1000 s behind the active provider");
  });
});

const healthy = (provider: string): ProbeHealth => ({
  provider,
  awaitingProbe: false,
  probeInFlightUntil: 0,
});

describe("providersToProbe", () => {
  it.each<{ name: string; health: ProbeHealth[]; expected: string[] }>([
    {
      name: "every provider healthy: nothing to probe",
      health: [healthy("a"), healthy("b")],
      expected: [],
    },
    { name: "no providers: nothing to probe", health: [], expected: [] },
    {
      name: "awaiting a probe, none in flight",
      health: [healthy("a"), { provider: "b", awaitingProbe: true, probeInFlightUntil: 0 }],
      expected: ["b"],
    },
    {
      name: "awaiting, but a probe is in flight",
      health: [{ provider: "b", awaitingProbe: true, probeInFlightUntil: NOW + 1 }],
      expected: [],
    },
    {
      name: "awaiting, the in-flight lease ended exactly now",
      health: [{ provider: "b", awaitingProbe: true, probeInFlightUntil: NOW }],
      expected: ["b"],
    },
    {
      name: "several awaiting: all of them, in order",
      health: [
        { provider: "c", awaitingProbe: true, probeInFlightUntil: 0 },
        healthy("a"),
        { provider: "b", awaitingProbe: true, probeInFlightUntil: NOW - 1 },
      ],
      expected: ["c", "b"],
    },
  ])("$name", ({ health, expected }) => {
    expect(providersToProbe(health, NOW)).toEqual(expected);
  });
});
