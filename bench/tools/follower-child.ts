/**
 * The head follower's Lambda container, as the bench plays it: a fresh Node process imports
 * the follower's bundle and invokes it once with a scheduled event, as EventBridge does, its
 * context's remaining time set so the run lasts `seconds`. Run by the bench with a job in
 * argv[2] (JSON); writes the run's wall time, CPU time, time spent waiting for a core and the
 * handler's result as JSON to `job.out`. Imports nothing from the project, so it measures only
 * what the bundle loads.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

interface Job {
  readonly module: string;
  readonly seconds: number;
  readonly requestId: string;
  readonly out: string;
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

const job = JSON.parse(process.argv[2] ?? "{}") as Job;

/** The follower's run ends this long before the Lambda timeout (functions/core/follower/follow-run.ts). */
const LAMBDA_END_MARGIN_MS = 10_000;

const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/** Time this thread spent runnable but waiting for a core (Linux schedstat), in ms. */
const runQueueWaitMs = (): number => {
  try {
    const fields = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ");
    return Number(fields[1]) / 1e6;
  } catch {
    return 0;
  }
};

async function main(): Promise<Record<string, unknown>> {
  const { handler } = (await import(pathToFileURL(job.module).href)) as { handler: Handler };
  const started = performance.now();
  const endsAt = Date.now() + job.seconds * 1000 + LAMBDA_END_MARGIN_MS;
  const context = {
    awsRequestId: job.requestId,
    functionName: "bench-follower",
    functionVersion: "$LATEST",
    memoryLimitInMB: "256",
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => endsAt - Date.now(),
  };
  const event = {
    version: "0",
    id: job.requestId,
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "000000000000",
    time: new Date().toISOString(),
    region: "us-east-1",
    resources: [],
    detail: {},
  };
  const waitBefore = runQueueWaitMs();
  const cpuBefore = cpuMicros();
  const result = await handler(event, context);
  return {
    wallMs: performance.now() - started,
    cpuMs: (cpuMicros() - cpuBefore) / 1000,
    waitMs: runQueueWaitMs() - waitBefore,
    result,
  };
}

try {
  writeFileSync(job.out, JSON.stringify(await main()));
  process.exit(0);
} catch (error) {
  writeFileSync(job.out, JSON.stringify({ error: String(error) }));
  process.exit(1);
}
