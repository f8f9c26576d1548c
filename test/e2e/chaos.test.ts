import { beforeAll, describe, expect, it } from "vitest";
import type { Verdict } from "../chaos/figures.ts";
import { runMatrix, type ScenarioResult, SIZES } from "../chaos/run.ts";
import { SCENARIOS } from "../chaos/scenarios.ts";
import { captureOutput, newChaosKey, SecretScanner } from "../chaos/secrets.ts";

/**
 * The resilience proof in CI: the whole chaos matrix of `npm run chaos` (test/chaos/), every
 * scenario, with little traffic. Each scenario runs on its own anvil nodes, fault shims and
 * local stack with the monitor on, in real time; a few run at once. The targets: with at least
 * one healthy provider, 100 % success, no stale answer, failover within one attempt, and
 * traffic back on the primary after the fault; with every provider down, a JSON-RPC error for
 * every request (no hang) and service back after. The provider key shows up nowhere.
 */

// Info-level logs (failovers, blacklists, probes, quorum changes) are what the key scan must
// see, whatever the environment asks for.
process.env.POWERTOOLS_LOG_LEVEL = "INFO";

const secret = newChaosKey();
const scanner = new SecretScanner(secret);
const results = new Map<string, ScenarioResult>();
let outputTail: string[] = [];

beforeAll(async () => {
  // Everything the gateway writes goes through the key scan (and stays out of the test log).
  const capture = captureOutput(scanner, { passThrough: false, overlap: secret.length });
  try {
    for (const result of await runMatrix(SCENARIOS, SIZES.ci, { scanner, secret })) {
      results.set(result.name, result);
    }
  } finally {
    outputTail = capture.tail();
    capture.restore();
  }
}, 300_000);

function verdictOf(name: string, target: string): Verdict {
  const result = results.get(name);
  if (result === undefined) throw new Error(`scenario ${name} did not run`);
  if (result.harnessError !== null) {
    throw new Error(
      `scenario ${name}: the harness failed: ${result.harnessError}\n${outputTail.slice(-20).join("\n")}`,
    );
  }
  const verdict = result.verdicts.find((entry) => entry.target === target);
  if (verdict === undefined) throw new Error(`scenario ${name} has no verdict "${target}"`);
  return verdict;
}

function expectTarget(name: string, target: string): void {
  const verdict = verdictOf(name, target);
  const figures = results.get(name)?.figures;
  const samples = figures ? [...figures.failures, ...figures.staleSamples] : [];
  const detail = samples.map((sample) => JSON.stringify(sample)).join("\n");
  expect(verdict.pass, `${name}: ${target}: ${verdict.measured}\n${detail}`).toBe(true);
}

function check(name: string, target: string): void {
  it(target, () => expectTarget(name, target));
}

/**
 * Faults that freeze the primary's head: until the monitor sees it, the primary's answers fall
 * behind, by up to max_lag_seconds plus the detection allowance (one check interval, that
 * check's timeout, one block, the state cache); CONTRIBUTING.md's chaos matrix states that allowance. With any
 * other fault the answers come from providers that keep up, so none may be more than
 * max_lag_seconds plus the served head's trail behind: `latest` is pinned to the served head,
 * which by design trails the chain by one publication delay and a block (docs/behaviour.md
 * §10.2; 3 s was measured with every provider healthy, 4 s on a loaded CI machine).
 */
const HEAD_FAULTS = new Set(["stuck-head", "lagging-head"]);

function checkStaleness(name: string): void {
  if (HEAD_FAULTS.has(name)) {
    it("0 stale answers (none beyond max_lag_seconds + the detection allowance)", () =>
      expectTarget(name, "0 stale answers"));
    return;
  }
  it("0 stale answers (none more than max_lag_seconds plus the served head's trail behind)", () => {
    expectTarget(name, "0 stale answers");
    const stale = results.get(name)?.figures?.stale;
    expect(stale?.beyondTrail, `${name}: ${verdictOf(name, "0 stale answers").measured}`).toBe(0);
  });
}

describe.each(SCENARIOS.filter((scenario) => !scenario.allDown).map((scenario) => scenario.name))(
  "chaos %s (one healthy provider or more)",
  (name) => {
    check(name, "100 % success");
    checkStaleness(name);
    check(name, "failover within one attempt");
    check(name, "traffic returns to the primary");
  },
);

describe.each(SCENARIOS.filter((scenario) => scenario.allDown).map((scenario) => scenario.name))(
  "chaos %s (every provider down, then back)",
  (name) => {
    check(name, "100 % success before and after the outage");
    checkStaleness(name);
    check(name, "every outage request gets the gateway's own JSON-RPC answer, no hang");
    check(name, "service resumes after");
    check(name, "traffic returns to the primary");
  },
);

describe("chaos secret hygiene", () => {
  it("never shows the provider key in output, metrics, answers or status", () => {
    const summary = scanner.summary();
    // The scan saw real traffic from every source.
    for (const counter of Object.values(summary.scanned)) expect(counter.items).toBeGreaterThan(0);
    expect(summary.leaks).toEqual([]);
  });
});
