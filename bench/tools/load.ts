import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { ADDRESS_MARKER, type Workload } from "../targets/calls.ts";

/**
 * The load generator, an external process as a user would point one at the gateway: wrk when
 * it is installed (Debian: `apt-get install -y wrk`), else the autocannon CLI (a
 * devDependency). One JSON-RPC POST body per workload (with wrk, a new address in every call
 * of a workload that varies), keep-alive connections, no pipelining.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const TMP = join(ROOT, "bench", ".tmp");
const run = promisify(execFile);

export interface LoadJob {
  readonly url: string;
  readonly workload: Workload;
  readonly connections: number;
  readonly seconds: number;
}

export interface LoadResult {
  readonly requests: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Connection errors, timeouts and non-2xx answers: a run with any is not a valid result. */
  readonly problems: readonly string[];
}

export interface LoadGenerator {
  /** Name and version, for the report. */
  readonly name: string;
  /** The smallest latency step it reports, ms (autocannon's CLI reports whole ms). */
  readonly latencyStepMs: number;
  run(job: LoadJob): Promise<LoadResult>;
}

/**
 * wrk's Lua hooks: a POST of the body from the environment, figures as one JSON line. A body
 * that varies comes as the text around its address: each call gets the run's seed and its
 * sequence number in 16 hex digits (as calls.ts's bodyOf builds it).
 */
const WRK_SCRIPT = `
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
local prefix = os.getenv("BENCH_BODY_PREFIX")
local suffix = os.getenv("BENCH_BODY_SUFFIX")
local seed = os.getenv("BENCH_SEED")
if os.getenv("BENCH_VARIES") ~= "1" then
  wrk.body = prefix
else
  local sequence = 0
  request = function()
    sequence = sequence + 1
    return wrk.format(nil, nil, nil, prefix .. seed .. string.format("%016x", sequence) .. suffix)
  end
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '@@{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;

/** wrk if it is installed, else the autocannon CLI. */
export function loadGenerator(): LoadGenerator {
  const wrk = wrkVersion();
  return wrk !== null
    ? { name: wrk, latencyStepMs: 0.001, run: runWrk }
    : autocannonLoad("wrk is not installed");
}

export function autocannonLoad(why: string): LoadGenerator {
  return {
    name: `autocannon ${autocannonVersion()} (CLI; ${why})`,
    latencyStepMs: 1,
    run: runAutocannon,
  };
}

function wrkVersion(): string | null {
  try {
    // wrk prints its version and usage, then exits 1.
    execFileSync("wrk", ["--version"], { encoding: "utf8", stdio: "pipe" });
  } catch (error) {
    const output = String((error as { stdout?: unknown }).stdout ?? "");
    const match = /^wrk (\S+)/.exec(output);
    if (match?.[1]) return `wrk ${match[1]}`;
    return null;
  }
  return "wrk";
}

async function runWrk(job: LoadJob): Promise<LoadResult> {
  mkdirSync(TMP, { recursive: true });
  const script = join(TMP, "wrk-post.lua");
  writeFileSync(script, WRK_SCRIPT);
  const { body, varies } = job.workload;
  const [prefix, suffix = ""] = varies ? body.split(ADDRESS_MARKER) : [body];
  const { stdout } = await run(
    "wrk",
    ["-t1", `-c${job.connections}`, `-d${job.seconds}s`, "--timeout", "10s", "-s", script, job.url],
    {
      env: {
        ...process.env,
        BENCH_BODY_PREFIX: prefix,
        BENCH_BODY_SUFFIX: suffix,
        BENCH_VARIES: varies ? "1" : "0",
        // Drawn per run: no address repeats across runs (warm-up, rounds, targets).
        BENCH_SEED: randomBytes(12).toString("hex"),
      },
      timeout: (job.seconds + 30) * 1000,
    },
  );
  const line = stdout.split("\n").find((text) => text.startsWith("@@"));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const figures = JSON.parse(line.slice(2)) as Record<string, number>;
  const seconds = (figures.duration_us ?? 0) / 1e6;
  const requests = figures.requests ?? 0;
  const problems: string[] = [];
  for (const kind of ["connect", "read", "write", "timeout"] as const) {
    if ((figures[kind] ?? 0) > 0) problems.push(`${figures[kind]} ${kind} errors`);
  }
  if ((figures.status ?? 0) > 0) problems.push(`${figures.status} answers with HTTP status ≥ 400`);
  if (requests === 0) problems.push("no answer at all");
  return {
    requests,
    seconds,
    perSecond: seconds > 0 ? requests / seconds : 0,
    p50Ms: (figures.p50_us ?? Number.NaN) / 1000,
    p99Ms: (figures.p99_us ?? Number.NaN) / 1000,
    problems,
  };
}

async function runAutocannon(job: LoadJob): Promise<LoadResult> {
  if (job.workload.varies) {
    const problem = "autocannon's CLI sends one fixed body: a call that varies needs wrk";
    return { requests: 0, seconds: 0, perSecond: 0, p50Ms: 0, p99Ms: 0, problems: [problem] };
  }
  const { stdout } = await run(
    join(ROOT, "node_modules", ".bin", "autocannon"),
    [
      "--json",
      "-c",
      String(job.connections),
      "-d",
      String(job.seconds),
      "-m",
      "POST",
      "-H",
      "content-type=application/json",
      "-b",
      job.workload.body,
      "-t",
      "10",
      job.url,
    ],
    { timeout: (job.seconds + 30) * 1000, maxBuffer: 16 * 1024 * 1024 },
  );
  const result = JSON.parse(stdout) as {
    duration: number;
    requests: { total: number };
    latency: { p50: number; p99: number };
    errors: number;
    timeouts: number;
    non2xx: number;
  };
  const problems: string[] = [];
  if (result.errors > 0) problems.push(`${result.errors} errors (${result.timeouts} timeouts)`);
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx answers`);
  if (result.requests.total === 0) problems.push("no answer at all");
  return {
    requests: result.requests.total,
    seconds: result.duration,
    perSecond: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    problems,
  };
}

function autocannonVersion(): string {
  try {
    const output = execFileSync(join(ROOT, "node_modules", ".bin", "autocannon"), ["--version"], {
      encoding: "utf8",
    });
    return /autocannon v?(\S+)/.exec(output)?.[1] ?? "";
  } catch {
    return "";
  }
}
