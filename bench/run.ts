/**
 * `npm run bench`: the upstream directly, a plain pass-through proxy and the gateway, in one
 * run on the same anvil node, at concurrency 1 and 32. Results go to stdout and to the
 * generated section of bench/RESULTS.md. Exits 1 when a run had errors (not a valid result).
 *
 *   npm run bench -- [--rounds 2] [--duration 5] [--warmup 2] [--secondary-rounds 1]
 *                    [--secondary-duration 5] [--secondary-warmup 1] [--dry-run]
 *
 * Durations are in seconds, per round; a target's rounds are merged.
 */

import { execFileSync } from "node:child_process";
import { createWriteStream, mkdirSync, readFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { type AnvilNode, startAnvil } from "../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../local/stack.ts";
import type { LoadJob, LoadResult } from "./load-worker.ts";
import { startPassthrough } from "./passthrough.ts";
import {
  addedLatency,
  type DynamoCounts,
  dynamoReads,
  find,
  type GatewayOutput,
  type Machine,
  type RunRecord,
  renderReport,
  type TargetName,
  type Verdict,
  writeResults,
} from "./report.ts";

// Before the gateway creates its logger: info lines per request would distort the figures.
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_PATH = join(HERE, "RESULTS.md");
const TMP_DIR = join(HERE, ".tmp");
const CHAIN_ID = 31337;
const NETWORK = "bench";
const CONCURRENCIES = [1, 32] as const;

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "2" },
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    "secondary-rounds": { type: "string", default: "1" },
    "secondary-duration": { type: "string", default: "5" },
    "secondary-warmup": { type: "string", default: "1" },
    "dry-run": { type: "boolean", default: false },
  },
});

function seconds(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 1) {
    throw new Error(`--${name} must be a whole number ≥ 1, not "${value}"`);
  }
  return Math.round(parsed);
}

interface Workload {
  readonly name: string;
  readonly body: string;
  /** Rounds of (direct, pass-through, gateway), alternated so load changes hit all alike. */
  readonly rounds: number;
  /** Before a target's first round; later rounds warm up for 1 s (new connections). */
  readonly warmupSeconds: number;
  /** Measured per round. */
  readonly durationSeconds: number;
}

/** The primary workload decides the verdicts; the tiny answer makes the proxies' own cost most visible. */
const WORKLOADS: readonly Workload[] = [
  {
    name: "eth_blockNumber",
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    rounds: seconds("rounds", args.rounds),
    warmupSeconds: seconds("warmup", args.warmup),
    durationSeconds: seconds("duration", args.duration),
  },
  {
    name: "eth_getBlockByNumber",
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}',
    rounds: seconds("secondary-rounds", args["secondary-rounds"]),
    warmupSeconds: seconds("secondary-warmup", args["secondary-warmup"]),
    durationSeconds: seconds("secondary-duration", args["secondary-duration"]),
  },
];
const PRIMARY = WORKLOADS[0]?.name ?? "";

const TARGETS = {
  throughputRatio: 0.8,
  addedLatencyRatio: 2,
  readsPerRequest: 0.02,
};

// ---------------------------------------------------------------------------------------------
// Resources, stopped in reverse order at the end, on failure and on Ctrl-C.

const cleanups: Array<{ what: string; run: () => Promise<unknown> }> = [];
let cleaning: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const { what, run } of cleanups.reverse()) {
      try {
        await run();
      } catch (error) {
        console.error(`bench: stopping ${what} failed:`, error);
      }
    }
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\nbench: ${signal}, stopping everything`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** The bench's own stdout (the gateway's stdout is diverted to a file during the run). */
let print: (text: string) => void = (text) => process.stdout.write(text);

/** Lines the gateway wrote, by kind: see GatewayOutput in report.ts. */
const output: GatewayOutput = { emfWrite: 0, emfEmpty: 0, emfStdout: 0, otherStdout: 0 };

// ---------------------------------------------------------------------------------------------
// Measurement helpers.

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  return clockTicks;
}

/** CPU seconds used so far by a process or one thread (`/proc/PID/task/TID/stat`), Linux only. */
function cpuSeconds(statPath: string): number | null {
  if (process.platform !== "linux") return null;
  try {
    const stat = readFileSync(statPath, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  } catch {
    return null;
  }
}

/** CPU seconds the whole machine has been busy (all cores), from /proc/stat. */
function machineBusySeconds(): number | null {
  if (process.platform !== "linux") return null;
  try {
    const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    const busy = fields
      .slice(0, 8)
      .reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
    return busy / ticksPerSecond();
  } catch {
    return null;
  }
}

interface CpuSnapshot {
  /** The main thread: the pass-through, the gateway and dynalite run there. */
  readonly server: number | null;
  /** This whole process: the server thread, the load generator and Node's helper threads. */
  readonly process: number | null;
  readonly anvil: number | null;
  readonly machine: number | null;
}

function cpuSnapshot(anvilPid: number | undefined): CpuSnapshot {
  return {
    server: cpuSeconds(`/proc/${process.pid}/task/${process.pid}/stat`),
    process: cpuSeconds(`/proc/${process.pid}/stat`),
    anvil: anvilPid === undefined ? null : cpuSeconds(`/proc/${anvilPid}/stat`),
    machine: machineBusySeconds(),
  };
}

const delta = (after: number | null, before: number | null): number | null =>
  after === null || before === null ? null : after - before;

function runLoad(worker: Worker, job: LoadJob): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const done = () => {
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
    };
    const onMessage = (
      message: { ok: true; result: LoadResult } | { ok: false; error: string },
    ) => {
      done();
      if (message.ok) resolve(message.result);
      else reject(new Error(`load generator failed: ${message.error}`));
    };
    const onError = (error: Error) => {
      done();
      reject(error);
    };
    const onExit = (code: number) => {
      done();
      reject(new Error(`the load generator exited (code ${code})`));
    };
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(job);
  });
}

async function rpcResult(url: string, body: string): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  const answer = JSON.parse(text) as { result?: unknown; error?: unknown };
  if (answer.error !== undefined || answer.result === undefined) {
    throw new Error(`${url} did not answer a result: ${text.slice(0, 300)}`);
  }
  return answer.result;
}

function problemsOf(result: LoadResult): string[] {
  const problems: string[] = [];
  if (result.errors > 0) {
    problems.push(`${result.errors} errors (${result.timeouts} timeouts): ${result.firstError}`);
  }
  if (result.non2xx > 0)
    problems.push(`${result.non2xx} non-2xx ${JSON.stringify(result.statusCodes)}`);
  if (result.mismatches > 0) {
    problems.push(`${result.mismatches} answers without a result: ${result.firstMismatch}`);
  }
  if (result.responses === 0) problems.push("no response at all");
  return problems;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const loadAtStart = os.loadavg();
  const startedAt = new Date();
  console.error(
    `bench: load average at start ${loadAtStart.map((n) => n.toFixed(2)).join(" / ")} on ${os.cpus().length} cores`,
  );

  const anvil: AnvilNode = await startAnvil({ chainId: CHAIN_ID });
  cleanups.push({ what: "anvil", run: () => anvil.stop() });
  // A few blocks, so "latest" is not the genesis block; no interval mining (it adds noise).
  await anvil.rpc("anvil_mine", ["0xa"]);

  const passthrough = await startPassthrough(anvil.url);
  cleanups.push({ what: "pass-through", run: () => passthrough.close() });

  // What the gateway writes (EMF metric blobs through its `write` option, and anything it
  // prints on stdout: Powertools' own metric output, log lines) goes to files under
  // bench/.tmp and is counted: the serialising and writing are real work and stay measured,
  // but the bench's own stdout stays readable.
  mkdirSync(TMP_DIR, { recursive: true });
  const emfFile = createWriteStream(join(TMP_DIR, "metrics-emf.log"));
  const stdoutFile = createWriteStream(join(TMP_DIR, "gateway-stdout.log"));
  cleanups.push({
    what: "output files",
    run: () =>
      Promise.all([
        new Promise<void>((resolve) => emfFile.end(() => resolve())),
        new Promise<void>((resolve) => stdoutFile.end(() => resolve())),
      ]),
  });
  const originalWrite = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (text.startsWith('{"_aws"')) output.emfStdout++;
    else output.otherStdout++;
    const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
    return stdoutFile.write(text, callback);
  }) as typeof process.stdout.write;
  cleanups.push({
    what: "stdout",
    run: async () => {
      process.stdout.write = originalWrite;
    },
  });
  print = (text) => originalWrite.call(process.stdout, text);

  const stack: LocalStack = await startLocalStack({
    config: {
      check_interval_seconds: 15,
      networks: {
        [NETWORK]: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: anvil.url }] },
      },
    },
    writeMetrics: (line) => {
      if (line.includes('"Metrics":[]')) output.emfEmpty++;
      else output.emfWrite++;
      emfFile.write(`${line}\n`);
    },
  });
  cleanups.push({ what: "gateway stack", run: () => stack.close() });

  // Every HTTP attempt the gateway's DynamoDB client makes (the deserialize step runs per attempt).
  const dynamo: DynamoCounts = { Query: 0, GetItem: 0, UpdateItem: 0, other: 0 };
  stack.store.client.middlewareStack.add(
    (next, context) => async (input) => {
      const name = (context.commandName ?? "").replace(/Command$/, "");
      if (name === "Query" || name === "GetItem" || name === "UpdateItem") dynamo[name]++;
      else dynamo.other++;
      return next(input);
    },
    { step: "deserialize", name: "benchDynamoCounter" },
  );

  const worker = new Worker(new URL("./load-worker.ts", import.meta.url));
  cleanups.push({ what: "load generator", run: () => worker.terminate() });

  const urls: Record<TargetName, string> = {
    direct: anvil.url,
    "pass-through": passthrough.url,
    gateway: `${stack.url}/${NETWORK}`,
  };

  // Every target must give the same answer before anything is measured.
  for (const workload of WORKLOADS) {
    const expected = JSON.stringify(await rpcResult(urls.direct, workload.body));
    for (const target of ["pass-through", "gateway"] as const) {
      const got = JSON.stringify(await rpcResult(urls[target], workload.body));
      if (got !== expected) {
        throw new Error(`${target} answers ${workload.name} differently: ${got} vs ${expected}`);
      }
    }
  }

  const totalSeconds = WORKLOADS.reduce(
    (total, w) =>
      total +
      3 * CONCURRENCIES.length * (w.warmupSeconds + (w.rounds - 1) + w.rounds * w.durationSeconds),
    0,
  );
  console.error(`bench: measuring for about ${totalSeconds} s`);

  /** One measured window of one target. */
  interface Window {
    result: LoadResult;
    warmProblems: string[];
    serverElu: number;
    serverCpu: number | null;
    processCpu: number | null;
    anvilCpu: number | null;
    machineCpu: number | null;
    dynamo: DynamoCounts;
    output: GatewayOutput;
  }

  async function measure(
    url: string,
    body: string,
    connections: number,
    warmup: number,
    duration: number,
  ): Promise<Window> {
    const job = { url, body, connections };
    const warm = await runLoad(worker, { ...job, durationSeconds: warmup });
    const dynamoBefore = { ...dynamo };
    const outputBefore = { ...output };
    const cpuBefore = cpuSnapshot(anvil.process.pid);
    const elu = performance.eventLoopUtilization();
    const result = await runLoad(worker, { ...job, durationSeconds: duration });
    const serverElu = performance.eventLoopUtilization(elu).utilization;
    const cpuAfter = cpuSnapshot(anvil.process.pid);
    return {
      result,
      warmProblems: problemsOf(warm).map((problem) => `warm-up: ${problem}`),
      serverElu,
      serverCpu: delta(cpuAfter.server, cpuBefore.server),
      processCpu: delta(cpuAfter.process, cpuBefore.process),
      anvilCpu: delta(cpuAfter.anvil, cpuBefore.anvil),
      machineCpu: delta(cpuAfter.machine, cpuBefore.machine),
      dynamo: {
        Query: dynamo.Query - dynamoBefore.Query,
        GetItem: dynamo.GetItem - dynamoBefore.GetItem,
        UpdateItem: dynamo.UpdateItem - dynamoBefore.UpdateItem,
        other: dynamo.other - dynamoBefore.other,
      },
      output: {
        emfWrite: output.emfWrite - outputBefore.emfWrite,
        emfEmpty: output.emfEmpty - outputBefore.emfEmpty,
        emfStdout: output.emfStdout - outputBefore.emfStdout,
        otherStdout: output.otherStdout - outputBefore.otherStdout,
      },
    };
  }

  const sum = (values: ReadonlyArray<number | null>): number | null =>
    values.some((value) => value === null)
      ? null
      : values.reduce<number>((total, value) => total + (value ?? 0), 0);

  /** The rounds of one target merged into one record: every latency, every response. */
  function combine(
    workload: string,
    connections: number,
    target: TargetName,
    windows: Window[],
  ): RunRecord {
    const responses = windows.reduce((total, w) => total + w.result.responses, 0);
    const duration = windows.reduce((total, w) => total + w.result.durationSeconds, 0);
    const latencies = new Float64Array(
      windows.reduce((total, w) => total + w.result.latenciesMs.length, 0),
    );
    let offset = 0;
    for (const w of windows) {
      latencies.set(w.result.latenciesMs, offset);
      offset += w.result.latenciesMs.length;
    }
    latencies.sort();
    const serverCpu = sum(windows.map((w) => w.serverCpu));
    const processCpu = sum(windows.map((w) => w.processCpu));
    const anvilCpu = sum(windows.map((w) => w.anvilCpu));
    const machineCpu = sum(windows.map((w) => w.machineCpu));
    const total = <K extends string>(pick: (w: Window) => Record<K, number>): Record<K, number> => {
      const out = {} as Record<K, number>;
      for (const w of windows) {
        for (const [key, value] of Object.entries(pick(w)) as Array<[K, number]>) {
          out[key] = (out[key] ?? 0) + value;
        }
      }
      return out;
    };
    return {
      workload,
      connections,
      target,
      rounds: windows.length,
      responses,
      reqPerSec: responses / duration,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      durationSeconds: duration,
      problems: windows.flatMap((w, index) =>
        [...problemsOf(w.result), ...w.warmProblems].map(
          (problem) => `round ${index + 1}: ${problem}`,
        ),
      ),
      serverElu: windows.reduce((t, w) => t + w.serverElu * w.result.durationSeconds, 0) / duration,
      serverCpuUsPerRequest:
        serverCpu === null || responses === 0 ? null : (serverCpu * 1e6) / responses,
      anvilCores: anvilCpu === null ? null : anvilCpu / duration,
      otherCores:
        machineCpu === null || processCpu === null || anvilCpu === null
          ? null
          : Math.max(0, machineCpu - processCpu - anvilCpu) / duration,
      loadgenElu:
        windows.reduce((t, w) => t + w.result.loadgenElu * w.result.durationSeconds, 0) / duration,
      dynamo: target === "gateway" ? total((w) => w.dynamo) : null,
      output: target === "gateway" ? total((w) => w.output) : null,
    };
  }

  const runs: RunRecord[] = [];
  for (const workload of WORKLOADS) {
    for (const connections of CONCURRENCIES) {
      const windows: Record<TargetName, Window[]> = { direct: [], "pass-through": [], gateway: [] };
      for (let round = 1; round <= workload.rounds; round++) {
        // Alternated within each round, so a change in the machine's load hits all three alike.
        for (const target of ["direct", "pass-through", "gateway"] as const) {
          const window = await measure(
            urls[target],
            workload.body,
            connections,
            round === 1 ? workload.warmupSeconds : 1,
            workload.durationSeconds,
          );
          windows[target].push(window);
          const { result } = window;
          const problems = [...problemsOf(result), ...window.warmProblems];
          const sorted = result.latenciesMs.slice().sort();
          console.error(
            `bench: ${workload.name} c=${connections} round ${round} ${target.padEnd(12)} ${Math.round(result.responses / result.durationSeconds)} req/s  p50 ${percentile(sorted, 0.5).toFixed(3)} ms  p99 ${percentile(sorted, 0.99).toFixed(3)} ms  server CPU ${window.serverCpu === null ? "n/a" : Math.round((window.serverCpu * 1e6) / Math.max(1, result.responses))} µs/req${problems.length ? `  ⚠ INVALID: ${problems.join("; ")}` : ""}`,
          );
        }
      }
      for (const target of ["direct", "pass-through", "gateway"] as const) {
        runs.push(combine(workload.name, connections, target, windows[target]));
      }
    }
  }

  const machine: Machine = {
    cpu: os.cpus()[0]?.model ?? "unknown",
    cores: os.cpus().length,
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    date: startedAt.toISOString(),
    loadAtStart,
    loadAtEnd: os.loadavg(),
  };
  const verdicts = evaluate(runs);
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
  const first = WORKLOADS[0];
  const second = WORKLOADS[1];
  const generated = renderReport({
    machine,
    command,
    primary: PRIMARY,
    setup: [
      `Code: ${revision()}. Logging: POWERTOOLS_LOG_LEVEL=${process.env.POWERTOOLS_LOG_LEVEL}. Metrics: the gateway's EMF flushes run as in production (every 5 s); what it writes goes to bench/.tmp/metrics-emf.log and bench/.tmp/gateway-stdout.log.`,
      `Upstream: one anvil node (chain ${CHAIN_ID}, no interval mining, 10 blocks). Gateway: \`startLocalStack\` (API Gateway emulator + proxy handler + dynalite, one process) with one provider pointing at that node, default settings (state_cache_ms 1000). Pass-through: \`bench/passthrough.ts\`.`,
      `Load: autocannon ${autocannonVersion()} in a worker thread (its own event loop; the servers run on the main thread), pipelining 1, one fixed body per workload. Latency percentiles are exact, over every 2xx response of the measured window.`,
      `Per target and concurrency: ${describe(first)} for ${first?.name} (primary), ${describe(second)} for ${second?.name}. Rounds alternate the targets (direct, pass-through, gateway, direct, …) so a change in the machine's load hits all three alike; a target's rounds are merged (all latencies, all responses).`,
    ],
    runs,
    verdicts,
  });
  print(`\n${generated}\n`);
  if (args["dry-run"]) console.error("bench: --dry-run, RESULTS.md not written");
  else {
    writeResults(RESULTS_PATH, generated);
    console.error(`bench: wrote ${RESULTS_PATH}`);
  }
  const invalid = runs.filter((run) => run.problems.length > 0);
  if (invalid.length > 0) {
    console.error(
      `\n${"!".repeat(78)}\nbench: ${invalid.length} INVALID run(s), their figures are not valid results:\n${invalid.map((run) => `  ${run.workload} c=${run.connections} ${run.target}: ${run.problems.join("; ")}`).join("\n")}\n${"!".repeat(78)}`,
    );
    return 1;
  }
  return 0;
}

function describe(workload: Workload | undefined): string {
  if (!workload) return "";
  const rounds = workload.rounds;
  return `${rounds} round${rounds > 1 ? "s" : ""} of ${workload.durationSeconds} s measured (${rounds * workload.durationSeconds} s in all) after ${workload.warmupSeconds} s of warm-up${rounds > 1 ? " (1 s before later rounds)" : ""}`;
}

/** The commit measured, and which files of the gateway's code differed from it. */
function revision(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: join(HERE, ".."), encoding: "utf8" });
    // Porcelain lines are "XY path": the status columns may start with a space.
    const dirty = git("status", "--porcelain", "--", "functions", "local")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => line.slice(3));
    const head = `commit ${git("rev-parse", "--short", "HEAD").trim()}`;
    return dirty.length === 0
      ? `${head} (functions/ and local/ clean)`
      : `${head} + uncommitted changes in ${dirty.join(", ")}`;
  } catch {
    return "commit unknown";
  }
}

function autocannonVersion(): string {
  try {
    const path = join(HERE, "..", "node_modules", "autocannon", "package.json");
    return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
  } catch {
    return "";
  }
}

function evaluate(runs: readonly RunRecord[]): Verdict[] {
  const verdict = (ok: boolean, involved: ReadonlyArray<RunRecord | undefined>) =>
    involved.some((run) => run === undefined || run.problems.length > 0)
      ? "INVALID"
      : ok
        ? "PASS"
        : "FAIL";
  const gw32 = find(runs, PRIMARY, 32, "gateway");
  const pt32 = find(runs, PRIMARY, 32, "pass-through");
  const throughput = gw32 && pt32 ? gw32.reqPerSec / pt32.reqPerSec : Number.NaN;
  const added = addedLatency(runs, PRIMARY);
  const addedRatio = added ? added.gateway / added.passthrough : Number.NaN;
  const gatewayRuns = runs.filter((run) => run.target === "gateway" && run.dynamo !== null);
  const reads = gatewayRuns.map((run) => ({
    run,
    perRequest: run.dynamo && run.responses > 0 ? dynamoReads(run.dynamo) / run.responses : 0,
  }));
  const worst = reads.reduce<(typeof reads)[number] | undefined>(
    (max, entry) => (max === undefined || entry.perRequest > max.perRequest ? entry : max),
    undefined,
  );
  return [
    {
      name: `gateway throughput ≥ ${TARGETS.throughputRatio} × pass-through at c=32`,
      measured: `${Math.round(gw32?.reqPerSec ?? 0)} vs ${Math.round(pt32?.reqPerSec ?? 0)} req/s = ${throughput.toFixed(2)}×`,
      verdict: verdict(throughput >= TARGETS.throughputRatio, [gw32, pt32]),
    },
    {
      name: `gateway added p50 at c=1 ≤ ${TARGETS.addedLatencyRatio} × pass-through's`,
      measured: added
        ? `${added.gateway.toFixed(3)} ms vs ${added.passthrough.toFixed(3)} ms = ${addedRatio.toFixed(2)}×`
        : "n/a",
      verdict: verdict(
        added !== undefined &&
          (added.gateway <= TARGETS.addedLatencyRatio * added.passthrough || added.gateway <= 0),
        [
          find(runs, PRIMARY, 1, "gateway"),
          find(runs, PRIMARY, 1, "pass-through"),
          find(runs, PRIMARY, 1, "direct"),
        ],
      ),
    },
    {
      name: `DynamoDB reads (Query + GetItem) per request < ${TARGETS.readsPerRequest}, every gateway run`,
      measured: worst
        ? `worst ${worst.perRequest.toExponential(2)} (${worst.run.workload} c=${worst.run.connections}: ${worst.run.dynamo ? dynamoReads(worst.run.dynamo) : 0} reads / ${worst.run.responses} requests)`
        : "n/a",
      verdict: verdict(
        worst !== undefined && reads.every((entry) => entry.perRequest < TARGETS.readsPerRequest),
        gatewayRuns,
      ),
    },
  ];
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  console.error("bench: failed:", error);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
