import { writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { allPassed, type ChaosReport, describeMachine, renderChaosReport } from "./report.ts";
import { type ChaosSize, runMatrix, SIZES } from "./run.ts";
import { SCENARIOS } from "./scenarios.ts";
import { captureOutput, newChaosKey, SecretScanner } from "./secrets.ts";

/**
 * `npm run chaos`: the fault-injection matrix (test/chaos/), written to test/chaos/CHAOS.md.
 * `-- --quick` runs a smaller matrix with less traffic and writes to a temp file instead.
 * `-- --only a,b` picks scenarios; `-- --concurrency n` runs n at a time; `-- --out file`.
 */

const USAGE = "usage: npm run chaos [-- --quick] [--only name,…] [--concurrency n] [--out file]";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    concurrency: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(`${USAGE}\nscenarios: ${SCENARIOS.map((scenario) => scenario.name).join(", ")}`);
  process.exit(0);
}

const base: ChaosSize = values.quick ? SIZES.quick : SIZES.full;
const size: ChaosSize =
  values.concurrency === undefined
    ? base
    : { ...base, concurrency: Math.max(1, Number.parseInt(values.concurrency, 10) || 1) };
const only = values.only?.split(",").map((name) => name.trim());
const unknown = only?.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name));
if (unknown && unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(", ")}\n${USAGE}`);
  process.exit(2);
}
const scenarios = SCENARIOS.filter((scenario) =>
  only ? only.includes(scenario.name) : !values.quick || scenario.quick === true,
);
const out =
  values.out ??
  (values.quick || only
    ? join(os.tmpdir(), "rpc-gateway-chaos.md")
    : fileURLToPath(new URL("./CHAOS.md", import.meta.url)));

// Quiet per-request logs would hide nothing; info-level logs (failovers, blacklists, probes)
// are what the secret scan should see, so they stay on, captured rather than printed.
const secret = newChaosKey();
const scanner = new SecretScanner(secret);
const capture = captureOutput(scanner, { passThrough: false, overlap: secret.length });
const startedAt = new Date();
const loadAtStart = os.loadavg();
let exitCode = 1;
try {
  capture.print(
    `chaos: ${scenarios.length} scenarios, size ${size.name}, ${size.concurrency} at a time; load ${loadAtStart.map((n) => n.toFixed(2)).join(" / ")} on ${os.cpus().length} cores\n`,
  );
  const results = await runMatrix(scenarios, size, {
    scanner,
    secret,
    onResult: (result) => {
      const failed = result.verdicts.filter((verdict) => !verdict.pass);
      capture.print(
        `  ${result.pass ? "PASS" : "FAIL"} ${result.name} (${(result.durationMs / 1000).toFixed(1)} s)${result.harnessError ? `: harness: ${result.harnessError}` : ""}${failed.map((verdict) => `\n       ✗ ${verdict.target}: ${verdict.measured}`).join("")}\n`,
      );
    },
  });
  const report: ChaosReport = {
    startedAt,
    durationMs: Date.now() - startedAt.getTime(),
    command: `npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    size,
    machine: describeMachine(loadAtStart),
    results,
    secrets: scanner.summary(),
  };
  const markdown = renderChaosReport(report);
  // The report itself must not carry the key either.
  scanner.scan("stdout/stderr", markdown);
  const final: ChaosReport = { ...report, secrets: scanner.summary() };
  writeFileSync(out, renderChaosReport(final));
  const passed = results.filter((result) => result.pass).length;
  capture.print(
    `chaos: ${passed}/${results.length} scenarios PASS, key leaks ${final.secrets.leaks.length}; report: ${out}\n`,
  );
  exitCode = allPassed(final) ? 0 : 1;
} catch (error) {
  capture.print(
    `chaos: the harness failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  capture.print(`${capture.tail().slice(-20).join("\n")}\n`);
} finally {
  capture.restore();
}
process.exit(exitCode);
