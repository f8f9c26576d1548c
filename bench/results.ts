import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ConsensusPart } from "./targets/consensus.ts";
import type { HedgePart } from "./targets/hedge.ts";
import type { ColdStartRecord, CostRecord, HandlerCpuRecord } from "./targets/lambda.ts";
import type { LogsMeasurement } from "./targets/logs.ts";
import type { ReplayRecord } from "./targets/replay.ts";
import type { StagesPart } from "./targets/stages.ts";
import type { SubscriptionsPart } from "./targets/subscriptions-cost.ts";
import type { ThroughputRecord } from "./targets/throughput.ts";
import type { ProfileFindings } from "./tools/profiling.ts";
import type { PartMeta, Verdict } from "./verdict.ts";

/**
 * What the bench keeps between runs: bench/results.json holds the latest result of every
 * part, so `--only` re-measures some parts and the report still shows all of them, each with
 * the date, load and code it was measured on.
 */

const ROOT = resolve(import.meta.dirname, "..");
export const RESULTS_JSON = join(ROOT, "bench", "results.json");

export type PartName =
  | "throughput"
  | "handler"
  | "cold"
  | "cost"
  | "profile"
  | "replay"
  | "hedge"
  | "logs"
  | "stages"
  | "consensus"
  | "subscriptions";
export const PART_NAMES: readonly PartName[] = [
  "throughput",
  "handler",
  "cold",
  "cost",
  "profile",
  "replay",
  "hedge",
  "logs",
  "stages",
  "consensus",
  "subscriptions",
];

export interface ThroughputPart extends PartMeta {
  /** The commit the `against` target ran (`--against`), when one did. */
  readonly against?: string;
  readonly loadGenerator: string;
  readonly rounds: number;
  readonly seconds: number;
  readonly records: readonly ThroughputRecord[];
  readonly verdicts: readonly Verdict[];
}

export interface HandlerPart extends PartMeta {
  /** The commit of the `against` bundle (`--against`), when one was measured. */
  readonly against?: string;
  readonly rounds: number;
  readonly count: number;
  readonly records: readonly HandlerCpuRecord[];
  readonly verdicts: readonly Verdict[];
}

export interface ColdPart extends PartMeta {
  readonly starts: number;
  readonly records: readonly ColdStartRecord[];
  readonly verdicts: readonly Verdict[];
}

export interface CostPart extends PartMeta {
  readonly memoryMb: number;
  readonly seconds: number;
  readonly records: readonly CostRecord[];
  readonly verdicts: readonly Verdict[];
}

export interface ReplayPart extends PartMeta {
  readonly record: ReplayRecord;
  readonly verdicts: readonly Verdict[];
}

export interface LogsPart extends PartMeta, LogsMeasurement {
  readonly verdicts: readonly Verdict[];
}

export interface ProfilePart extends PartMeta {
  readonly findings: readonly ProfileFindings[];
}

/** Bumped when a part's shape changes: figures of another shape are dropped, not misread. */
const SCHEMA = 1;

export interface Results {
  schema?: number;
  throughput?: ThroughputPart;
  handler?: HandlerPart;
  cold?: ColdPart;
  cost?: CostPart;
  profile?: ProfilePart;
  replay?: ReplayPart;
  hedge?: HedgePart;
  logs?: LogsPart;
  stages?: StagesPart;
  consensus?: ConsensusPart;
  subscriptions?: SubscriptionsPart;
}

export function readResults(): Results {
  if (!existsSync(RESULTS_JSON)) return {};
  try {
    // `ab` is the settled undici/node-http A/B's part (bench/RESULTS.md, notes): not kept.
    const { ab: _settled, ...results } = JSON.parse(
      readFileSync(RESULTS_JSON, "utf8"),
    ) as Results & {
      ab?: unknown;
    };
    return results.schema === SCHEMA ? results : {};
  } catch {
    return {};
  }
}

export function writeResultsJson(results: Results): void {
  writeFileSync(RESULTS_JSON, `${JSON.stringify({ ...results, schema: SCHEMA }, null, 2)}\n`);
  // In the repository's format, so `npm run check` stays clean after a run.
  try {
    execFileSync(join(ROOT, "node_modules", ".bin", "biome"), ["format", "--write", RESULTS_JSON], {
      stdio: "ignore",
    });
  } catch {
    // Unformatted JSON is still valid JSON: the figures are kept either way.
  }
}

/** The commit measured, and which files of the shipped code differed from it. */
export function revision(): string {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" });
    const dirty = git("status", "--porcelain", "--", "functions", "local", "bench")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => line.slice(3))
      .filter((path) => !/^bench\/(results\.json|RESULTS\.md)$/.test(path));
    const head = `commit ${git("rev-parse", "--short", "HEAD").trim()}`;
    return dirty.length === 0 ? head : `${head} + uncommitted changes in ${dirty.join(", ")}`;
  } catch {
    return "commit unknown";
  }
}
