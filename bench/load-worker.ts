import { performance } from "node:perf_hooks";
import { parentPort } from "node:worker_threads";
import autocannon from "autocannon";

/**
 * autocannon in a worker thread: the load generator gets its own event loop, so it does not
 * share one with the servers under test (which run on the main thread). One job at a time.
 */
export interface LoadJob {
  readonly url: string;
  readonly body: string;
  readonly connections: number;
  readonly durationSeconds: number;
}

export interface LoadResult {
  /** Every 2xx response's latency in ms (sub-millisecond precision, unlike autocannon's histogram). */
  readonly latenciesMs: Float64Array;
  readonly responses: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly mismatches: number;
  readonly resets: number;
  readonly statusCodes: Record<string, number>;
  readonly durationSeconds: number;
  /** Event loop utilisation of the load generator during the run (1 = saturated). */
  readonly loadgenElu: number;
  /** The first error and the first unexpected body, if any, for the report. */
  readonly firstError: string | null;
  readonly firstMismatch: string | null;
}

/** A JSON-RPC success: anything else (an error object, an HTML page) counts as a mismatch. */
const isRpcResult = (body: string): boolean =>
  body.includes('"result"') && !body.includes('"error"');

async function run(job: LoadJob): Promise<LoadResult> {
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let firstError: string | null = null;
  let firstMismatch: string | null = null;
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  const instance = autocannon({
    url: job.url,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: job.body,
    connections: job.connections,
    pipelining: 1,
    duration: job.durationSeconds,
    timeout: 10,
    verifyBody: isRpcResult,
  });
  instance.on("response", (_client, statusCode, _bytes, responseTimeMs) => {
    if (statusCode < 200 || statusCode >= 300) return;
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = responseTimeMs;
  });
  instance.on("reqError", (error) => {
    firstError ??= error.message;
  });
  instance.on("reqMismatch", (body) => {
    firstMismatch ??= body.slice(0, 300);
  });
  const result = await instance;
  const elapsedSeconds = (performance.now() - started) / 1000;
  const statusCodes: Record<string, number> = {};
  for (const [code, { count: n }] of Object.entries(result.statusCodeStats)) statusCodes[code] = n;
  return {
    latenciesMs: latencies.slice(0, count),
    responses: result.totalCompletedRequests,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
    resets: result.resets,
    statusCodes,
    durationSeconds: result.duration > 0 ? result.duration : elapsedSeconds,
    loadgenElu: performance.eventLoopUtilization(elu).utilization,
    firstError,
    firstMismatch,
  };
}

parentPort?.on("message", (job: LoadJob) => {
  run(job).then(
    (result) =>
      parentPort?.postMessage({ ok: true, result }, [result.latenciesMs.buffer as ArrayBuffer]),
    (error: unknown) =>
      parentPort?.postMessage({
        ok: false,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
  );
});
