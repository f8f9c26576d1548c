/**
 * `npm run mutation [-- group...] [--force]`: StrykerJS over the modules that carry the
 * guarantees of docs/behaviour.md (test/mutation/groups.ts), one group at a time and one worker, so it
 * shares two cores with the rest of the team. Each group keeps its results in
 * reports/mutation/<group>.json (not committed: megabytes that change with every run): a re-run
 * after a small change tests only the mutants that change touched (`--force` tests them all;
 * needed after adding tests for a static mutant, which Stryker does not re-run otherwise).
 * Prints each group's score and survivors, and exits 1 when a group scores under 85 %. The
 * recorded figures: test/mutation/RESULTS.md.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GROUPS, type MutationGroup } from "../test/mutation/groups.ts";

const ROOT = join(import.meta.dirname, "..");
const STRYKER = join(ROOT, "node_modules/@stryker-mutator/core/bin/stryker.js");
const CONFIG = "test/mutation/stryker.config.json";
// Stryker's core and TypeScript checker need a compiler API TypeScript 7 no longer has.
const HOOK = join(ROOT, "test/mutation/classic-typescript/hook.ts");
const FLOOR = 85;

const args = process.argv.slice(2);
const force = args.includes("--force");
const unknown = args.filter((arg) => arg.startsWith("--") && arg !== "--force");
const names = args.filter((arg) => !arg.startsWith("--"));
const missing = names.filter((name) => !GROUPS.some((group) => group.name === name));
if (unknown.length > 0 || missing.length > 0) {
  console.error(
    `unknown ${[...unknown, ...missing].join(", ")}; usage: npm run mutation -- [--force] [group...]\ngroups: ${GROUPS.map((group) => group.name).join(", ")}`,
  );
  process.exit(2);
}
const chosen = names.length === 0 ? GROUPS : GROUPS.filter((group) => names.includes(group.name));

interface ReportMutant {
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly status: string;
  readonly location: { readonly start: { readonly line: number; readonly column: number } };
}
interface Report {
  readonly files: Record<string, { readonly mutants: readonly ReportMutant[] }>;
}

interface Summary {
  readonly group: string;
  readonly seconds: number;
  readonly counts: Record<string, number>;
  readonly score: number;
  readonly survivors: string[];
}

const incrementalFile = (group: MutationGroup) => `reports/mutation/${group.name}.json`;

function run(group: MutationGroup): Promise<number> {
  const options = [
    ...(process.env.NODE_OPTIONS ? [process.env.NODE_OPTIONS] : []),
    `--import=${HOOK}`,
  ].join(" ");
  const argv = [
    STRYKER,
    "run",
    CONFIG,
    "--mutate",
    group.mutate.join(","),
    "--incrementalFile",
    incrementalFile(group),
    ...(force ? ["--force"] : []),
  ];
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, NODE_OPTIONS: options, MUTATION_TESTS: group.tests.join(",") },
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? 1));
  });
}

async function summarize(group: MutationGroup, seconds: number): Promise<Summary> {
  const report = JSON.parse(await readFile(join(ROOT, incrementalFile(group)), "utf8")) as Report;
  const counts: Record<string, number> = {};
  const survivors: string[] = [];
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const mutant of mutants) {
      counts[mutant.status] = (counts[mutant.status] ?? 0) + 1;
      if (mutant.status === "Survived" || mutant.status === "NoCoverage") {
        const { line, column } = mutant.location.start;
        const replacement = (mutant.replacement ?? "").replace(/\s+/g, " ").slice(0, 80);
        survivors.push(
          `${file}:${line}:${column} ${mutant.mutatorName} ${mutant.status} → ${replacement}`,
        );
      }
    }
  }
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  return { group: group.name, seconds, counts, score, survivors };
}

const summaries: Summary[] = [];
for (const group of chosen) {
  console.log(`\n== mutation: ${group.name} (${group.promise})`);
  const started = Date.now();
  const code = await run(group);
  if (code !== 0) {
    console.error(`Stryker failed on ${group.name} (exit ${code})`);
    process.exit(1);
  }
  summaries.push(await summarize(group, Math.round((Date.now() - started) / 1000)));
}

console.log("\n== mutation scores");
for (const { group, seconds, counts, score, survivors } of summaries) {
  const tally = Object.entries(counts)
    .map(([status, count]) => `${status} ${count}`)
    .join(", ");
  console.log(`${group}: ${score.toFixed(2)} % (${tally}; ${seconds} s)`);
  for (const survivor of survivors) console.log(`  ${survivor}`);
}
const under = summaries.filter((summary) => summary.score < FLOOR);
if (under.length > 0) {
  console.error(`under ${FLOOR} %: ${under.map((summary) => summary.group).join(", ")}`);
  process.exit(1);
}
