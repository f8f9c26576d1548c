/**
 * `npm run bench`: the gateway measured as users run it and as Lambda runs it, each against
 * a baseline in the same run, with a verdict per target. Writes bench/results.json (the latest
 * result of every part) and the generated section of bench/RESULTS.md.
 *
 *   npm run bench -- [--only throughput,handler,cold,cost,profile,replay,hedge,logs,stages,consensus]
 *     [--dry-run] [--against REV]
 *     [--rounds 2] [--seconds 5] [--warmup 2]          local server (throughput)
 *     [--handler-rounds 3] [--handler-count 5000]      handler CPU
 *     [--starts 9]                                      cold starts per handler
 *     [--cost-rates 20,2] [--cost-seconds 15]           cost
 *     [--hedge-rate 50] [--hedge-seconds 10] [--hedge-rounds 3] [--hedge-warmup 3]   hedge
 *     [--consensus-rate 50] [--consensus-seconds 8] [--consensus-rounds 3]           consensus
 *
 *   throughput  local server: anvil, the undici pass-through and the gateway (`npm start`),
 *               wrk (or the autocannon CLI) from outside, c=1 and c=32; judged on a call the
 *               gateway forwards every time (targets/calls.ts)
 *   handler     CPU per request of the shipped proxy bundle invoked directly, vs a minimal
 *               middy handler forwarding with the same HTTP client, on that same call
 *   cold        import and first request of both bundles, fresh processes
 *   cost        dollars per million requests at list prices, from the measured billed
 *               duration and DynamoDB calls
 *   profile     --cpu-prof of the handler and of the local server on the forwarded call; the
 *               biggest costs
 *   replay      the answer cache: an indexer's three passes over finalized blocks across 4
 *               containers, upstream calls with the cache off and on, shared-tier reads, and
 *               what a memory hit adds over a request that needs no upstream
 *   hedge       hedged reads on and off side by side: p99 and upstream calls with a slow tail
 *               on one provider, and with every provider healthy
 *   logs        one eth_getLogs over a chain of anvil blocks with logs, through the gateway in
 *               front of providers capped at --logs-cap blocks, vs the node asked piece by piece
 *               [--logs-blocks 2000] [--logs-cap 200] [--logs-concurrency 4]
 *   subscriptions  the head follower's shipped bundle run for 1, 100 and 1,000 subscriptions on
 *               a 1 s chain: DynamoDB units, provider calls, CPU, notifications; what that
 *               costs a month [--subscriptions-seconds 30] [--subscriptions-sizes 1,100,1000]
 *   consensus   read consensus off and on side by side: upstream calls per call and the p50
 *               added, three shims of 5, 15 and 25 ms over one anvil node
 *   stages      what each stage of the request pipeline costs the forwarded call (the gateway's
 *               StageObserver, in the handler invoked as in `handler`), µs per request
 *
 *   --against REV  another commit's gateway measured beside this one in the same rounds
 *               (throughput: a fourth target; handler: a third bundle), from `git archive REV`
 *
 * Exits 1 when a measurement had errors (its figures are not a valid result).
 */
import { parseArgs } from "node:util";
import { ENVIRONMENTS } from "../infra/environments.ts";
import { type AnvilNode, startAnvil } from "../local/anvil.ts";
import { rpcEvent } from "../test/support/api-gateway-event.ts";
import { renderReport, writeReport } from "./report.ts";
import {
  PART_NAMES,
  type PartName,
  type Results,
  readResults,
  revision,
  writeResultsJson,
} from "./results.ts";
import { ADDRESS_MARKER, FORWARDED, PENDING_NONCE, type Workload } from "./targets/calls.ts";
import { consensusVerdicts, measureConsensus } from "./targets/consensus.ts";
import { hedgeVerdicts, measureHedging } from "./targets/hedge.ts";
import {
  buildVariants,
  measureColdStarts,
  measureCost,
  measureHandlerCpu,
} from "./targets/lambda.ts";
import { measureLogs } from "./targets/logs.ts";
import { measureReplay } from "./targets/replay.ts";
import { measureStages } from "./targets/stages.ts";
import { measureSubscriptions } from "./targets/subscriptions.ts";
import { subscriptionsVerdicts } from "./targets/subscriptions-cost.ts";
import { measureThroughput, WORKLOADS } from "./targets/throughput.ts";
import {
  coldVerdicts,
  costVerdicts,
  handlerVerdicts,
  logsVerdicts,
  replayVerdicts,
  throughputVerdicts,
} from "./targets/verdicts.ts";
import {
  LAMBDA_NETWORK,
  type LambdaCall,
  type LambdaEnvironment,
  startLambdaEnvironment,
} from "./tools/lambda-env.ts";
import { loadGenerator } from "./tools/load.ts";
import { formatLoad, loadAverage, machineInfo } from "./tools/machine.ts";
import { profileHandler, profileLocalServer, profilePacedHandler } from "./tools/profiling.ts";
import { type RevisionTree, revisionTree } from "./tools/revision-tree.ts";
import type { PartMeta } from "./verdict.ts";

const RESULTS_MD = new URL("./RESULTS.md", import.meta.url).pathname;

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
        "consensus-rate": { type: "string", default: "50" },
        "consensus-seconds": { type: "string", default: "8" },
        "consensus-rounds": { type: "string", default: "3" },
        "logs-blocks": { type: "string", default: "2000" },
        "logs-cap": { type: "string", default: "200" },
        "logs-concurrency": { type: "string", default: "4" },
        "subscriptions-seconds": { type: "string", default: "30" },
        "subscriptions-sizes": { type: "string", default: "1,100,1000" },
        "dry-run": { type: "boolean", default: false },
        against: { type: "string" },
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

/** A call as a Lambda container is invoked with it; a call that varies names a new address each time. */
const lambdaCall = (workload: Workload): LambdaCall => ({
  event: rpcEvent(workload.body, LAMBDA_NETWORK),
  ...(workload.varies ? { addressMarker: ADDRESS_MARKER } : {}),
});

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
    consensus: {
      rate: whole("consensus-rate", args["consensus-rate"]),
      seconds: whole("consensus-seconds", args["consensus-seconds"]),
      rounds: whole("consensus-rounds", args["consensus-rounds"]),
    },
    logs: {
      blocks: whole("logs-blocks", args["logs-blocks"]),
      cap: whole("logs-cap", args["logs-cap"]),
      concurrency: whole("logs-concurrency", args["logs-concurrency"]),
    },
    subscriptions: {
      seconds: whole("subscriptions-seconds", args["subscriptions-seconds"]),
      sizes: (args["subscriptions-sizes"] ?? "")
        .split(",")
        .map((size) => whole("subscriptions-sizes", size)),
    },
  };
  const { seconds, rounds, warmupSeconds } = settings;
  let against: RevisionTree | undefined;
  try {
    against = args.against === undefined ? undefined : revisionTree(args.against);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (against) log(`against commit ${against.commit} (${against.root})`);
  const loadAtStart = loadAverage();
  log(`load average at start ${formatLoad(loadAtStart)}; parts: ${[...parts].join(", ")}`);
  const results: Results = readResults();
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
          targets: [
            "direct",
            "pass-through",
            "gateway",
            ...(against ? (["against"] as const) : []),
          ],
          rounds,
          seconds,
          warmupSeconds,
          ...(against ? { against } : {}),
        },
        log,
      );
      invalid ||= records.some((r) => r.problems.length > 0);
      results.throughput = {
        ...meta(started),
        ...(against ? { against: against.commit } : {}),
        loadGenerator: load.name,
        rounds,
        seconds,
        records,
        verdicts: throughputVerdicts(records, load.latencyStepMs),
      };
    }

    if (parts.has("replay")) {
      const started = loadAverage();
      const record = await measureReplay(log);
      invalid ||= record.problems.length > 0;
      results.replay = { ...meta(started), record, verdicts: replayVerdicts(record) };
    }

    const lambdaParts = (["handler", "stages", "cold", "cost", "profile"] as const).filter((p) =>
      parts.has(p),
    );
    if (lambdaParts.length > 0) {
      const environment: LambdaEnvironment = await startLambdaEnvironment(anvil.url);
      closers.push(() => environment.close());
      // What a container pays is measured on calls the gateway forwards every time, as the
      // baseline does: with the chain position written (as deployed), eth_blockNumber is
      // answered from the served head, an answer from memory against a forward. The handler's
      // CPU is the pipeline's cost, on the call of the local server's verdicts; the cold start
      // and the cost stay on the nonce at `pending` (forwarded, never cached) of their history.
      const forwarded = lambdaCall(FORWARDED);
      const pendingNonce = lambdaCall(PENDING_NONCE);
      log("building the bundles");
      const variants = await buildVariants(environment.configText, against);

      if (parts.has("handler")) {
        const started = loadAverage();
        const { handlerRounds, count } = settings;
        const records = await measureHandlerCpu(
          environment,
          variants,
          { rounds: handlerRounds, warmup: 2000, count, call: forwarded },
          log,
        );
        results.handler = {
          ...meta(started),
          ...(against ? { against: against.commit } : {}),
          rounds: handlerRounds,
          count,
          records,
          verdicts: handlerVerdicts(records),
        };
      }

      if (parts.has("stages")) {
        const started = loadAverage();
        const { handlerRounds, count } = settings;
        const measured = await measureStages(
          environment,
          {
            configText: environment.configText,
            rounds: handlerRounds,
            warmup: 2000,
            count,
            call: forwarded,
          },
          log,
        );
        results.stages = { ...meta(started), rounds: handlerRounds, count, ...measured };
      }

      if (parts.has("cold")) {
        const started = loadAverage();
        const { starts } = settings;
        await environment.writeChainPosition();
        const records = await measureColdStarts(
          environment,
          variants,
          { starts, call: pendingNonce },
          log,
        );
        results.cold = { ...meta(started), starts, records, verdicts: coldVerdicts(records) };
      }

      if (parts.has("cost")) {
        const started = loadAverage();
        const memoryMb = ENVIRONMENTS.prod.proxy.memoryMb;
        const { costSeconds, rates } = settings;
        const gateway = variants.find((v) => v.role === "gateway");
        if (!gateway) throw new Error("the gateway's bundle was not built");
        const records = await measureCost(
          environment,
          gateway,
          { rates, seconds: costSeconds, memoryMb, call: pendingNonce },
          log,
        );
        results.cost = {
          ...meta(started),
          memoryMb,
          seconds: costSeconds,
          records,
          verdicts: costVerdicts(records, memoryMb),
        };
      }

      if (parts.has("profile")) {
        const started = loadAverage();
        await environment.writeChainPosition();
        const handler = await profileHandler(environment, { call: forwarded, count: 20_000 }, log);
        await environment.writeChainPosition();
        const paced = await profilePacedHandler(
          environment,
          { call: forwarded, rate: 20, seconds: 15 },
          log,
        );
        const server = await profileLocalServer(
          anvil,
          load,
          { workload: FORWARDED, connections: 32, seconds: 10 },
          log,
        );
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

    if (parts.has("consensus")) {
      const started = loadAverage();
      const records = await measureConsensus(settings.consensus, log);
      invalid ||= records.some((r) => r.problems.length > 0);
      results.consensus = {
        ...meta(started),
        options: settings.consensus,
        records,
        verdicts: consensusVerdicts(records),
      };
    }

    if (parts.has("logs")) {
      const started = loadAverage();
      const measured = await measureLogs(settings.logs, log);
      results.logs = { ...meta(started), ...measured, verdicts: logsVerdicts(measured) };
    }

    if (parts.has("subscriptions")) {
      const started = loadAverage();
      const measured = await measureSubscriptions(settings.subscriptions, log);
      invalid ||= measured.records.some((record) => record.problems.length > 0);
      results.subscriptions = {
        ...meta(started),
        ...measured,
        options: settings.subscriptions,
        verdicts: subscriptionsVerdicts(measured),
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
