/**
 * `npm run bench`: the gateway measured as users run it and as Lambda runs it, each against
 * a baseline in the same run, with a verdict per target. Writes bench/results.json (the latest
 * result of every part) and the generated section of bench/RESULTS.md.
 *
 *   npm run bench -- [--only throughput,ab,handler,cold,cost,profile,replay,hedge,logs] [--dry-run]
 *     [--rounds 2] [--seconds 5] [--warmup 2]          local server (throughput, ab)
 *     [--handler-rounds 3] [--handler-count 5000]      handler CPU
 *     [--starts 9]                                      cold starts per handler
 *     [--cost-rates 20,2] [--cost-seconds 15]           cost
 *     [--hedge-rate 50] [--hedge-seconds 10] [--hedge-rounds 3] [--hedge-warmup 3]   hedge
 *
 *   throughput  local server: anvil, the undici pass-through and the gateway (`npm start`),
 *               wrk (or the autocannon CLI) from outside, c=1 and c=32
 *   ab          undici vs Node's http client: the local server at c=32, and the handler and
 *               cold parts measured with both clients (so `--only ab` re-measures those too)
 *   handler     CPU per request of the shipped proxy bundle invoked directly, vs a minimal
 *               middy handler forwarding with the same HTTP client
 *   cold        import and first request of both bundles, fresh processes
 *   cost        dollars per million requests at list prices, from the measured billed
 *               duration and DynamoDB calls
 *   profile     --cpu-prof of the handler and of the local server; the biggest costs
 *   replay      the answer cache: an indexer's three passes over finalized blocks across 4
 *               containers, upstream calls with the cache off and on, shared-tier reads, and
 *               what a memory hit adds over a request that needs no upstream
 *   hedge       hedged reads on and off side by side: p99 and upstream calls with a slow tail
 *               on one provider, and with every provider healthy
 *   logs        one eth_getLogs over a chain of anvil blocks with logs, through the gateway in
 *               front of providers capped at --logs-cap blocks, vs the node asked piece by piece
 *               [--logs-blocks 2000] [--logs-cap 200] [--logs-concurrency 4]
 *
 * Exits 1 when a measurement had errors (its figures are not a valid result).
 */
import { parseArgs } from "node:util";
import { ENVIRONMENTS } from "../infra/environments.ts";
import { type AnvilNode, startAnvil } from "../local/anvil.ts";
import { rpcEvent } from "../test/support/api-gateway-event.ts";
import type { UpstreamClientName } from "./bundles.ts";
import { COST_CALL } from "./cost.ts";
import { hedgeVerdicts, measureHedging } from "./hedge.ts";
import {
  buildVariants,
  type LambdaVariant,
  measureColdStarts,
  measureCost,
  measureHandlerCpu,
} from "./lambda.ts";
import { LAMBDA_NETWORK, type LambdaEnvironment, startLambdaEnvironment } from "./lambda-env.ts";
import { loadGenerator } from "./load.ts";
import { measureLogs } from "./logs.ts";
import { formatLoad, loadAverage, machineInfo } from "./machine.ts";
import { profileHandler, profileLocalServer, profilePacedHandler } from "./profiling.ts";
import { measureReplay, type ReplayRecord } from "./replay.ts";
import { addedLatency, renderReport, verdict, writeReport } from "./report.ts";
import {
  PART_NAMES,
  type PartMeta,
  type PartName,
  type Results,
  readResults,
  revision,
  type Verdict,
  writeResultsJson,
} from "./results.ts";
import {
  gatewayTarget,
  measureThroughput,
  type ThroughputRecord,
  WORKLOADS,
} from "./throughput.ts";

const RESULTS_MD = new URL("./RESULTS.md", import.meta.url).pathname;

const TARGETS = {
  throughputRatio: 0.8,
  addedLatencyRatio: 2,
  handlerCpuRatio: 1.5,
  coldRatio: 1.15,
  dollarsPerMillion: 1.25,
  replayUpstreamReduction: 0.5,
  memoryHitAddedMs: 0.2,
};

const args = (() => {
  try {
    return parseArgs({
      options: {
        only: { type: "string" },
        rounds: { type: "string", default: "2" },
        seconds: { type: "string", default: "5" },
        warmup: { type: "string", default: "2" },
        "handler-rounds": { type: "string", default: "3" },
        "handler-count": { type: "string", default: "5000" },
        starts: { type: "string", default: "9" },
        "cost-rates": { type: "string", default: "20,2" },
        "cost-seconds": { type: "string", default: "15" },
        "hedge-rate": { type: "string", default: "50" },
        "hedge-seconds": { type: "string", default: "10" },
        "hedge-rounds": { type: "string", default: "3" },
        "hedge-warmup": { type: "string", default: "3" },
        "logs-blocks": { type: "string", default: "2000" },
        "logs-cap": { type: "string", default: "200" },
        "logs-concurrency": { type: "string", default: "4" },
        "dry-run": { type: "boolean", default: false },
      },
    }).values;
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  }
})();

/** A wrong command line: reported as one line, without a stack trace. */
class UsageError extends Error {}

function whole(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new UsageError(`--${name} must be a whole number ≥ 1, not "${value}"`);
  }
  return parsed;
}

function selectedParts(): Set<PartName> {
  if (args.only === undefined) return new Set(PART_NAMES);
  const names = args.only.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !PART_NAMES.includes(name as PartName));
  if (unknown.length > 0) {
    throw new UsageError(`--only takes ${PART_NAMES.join(", ")}; not ${unknown.join(", ")}`);
  }
  return new Set(names as PartName[]);
}

const log = (line: string) => console.error(`bench: ${line}`);

function meta(loadAtStart: readonly number[]): PartMeta {
  return {
    date: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    revision: revision(),
    machine: machineInfo(),
    loadAtStart,
    loadAtEnd: loadAverage(),
  };
}

/**
 * The range of the same-round ratios, as text ("; rounds 0.71–0.93×"), or nothing with fewer
 * than two rounds: the noise a verdict was read through.
 */
function roundRatios(measured: readonly number[], baseline: readonly number[]): string {
  const ratios = measured.flatMap((value, index) => {
    const base = baseline[index];
    return base === undefined || base <= 0 ? [] : [value / base];
  });
  if (ratios.length < 2) return "";
  return `; rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
}

const validAll = (records: ReadonlyArray<ThroughputRecord | undefined>) =>
  records.every((r) => r !== undefined && r.problems.length === 0);

function throughputVerdicts(
  records: readonly ThroughputRecord[],
  latencyStepMs: number,
): Verdict[] {
  const primary = WORKLOADS[0]?.name ?? "";
  const find = (connections: number, target: string) =>
    records.find(
      (r) => r.workload === primary && r.connections === connections && r.target === target,
    );
  const gw32 = find(32, gatewayTarget("undici"));
  const pt32 = find(32, "pass-through");
  const throughput = gw32 && pt32 ? gw32.perSecond / pt32.perSecond : Number.NaN;
  const rounds = roundRatios(gw32?.roundPerSecond ?? [], pt32?.roundPerSecond ?? []);
  const serverCpu =
    gw32?.serverCpuUsPerRequest != null && pt32?.serverCpuUsPerRequest != null
      ? `; server CPU ${Math.round(gw32.serverCpuUsPerRequest)} vs ${Math.round(pt32.serverCpuUsPerRequest)} µs/req`
      : "";
  const added = addedLatency(records, primary, gatewayTarget("undici"));
  const addedRatio = added ? added.gateway / added.passthrough : Number.NaN;
  // Sub-millisecond differences need a load generator that reports them.
  const fineEnough = latencyStepMs <= 0.01;
  return [
    {
      target: `local server: throughput ≥ ${TARGETS.throughputRatio}× the pass-through's at c=32 (${primary})`,
      measured: `${Math.round(gw32?.perSecond ?? 0)} vs ${Math.round(pt32?.perSecond ?? 0)} req/s = ${throughput.toFixed(2)}×${rounds}${serverCpu}`,
      verdict: verdict(throughput >= TARGETS.throughputRatio, validAll([gw32, pt32])),
    },
    {
      target: `local server: added p50 at c=1 ≤ ${TARGETS.addedLatencyRatio}× the pass-through's (${primary})`,
      measured: added
        ? `+${added.gateway.toFixed(3)} ms vs +${added.passthrough.toFixed(3)} ms = ${addedRatio.toFixed(2)}×${fineEnough ? "" : " (the load generator reports whole ms: install wrk)"}`
        : "n/a",
      verdict: verdict(
        added !== undefined &&
          (added.gateway <= TARGETS.addedLatencyRatio * added.passthrough || added.gateway <= 0),
        fineEnough &&
          validAll([find(1, gatewayTarget("undici")), find(1, "pass-through"), find(1, "direct")]),
      ),
    },
  ];
}

function replayVerdicts(record: ReplayRecord): Verdict[] {
  const off = record.passes.reduce((sum, p) => sum + p.off.upstreamCalls, 0);
  const on = record.passes.reduce((sum, p) => sum + p.on.upstreamCalls, 0);
  const reduction = off === 0 ? Number.NaN : 1 - on / off;
  const valid = record.problems.length === 0;
  // Passes 2 and 3 ask only for what pass 1 stored: every call that was not a memory hit
  // looked in the shared tier, one read per request.
  const later = record.passes.filter((p) => p.pass > 1);
  const reads = later.reduce((sum, p) => sum + p.on.sharedReads, 0);
  const lookups = later.reduce(
    (sum, p) => sum + (p.on.statuses["hit-shared"] ?? 0) + (p.on.statuses.miss ?? 0),
    0,
  );
  const sharedHits = later.reduce((sum, p) => sum + (p.on.statuses["hit-shared"] ?? 0), 0);
  const { latency } = record;
  return [
    {
      target: `indexer replay across ${record.containers} containers: ≥ ${TARGETS.replayUpstreamReduction * 100} % fewer upstream calls than with the cache off`,
      measured: `${on} vs ${off} calls over 3 passes = ${(reduction * 100).toFixed(1)} % fewer`,
      verdict: verdict(reduction >= TARGETS.replayUpstreamReduction, valid),
    },
    {
      target: "indexer replay: answers identical with the cache on and off",
      measured: `${record.answersCompared - record.answersDiffering} of ${record.answersCompared} identical`,
      verdict: verdict(record.answersDiffering === 0 && record.answersCompared > 0, valid),
    },
    {
      target: "a shared hit costs one DynamoDB read",
      measured: `${reads} reads for ${lookups} shared lookups (${sharedHits} hits) in passes 2–3`,
      verdict: verdict(lookups > 0 && reads === lookups, valid),
    },
    {
      target: `a memory hit adds < ${TARGETS.memoryHitAddedMs} ms at p50 over a request that needs no upstream`,
      measured: `${latency.hitP50Ms.toFixed(3)} vs ${latency.noUpstreamP50Ms.toFixed(3)} ms = ${latency.addedP50Ms >= 0 ? "+" : "−"}${Math.abs(latency.addedP50Ms).toFixed(3)} ms`,
      verdict: verdict(latency.addedP50Ms < TARGETS.memoryHitAddedMs, latency.samples > 0),
    },
  ];
}

async function main(): Promise<number> {
  const parts = selectedParts();
  // Every number is checked before anything starts.
  const settings = {
    seconds: whole("seconds", args.seconds),
    rounds: whole("rounds", args.rounds),
    warmupSeconds: whole("warmup", args.warmup),
    handlerRounds: whole("handler-rounds", args["handler-rounds"]),
    count: whole("handler-count", args["handler-count"]),
    starts: whole("starts", args.starts),
    costSeconds: whole("cost-seconds", args["cost-seconds"]),
    rates: (args["cost-rates"] ?? "").split(",").map((rate) => whole("cost-rates", rate)),
    hedge: {
      rate: whole("hedge-rate", args["hedge-rate"]),
      seconds: whole("hedge-seconds", args["hedge-seconds"]),
      rounds: whole("hedge-rounds", args["hedge-rounds"]),
      warmupSeconds: whole("hedge-warmup", args["hedge-warmup"]),
    },
    logs: {
      blocks: whole("logs-blocks", args["logs-blocks"]),
      cap: whole("logs-cap", args["logs-cap"]),
      concurrency: whole("logs-concurrency", args["logs-concurrency"]),
    },
  };
  const { seconds, rounds, warmupSeconds } = settings;
  const loadAtStart = loadAverage();
  log(`load average at start ${formatLoad(loadAtStart)}; parts: ${[...parts].join(", ")}`);
  const results: Results = readResults();
  const clients: UpstreamClientName[] = parts.has("ab") ? ["undici", "node-http"] : ["undici"];
  const closers: Array<() => Promise<unknown>> = [];
  let invalid = false;
  try {
    // A live chain at Ethereum's pace, as users run the gateway: a block every 12 s. On a chain
    // that stands still nothing new is published, the served head stops being recent, and
    // eth_blockNumber goes to the provider every time, which no deployment sees.
    const anvil: AnvilNode = await startAnvil({ chainId: 31337, blockTimeSeconds: 12 });
    closers.push(() => anvil.stop());
    // A few blocks, so "latest" is not the genesis block.
    await anvil.rpc("anvil_mine", ["0xa"]);
    const load = loadGenerator();

    if (parts.has("throughput")) {
      const started = loadAverage();
      const records = await measureThroughput(
        anvil,
        load,
        {
          workloads: WORKLOADS,
          concurrencies: [1, 32],
          targets: ["direct", "pass-through", gatewayTarget("undici")],
          rounds,
          seconds,
          warmupSeconds,
        },
        log,
      );
      invalid ||= records.some((r) => r.problems.length > 0);
      results.throughput = {
        ...meta(started),
        loadGenerator: load.name,
        rounds,
        seconds,
        records,
        verdicts: throughputVerdicts(records, load.latencyStepMs),
      };
    }

    if (parts.has("ab")) {
      const started = loadAverage();
      const records = await measureThroughput(
        anvil,
        load,
        {
          // The call the gateway forwards every time: on a live chain eth_blockNumber is the
          // served head's, and no upstream client would be measured.
          workloads: WORKLOADS.filter((workload) => workload.name.includes("forwarded")),
          concurrencies: [32],
          targets: ["pass-through", gatewayTarget("undici"), gatewayTarget("node-http")],
          rounds,
          seconds,
          warmupSeconds,
        },
        log,
      );
      invalid ||= records.some((r) => r.problems.length > 0);
      results.ab = {
        ...meta(started),
        loadGenerator: load.name,
        rounds,
        seconds,
        records,
        verdicts: [],
      };
    }

    if (parts.has("replay")) {
      const started = loadAverage();
      const record = await measureReplay(log);
      invalid ||= record.problems.length > 0;
      results.replay = { ...meta(started), record, verdicts: replayVerdicts(record) };
    }

    const lambdaParts = (["handler", "cold", "cost", "profile", "ab"] as const).filter((p) =>
      parts.has(p),
    );
    if (lambdaParts.length > 0) {
      const environment: LambdaEnvironment = await startLambdaEnvironment(anvil.url);
      closers.push(() => environment.close());
      // What a container pays per request, and its first request, are measured on a call the
      // gateway forwards every time, as the baseline does: with the chain position written (as
      // deployed), eth_blockNumber is answered from the served head, an answer from memory
      // against a forward (or, on a stale one, a forward plus a served-head publication).
      const forwarded = rpcEvent(COST_CALL, LAMBDA_NETWORK);
      log("building the bundles");
      const variants = await buildVariants(clients, environment.configText);
      const of = (role: string, client: UpstreamClientName) =>
        variants.find((v) => v.role === role && v.client === client) as LambdaVariant;

      if (parts.has("handler") || parts.has("ab")) {
        const started = loadAverage();
        const { handlerRounds, count } = settings;
        const records = await measureHandlerCpu(
          environment,
          variants,
          { rounds: handlerRounds, warmup: 2000, count, event: forwarded },
          log,
        );
        const gateway = records.find((r) => r.role === "gateway" && r.client === "undici");
        const baseline = records.find((r) => r.role === "baseline" && r.client === "undici");
        const cpuRatio =
          gateway && baseline ? gateway.medianCpuUs / baseline.medianCpuUs : Number.NaN;
        results.handler = {
          ...meta(started),
          rounds: handlerRounds,
          count,
          records,
          verdicts: [
            {
              target: `handler CPU per request ≤ ${TARGETS.handlerCpuRatio}× a minimal middy handler's (same HTTP client, undici)`,
              measured: `${Math.round(gateway?.medianCpuUs ?? 0)} vs ${Math.round(baseline?.medianCpuUs ?? 0)} µs = ${cpuRatio.toFixed(2)}×${roundRatios(gateway?.cpuUs ?? [], baseline?.cpuUs ?? [])}`,
              verdict: verdict(cpuRatio <= TARGETS.handlerCpuRatio),
            },
          ],
        };
      }

      if (parts.has("cold") || parts.has("ab")) {
        const started = loadAverage();
        const { starts } = settings;
        await environment.writeChainPosition();
        const records = await measureColdStarts(
          environment,
          variants,
          { starts, event: forwarded },
          log,
        );
        const gateway = records.find((r) => r.role === "gateway" && r.client === "undici");
        const baseline = records.find((r) => r.role === "baseline" && r.client === "undici");
        // Judged on CPU time: what stretches on Lambda's share of a vCPU, and what other
        // people's load on this shared machine disturbs least.
        const importRatio =
          gateway && baseline ? gateway.medianImportCpuMs / baseline.medianImportCpuMs : Number.NaN;
        const totalRatio =
          gateway && baseline ? gateway.medianTotalCpuMs / baseline.medianTotalCpuMs : Number.NaN;
        results.cold = {
          ...meta(started),
          starts,
          records,
          verdicts: [
            {
              target: `cold start, import alone ≤ ${TARGETS.coldRatio}× the minimal handler's (CPU time)`,
              measured: `${gateway?.medianImportCpuMs.toFixed(0)} vs ${baseline?.medianImportCpuMs.toFixed(0)} ms = ${importRatio.toFixed(2)}× (bundles ${Math.round((gateway?.bytes ?? 0) / 1024)} vs ${Math.round((baseline?.bytes ?? 0) / 1024)} KB)`,
              verdict: verdict(importRatio <= TARGETS.coldRatio),
            },
            {
              target: `cold start, import + first request ≤ ${TARGETS.coldRatio}× the minimal handler's (CPU time)`,
              measured: `${gateway?.medianTotalCpuMs.toFixed(0)} vs ${baseline?.medianTotalCpuMs.toFixed(0)} ms = ${totalRatio.toFixed(2)}× (wall ${gateway?.medianTotalMs.toFixed(0)} vs ${baseline?.medianTotalMs.toFixed(0)} ms)`,
              verdict: verdict(totalRatio <= TARGETS.coldRatio),
            },
          ],
        };
      }

      if (parts.has("cost")) {
        const started = loadAverage();
        const memoryMb = ENVIRONMENTS.prod.proxy.memoryMb;
        const { costSeconds, rates } = settings;
        const records = await measureCost(
          environment,
          of("gateway", "undici"),
          { rates, seconds: costSeconds, memoryMb, event: forwarded },
          log,
        );
        const [headline] = records;
        results.cost = {
          ...meta(started),
          memoryMb,
          seconds: costSeconds,
          records,
          verdicts: headline
            ? [
                {
                  target: `cost ≤ $${TARGETS.dollarsPerMillion.toFixed(2)} per million requests, healthy provider (${headline.rate} requests/s per container, ${memoryMb} MB arm64)`,
                  measured: `$${headline.total.toFixed(4)} ($${headline.httpApi.toFixed(2)} API + $${headline.lambdaRequests.toFixed(2)} Lambda requests + $${headline.lambdaDuration.toFixed(4)} duration + $${headline.dynamo.toFixed(4)} DynamoDB)`,
                  verdict: verdict(headline.total <= TARGETS.dollarsPerMillion),
                },
              ]
            : [],
        };
      }

      if (parts.has("profile")) {
        const started = loadAverage();
        await environment.writeChainPosition();
        const handler = await profileHandler(environment, { event: forwarded, count: 20_000 }, log);
        await environment.writeChainPosition();
        const paced = await profilePacedHandler(
          environment,
          { event: forwarded, rate: 20, seconds: 15 },
          log,
        );
        const server = await profileLocalServer(anvil, load, { connections: 32, seconds: 10 }, log);
        results.profile = { ...meta(started), findings: [handler, paced, server] };
      }
    }

    if (parts.has("hedge")) {
      const started = loadAverage();
      const records = await measureHedging(settings.hedge, log);
      invalid ||= records.some((r) => r.problems.length > 0);
      results.hedge = {
        ...meta(started),
        options: settings.hedge,
        records,
        verdicts: hedgeVerdicts(records),
      };
    }

    if (parts.has("logs")) {
      const started = loadAverage();
      const measured = await measureLogs(settings.logs, log);
      const gateway = measured.records.filter((r) => r.scenario.startsWith("gateway"));
      results.logs = {
        ...meta(started),
        ...measured,
        verdicts: [
          {
            target: `a ${measured.blocks}-block eth_getLogs on providers capped at ${measured.cap} blocks returns exactly the node's logs`,
            measured: gateway
              .map(
                (r) =>
                  `${r.scenario}: ${r.logs} logs, ${r.upstreamCalls} calls, ${Math.round(r.ms)} ms`,
              )
              .join("; "),
            verdict: verdict(gateway.length > 0 && gateway.every((r) => r.identical)),
          },
        ],
      };
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }

  const report = renderReport(results);
  console.log(`\n${report}\n`);
  if (args["dry-run"]) log("--dry-run: bench/results.json and RESULTS.md not written");
  else {
    writeResultsJson(results);
    writeReport(RESULTS_MD, report);
    log("wrote bench/results.json and bench/RESULTS.md");
  }
  if (invalid) {
    log("some runs had errors: their figures are not valid results (see INVALID above)");
    return 1;
  }
  return 0;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping (every server and node this run started goes with it)`);
    process.exit(130);
  });
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  if (error instanceof UsageError) console.error(`bench: ${error.message}`);
  else console.error("bench: failed:", error);
}
process.exit(exitCode);
