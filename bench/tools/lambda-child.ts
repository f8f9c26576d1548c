/**
 * One Lambda container, as the bench plays it: a fresh Node process imports a handler module
 * (a bundle, or a source file under tsx for readable profiles) and invokes it with API Gateway
 * events one at a time, as Lambda does. Run by the bench with a job in argv[2] (JSON); writes
 * its figures as JSON to `job.out`. Imports nothing from the project, so it measures only
 * what the handler module loads.
 *
 *   cold   import, then the first invocation (config, state, upstream): wall time, CPU time
 *          and time spent waiting for a core, each
 *   loop   after `warmup` invocations, CPU and wall time of `count` back-to-back ones
 *   paced  `rate` invocations a second for `seconds`, after `warmup` at the same pace: each
 *          one's wall time, CPU time and time spent waiting for a core (what a billed duration
 *          is estimated from)
 */
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

interface Job {
  readonly module: string;
  readonly mode: "cold" | "loop" | "paced";
  readonly event: unknown;
  readonly addressMarker?: string;
  readonly out: string;
  readonly warmup?: number;
  readonly count?: number;
  readonly rate?: number;
  readonly seconds?: number;
}

interface HandlerResult {
  readonly statusCode?: number;
  readonly body?: string;
}
type Handler = (event: unknown, context: unknown) => Promise<HandlerResult>;

const job = JSON.parse(process.argv[2] ?? "{}") as Job;

const context = {
  awsRequestId: "bench",
  functionName: "bench",
  functionVersion: "$LATEST",
  memoryLimitInMB: "1024",
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 29_000,
};

/** This container's addresses start with it: no two invocations, nor two runs, share one. */
const seed = randomBytes(12).toString("hex");
let sequence = 0;

/**
 * The job's event; with `addressMarker`, a new one each time whose body names a new address,
 * built as bench/targets/calls.ts builds it (Lambda hands every invocation an event of its own).
 */
function nextEvent(): unknown {
  const marker = job.addressMarker;
  if (marker === undefined) return job.event;
  sequence++;
  const event = job.event as { readonly body: string };
  const address = `${seed}${sequence.toString(16).padStart(16, "0")}`;
  return { ...event, body: event.body.replace(marker, address) };
}

let checked = 0;
/** Every answer must be a JSON-RPC result: a failing run measures nothing worth reporting. */
async function invoke(handler: Handler): Promise<void> {
  const result = await handler(nextEvent(), context);
  if (result.statusCode !== 200 || !result.body?.includes('"result"')) {
    throw new Error(`unexpected answer: ${result.statusCode} ${result.body?.slice(0, 300)}`);
  }
  checked++;
}

const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/**
 * Time this thread spent runnable but waiting for a core (Linux schedstat), in ms: on a shared
 * machine that is other people's load, which a Lambda container would not wait for.
 */
const runQueueWaitMs = (): number => {
  try {
    const fields = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ");
    return Number(fields[1]) / 1e6;
  } catch {
    return 0;
  }
};

async function main(): Promise<Record<string, unknown>> {
  const importWaitBefore = runQueueWaitMs();
  const importCpuBefore = cpuMicros();
  const importStarted = performance.now();
  const loaded = (await import(pathToFileURL(job.module).href)) as {
    handler: Handler;
    /** The staged handler's (staged-handler.ts): what each stage of the pipeline took. */
    resetStageTimings?: () => void;
    stageTimings?: () => unknown;
  };
  const { handler } = loaded;
  const importMs = performance.now() - importStarted;
  const importCpuMs = (cpuMicros() - importCpuBefore) / 1000;
  const importWaitMs = runQueueWaitMs() - importWaitBefore;

  if (job.mode === "cold") {
    const waitBefore = runQueueWaitMs();
    const cpuBefore = cpuMicros();
    const started = performance.now();
    await invoke(handler);
    return {
      importMs,
      importCpuMs,
      importWaitMs,
      firstRequestMs: performance.now() - started,
      firstRequestCpuMs: (cpuMicros() - cpuBefore) / 1000,
      firstRequestWaitMs: runQueueWaitMs() - waitBefore,
    };
  }

  if (job.mode === "loop") {
    for (let i = 0; i < (job.warmup ?? 0); i++) await invoke(handler);
    loaded.resetStageTimings?.();
    const count = job.count ?? 1000;
    const measuredFrom = Date.now();
    const cpuBefore = cpuMicros();
    const started = performance.now();
    for (let i = 0; i < count; i++) await invoke(handler);
    const wallMs = performance.now() - started;
    return {
      count,
      measuredFrom,
      measuredTo: Date.now(),
      // Since the process started, as a CPU profile counts: the window to read in one.
      sinceStartMs: [started, started + wallMs],
      cpuUsPerRequest: (cpuMicros() - cpuBefore) / count,
      wallMsPerRequest: wallMs / count,
      ...(loaded.stageTimings ? { stages: loaded.stageTimings() } : {}),
    };
  }

  // paced: the container idles between requests, as one does at a modest request rate.
  const rate = job.rate ?? 20;
  const total = Math.max(1, Math.round(rate * (job.seconds ?? 10)));
  await invoke(handler); // the cold start is not part of the steady-state cost
  // Neither are a new container's one-offs in its first seconds (the first collection of the
  // start-up garbage: 30-50 ms once, at about 2.5 s), which a container pays once in its life.
  const warmupStarted = performance.now();
  for (let i = 0; i < (job.warmup ?? 0); i++) {
    const wait = warmupStarted + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await invoke(handler);
  }
  const durationsMs: number[] = [];
  const cpuMs: number[] = [];
  const waitMs: number[] = [];
  const measuredFrom = Date.now();
  const cpuBefore = cpuMicros();
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const cpuStart = cpuMicros();
    const waitStart = runQueueWaitMs();
    const begun = performance.now();
    await invoke(handler);
    durationsMs.push(performance.now() - begun);
    waitMs.push(runQueueWaitMs() - waitStart);
    cpuMs.push((cpuMicros() - cpuStart) / 1000);
  }
  return {
    count: total,
    measuredFrom,
    measuredTo: Date.now(),
    sinceStartMs: [started, performance.now()],
    seconds: (performance.now() - started) / 1000,
    durationsMs,
    cpuMs,
    waitMs,
    cpuUsPerRequest: (cpuMicros() - cpuBefore) / total,
  };
}

try {
  const figures = await main();
  writeFileSync(job.out, JSON.stringify({ ok: true, checked, ...figures }));
  process.exit(0);
} catch (error) {
  writeFileSync(
    job.out,
    JSON.stringify({ ok: false, error: error instanceof Error ? error.stack : String(error) }),
  );
  process.exit(1);
}
