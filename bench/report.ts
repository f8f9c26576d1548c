import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type {
  ColdPart,
  CostPart,
  HandlerPart,
  LogsPart,
  ProfilePart,
  ReplayPart,
  Results,
  ThroughputPart,
} from "./results.ts";
import { renderConsensus } from "./targets/consensus.ts";
import { COST_WARMUP_SECONDS, dollarsPerMillionPerMs, PRICES } from "./targets/cost.ts";
import { renderHedge } from "./targets/hedge.ts";
import { renderStages } from "./targets/stages.ts";
import { renderSubscriptions } from "./targets/subscriptions-cost.ts";
import type { ThroughputRecord } from "./targets/throughput.ts";
import { LAMBDA_BLOCK_TIME_SECONDS } from "./tools/lambda-env.ts";
import { measuredWhen } from "./verdict.ts";

/**
 * bench/RESULTS.md: the section between the markers is generated from bench/results.json by
 * every run; everything outside it (the hand-written notes) is kept.
 */

export const START_MARKER = "<!-- bench:start -->";
export const END_MARKER = "<!-- bench:end -->";

const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "n/a");
const ms = (value: number, digits = 3) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");
const cores = (value: number | null) => (value === null ? "n/a" : value.toFixed(2));
const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;
const dollars = (value: number) => `$${value.toFixed(4)}`;

/**
 * The range of the same-round ratios, as text ("; rounds 0.71–0.93×"), or nothing with fewer
 * than two rounds: the noise a verdict was read through.
 */
export function roundRatios(measured: readonly number[], baseline: readonly number[]): string {
  const ratios = measured.flatMap((value, index) => {
    const base = baseline[index];
    return base === undefined || base <= 0 ? [] : [value / base];
  });
  if (ratios.length < 2) return "";
  return `; rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
}

export function renderReport(results: Results): string {
  const lines: string[] = [];
  const parts = [
    ["local server throughput and latency", results.throughput],
    ["handler CPU per request", results.handler],
    ["cold start", results.cold],
    ["cost per million requests", results.cost],
    ["answer cache: indexer replay", results.replay],
    ["hedged reads", results.hedge],
    ["eth_getLogs over any range", results.logs],
    ["read consensus", results.consensus],
    ["subscriptions: what the head follower costs", results.subscriptions],
  ] as const;
  const machine = [results.throughput, results.handler, results.cold, results.cost]
    .map((part) => part?.machine)
    .find((m) => m !== undefined);
  lines.push("## Targets", "");
  if (machine) {
    lines.push(
      `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB.toFixed(1)} GiB, ${machine.platform}, Node ${machine.node}. Shared with other engineers' work: read each part's load average and noise.`,
      "",
    );
  }
  lines.push("| target | measured | verdict | part |", "|---|---|---|---|");
  for (const [name, part] of parts) {
    if (!part) {
      lines.push(`| ${name} | not measured yet | – | – |`);
      continue;
    }
    for (const v of part.verdicts) {
      lines.push(
        `| ${v.target} | ${v.measured} | **${v.verdict}** | ${name} (${part.date.slice(0, 16)}) |`,
      );
    }
  }
  lines.push("");
  if (results.throughput) lines.push(...renderThroughput(results.throughput));
  if (results.handler) lines.push(...renderHandler(results.handler));
  if (results.cold) lines.push(...renderCold(results.cold));
  if (results.cost) lines.push(...renderCost(results.cost));
  if (results.replay) lines.push(...renderReplay(results.replay));
  if (results.profile) lines.push(...renderProfile(results.profile));
  if (results.hedge) lines.push(...renderHedge(results.hedge));
  if (results.logs) lines.push(...renderLogs(results.logs));
  if (results.stages) lines.push(...renderStages(results.stages));
  if (results.consensus) lines.push(...renderConsensus(results.consensus));
  if (results.subscriptions) lines.push(...renderSubscriptions(results.subscriptions));
  return lines.join("\n").trimEnd();
}

/** The `against` target is named by its commit. */
const targetLabel = (target: string, against: string | undefined) =>
  target === "against" ? `gateway@${against ?? "?"}` : target;

function throughputTable(records: readonly ThroughputRecord[], against?: string): string[] {
  const lines = [
    "| workload | c | target | req/s | p50 ms | p99 ms | requests | server CPU µs/req | anvil cores | load generator cores | others (cores) | valid |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const r of records) {
    lines.push(
      `| ${r.workload} | ${r.connections} | ${targetLabel(r.target, against)} | ${Math.round(r.perSecond)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${r.requests} | ${r.serverCpuUsPerRequest === null ? "–" : Math.round(r.serverCpuUsPerRequest)} | ${cores(r.anvilCores)} | ${cores(r.loadgenCores)} | ${cores(r.otherCores)} | ${r.problems.length === 0 ? "yes" : `**NO**: ${r.problems.join("; ")}`} |`,
    );
  }
  return lines;
}

export const find = (
  records: readonly ThroughputRecord[],
  workload: string,
  connections: number,
  target: string,
) =>
  records.find(
    (r) => r.workload === workload && r.connections === connections && r.target === target,
  );

function renderThroughput(part: ThroughputPart): string[] {
  const lines = [
    "## Local server: throughput and latency",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- Load: ${part.loadGenerator}, its own process, one thread, keep-alive connections, one body per workload (the forwarded \`eth_getBalance\` names a new address in every call, so the answer cache never holds its answer); ${part.rounds} rounds of ${part.seconds} s per target and concurrency, the targets alternated within each round (req/s over all rounds; p50/p99: the median of the rounds' percentiles).`,
    "- Targets: anvil directly (mining a block every 12 s, as a live chain); the ~20-line undici pass-through (`bench/tools/passthrough.ts`) in its own `node` process; the gateway as `npm start -- --config F --port 0` runs it (API Gateway emulator + proxy handler + dynalite + the monitor on its timer), one provider: that anvil.",
    "- server CPU: CPU of the server's whole process group per request. others: cores every other process on the machine used meanwhile (the noise).",
    "",
    ...throughputTable(part.records, part.against),
    "",
    ...againstAt32(part),
    `Gateway against the pass-through at c=32, every workload (the verdicts are the first's; the others skip parts of the pipeline):`,
    "",
    "| workload | gateway req/s | pass-through req/s | ratio | every round | server CPU µs/req, gateway vs pass-through |",
    "|---|---:|---:|---:|---|---|",
    ...ratiosAt32(part.records),
    "",
    "Added p50 latency at c=1 (p50 through the proxy − p50 direct):",
    "",
    "| workload | direct p50 ms | pass-through added ms | gateway added ms | gateway/pass-through |",
    "|---|---:|---:|---:|---:|",
  ];
  for (const workload of new Set(part.records.map((r) => r.workload))) {
    const added = addedLatency(part.records, workload);
    if (!added) continue;
    lines.push(
      `| ${workload} | ${ms(added.direct)} | ${ms(added.passthrough)} | ${ms(added.gateway)} | ${ratio(added.gateway / added.passthrough)} |`,
    );
  }
  lines.push("");
  return lines;
}

function ratiosAt32(records: readonly ThroughputRecord[]): string[] {
  return [...new Set(records.map((r) => r.workload))].flatMap((workload) => {
    const gateway = find(records, workload, 32, "gateway");
    const passthrough = find(records, workload, 32, "pass-through");
    if (!gateway || !passthrough) return [];
    const rounds = roundRatios(gateway.roundPerSecond ?? [], passthrough.roundPerSecond ?? []);
    const cpu = (r: ThroughputRecord) =>
      r.serverCpuUsPerRequest === null ? "n/a" : Math.round(r.serverCpuUsPerRequest);
    return [
      `| ${workload} | ${Math.round(gateway.perSecond)} | ${Math.round(passthrough.perSecond)} | ${ratio(gateway.perSecond / passthrough.perSecond)} | ${rounds.replace(/^; rounds /, "") || "–"} | ${cpu(gateway)} vs ${cpu(passthrough)} |`,
    ];
  });
}

/**
 * `--against`: this commit's gateway and the other's, each against the pass-through of the same
 * round, at c=32 (the ratio of ratios is the change the commit made, the machine's drift between
 * rounds divided out).
 */
function againstAt32(part: ThroughputPart): string[] {
  if (part.against === undefined) return [];
  const rows = [...new Set(part.records.map((r) => r.workload))].flatMap((workload) => {
    const gateway = find(part.records, workload, 32, "gateway");
    const other = find(part.records, workload, 32, "against");
    const passthrough = find(part.records, workload, 32, "pass-through");
    if (!gateway || !other || !passthrough) return [];
    const rounds = roundRatios(gateway.roundPerSecond ?? [], other.roundPerSecond ?? []);
    const cpu = (r: ThroughputRecord) =>
      r.serverCpuUsPerRequest === null ? "n/a" : Math.round(r.serverCpuUsPerRequest);
    return [
      `| ${workload} | ${Math.round(gateway.perSecond)} | ${Math.round(other.perSecond)} | ${ratio(gateway.perSecond / other.perSecond)} | ${rounds.replace(/^; rounds /, "") || "–"} | ${ratio(gateway.perSecond / passthrough.perSecond)} vs ${ratio(other.perSecond / passthrough.perSecond)} | ${cpu(gateway)} vs ${cpu(other)} |`,
    ];
  });
  return [
    `This commit's gateway against \`gateway@${part.against}\` at c=32, in the same rounds:`,
    "",
    "| workload | this req/s | against req/s | ratio | every round | each against the pass-through | server CPU µs/req, this vs against |",
    "|---|---:|---:|---:|---|---|---|",
    ...rows,
    "",
  ];
}

export function addedLatency(
  records: readonly ThroughputRecord[],
  workload: string,
): { direct: number; passthrough: number; gateway: number } | undefined {
  const direct = find(records, workload, 1, "direct");
  const passthrough = find(records, workload, 1, "pass-through");
  const gateway = find(records, workload, 1, "gateway");
  if (!direct || !passthrough || !gateway) return undefined;
  return {
    direct: direct.p50Ms,
    passthrough: passthrough.p50Ms - direct.p50Ms,
    gateway: gateway.p50Ms - direct.p50Ms,
  };
}

function renderHandler(part: HandlerPart): string[] {
  return [
    "## Handler CPU per request (what a Lambda container pays)",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- The bundles the stack ships, each imported by a fresh Node process (\`bench/tools/lambda-child.ts\`) with the Lambda's environment (config in s3rver, state in dynalite, the anvil upstream) and invoked directly with API Gateway events, one at a time, each a call the gateway forwards every time (\`eth_getBalance\` at \`latest\` of a new address each invocation, the call of the local server's verdicts), the chain position written as the monitor writes it: ${part.count} invocations measured after 2,000 of warm-up, ${part.rounds} rounds alternating the handlers. CPU is the whole process's (\`process.cpuUsage()\`): background refreshes, metric flushes and GC included.`,
    "- baseline: `bench/baseline/minimal-handler.ts`, middy + the same S3 and DynamoDB clients, forwarding the body with the same upstream adapter.",
    "",
    "| handler | CPU µs/request (median) | every round | wall µs/request | spread | DynamoDB calls/request |",
    "|---|---:|---|---:|---:|---|",
    ...part.records.map(
      (r) =>
        `| ${r.variant} | ${Math.round(r.medianCpuUs)} | ${r.cpuUs.map((v) => Math.round(v)).join(", ")} | ${Math.round(r.medianWallMs * 1000)} | ${Math.round(r.spread * 100)}% | ${
          Object.entries(r.dynamoPerRequest)
            .map(([op, n]) => `${op} ${n.toExponential(1)}`)
            .join(", ") || "none"
        } |`,
    ),
    "",
    ...againstCpu(part),
  ];
}

/** `--against`: this commit's handler CPU against the other's, round by round. */
function againstCpu(part: HandlerPart): string[] {
  if (part.against === undefined) return [];
  const gateway = part.records.find((r) => r.role === "gateway");
  const other = part.records.find((r) => r.role === "against");
  const baseline = part.records.find((r) => r.role === "baseline");
  if (!gateway || !other || !baseline) return [];
  return [
    `This commit's handler against \`gateway@${part.against}\`: ${Math.round(gateway.medianCpuUs)} vs ${Math.round(other.medianCpuUs)} µs CPU per request = ${ratio(gateway.medianCpuUs / other.medianCpuUs)}${roundRatios(gateway.cpuUs, other.cpuUs)}; against the baseline ${ratio(gateway.medianCpuUs / baseline.medianCpuUs)} vs ${ratio(other.medianCpuUs / baseline.medianCpuUs)}.`,
    "",
  ];
}

function renderCold(part: ColdPart): string[] {
  return [
    "## Cold start",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- Each bundle built as the stack builds it (esbuild ESM, minified, \`module\` main fields, AWS SDK bundled: \`bench/tools/bundles.ts\` with the settings of \`infra/constructs/node-function.ts\`), started ${part.starts} times in a fresh Node process, alternating: the import, then the first request (config from S3, the state Query, one upstream call: \`eth_getTransactionCount\` at \`pending\`, which the gateway forwards every time, the chain position written as deployed). Node's own start-up is excluded and the same for all.`,
    "- CPU time decides the verdicts: it is what stretches on Lambda's share of a vCPU, and what other people's load here disturbs least. Wall time is shown as measured, and without the time spent waiting for a core (own). Medians.",
    "",
    "| handler | bundle | import ms CPU | import + first request ms CPU | import ms wall | import + first request ms wall | … own | every import, ms CPU | every first request, ms CPU |",
    "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ...part.records.map(
      (r) =>
        `| ${r.variant} | ${kb(r.bytes)} | ${ms(r.medianImportCpuMs, 0)} | ${ms(r.medianTotalCpuMs, 0)} | ${ms(r.medianImportMs, 0)} | ${ms(r.medianTotalMs, 0)} | ${ms(r.medianOwnTotalMs, 0)} | ${r.importCpuMs.map((v) => v.toFixed(0)).join(", ")} | ${r.firstRequestCpuMs.map((v) => v.toFixed(0)).join(", ")} |`,
    ),
    "",
  ];
}

function renderCost(part: CostPart): string[] {
  return [
    "## Cost per million requests",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- The gateway's bundle in one container, invoked at a steady rate for ${part.seconds} s after its cold start and ${COST_WARMUP_SECONDS} s of warm-up at that rate, healthy provider (anvil on this machine, a block every ${LAMBDA_BLOCK_TIME_SECONDS} s, the chain position written as the monitor writes it), with a call the gateway forwards every time (\`eth_getTransactionCount\` at \`pending\`: never cached, and not \`eth_blockNumber\`, which the served head answers without a provider). DynamoDB calls are named by operation and item (NET: the network's state and served head, STATS: request stats). List prices (us-east-1): HTTP API $${PRICES.httpApiPerMillion.toFixed(2)}/M, Lambda requests $${PRICES.lambdaRequestsPerMillion.toFixed(2)}/M, arm64 duration $${PRICES.lambdaArmPerGbSecond}/GB-s at ${part.memoryMb} MB (prod), DynamoDB on demand $${PRICES.dynamoReadUnitPerMillion}/M read units and $${PRICES.dynamoWriteUnitPerMillion}/M write units.`,
    `- Billed duration, per invocation: its wall time here, less the time it waited for a core (other processes' load, from /proc schedstat), plus its CPU time × (1769/${part.memoryMb} − 1) (Lambda gives ${part.memoryMb} MB that share of a vCPU), rounded up to 1 ms. DynamoDB: every call the handler made (counted at a relay in front of dynalite), a Query at 0.5 read unit per 4 KB answered, a write at 1 unit per KB sent. A provider's own latency adds ${dollars(dollarsPerMillionPerMs(part.memoryMb))} per ms per million on top.`,
    "",
    "| requests/s per container | requests | wall ms (median) | CPU ms (median) | waiting for a core ms (median) | billed ms (mean) | DynamoDB calls/request | read units/request | write units/request | HTTP API | Lambda requests | Lambda duration | DynamoDB | total per million |",
    "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ...part.records.map(
      (r) =>
        `| ${r.rate} | ${r.requests} | ${ms(r.medianWallMs)} | ${ms(r.medianCpuMs)} | ${ms(r.medianWaitMs)} | ${ms(r.billedMs, 2)} | ${
          Object.entries(r.callsPerRequest)
            .map(([op, n]) => `${op} ${n.toFixed(3)}`)
            .join(", ") || "none"
        } | ${r.readUnitsPerRequest.toFixed(4)} | ${r.writeUnitsPerRequest.toFixed(4)} | ${dollars(r.httpApi)} | ${dollars(r.lambdaRequests)} | ${dollars(r.lambdaDuration)} | ${dollars(r.dynamo)} | **${dollars(r.total)}** |`,
    ),
    "",
  ];
}

function renderReplay(part: ReplayPart): string[] {
  const { record } = part;
  const statuses = (counts: Readonly<Record<string, number>>) =>
    Object.entries(counts)
      .map(([status, n]) => `${status} ${n}`)
      .join(", ");
  return [
    "## Answer cache: an indexer's replay",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- anvil with ${record.latest} blocks (logs every few blocks), finalized ${record.finalized}; the gateway as \`npm start -- --containers ${record.containers} --dynamodb URL --no-monitor\` runs it, the chain position written to its DynamoDB as the monitor writes it. An indexer (4 walkers) asks, for every block 1–${record.replayedTo}: the block with its transactions, its receipts, an eth_call at it, and the logs of every ten blocks (${record.callsPerPass} calls a pass, one call per request). Pass 2 is a restarted indexer on the same gateway; pass 3 one on a restarted gateway (every container cold). Upstream calls counted at a relay in front of anvil, DynamoDB calls at a relay in front of dynalite.`,
    "",
    "| pass | gateway | upstream calls, cache off | upstream calls, cache on | x-gateway-cache (on) | shared-tier reads (on) | shared-tier writes (on) | seconds off / on |",
    "|---:|---|---:|---:|---|---:|---:|---|",
    ...record.passes.map(
      (p) =>
        `| ${p.pass} | ${p.gateway} | ${p.off.upstreamCalls} | ${p.on.upstreamCalls} | ${statuses(p.on.statuses)} | ${p.on.sharedReads} | ${p.on.sharedWrites} | ${p.off.seconds.toFixed(1)} / ${p.on.seconds.toFixed(1)} |`,
    ),
    "",
    `Answers compared between the two runs: ${record.answersCompared}, differing: ${record.answersDiffering}. Memory hit (eth_chainId) vs a request the gateway answers alone (a denied method), one at a time over HTTP, ${record.latency.samples} each: p50 ${ms(record.latency.hitP50Ms)} vs ${ms(record.latency.noUpstreamP50Ms)} ms.${record.problems.length > 0 ? ` Problems: ${record.problems.join("; ")}` : ""}`,
    "",
  ];
}

function renderLogs(part: LogsPart): string[] {
  return [
    "## eth_getLogs over any range",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- anvil (mining on demand) holding logs spread over ${part.blocks} blocks (built in ${(part.chainBuildMs / 1000).toFixed(1)} s: anvil 1.7 mines in time that grows with the chain's length, so 100,000 blocks take hours here), behind two providers (\`local/logs-range-cap.ts\`) that refuse spans over ${part.cap} blocks in geth's words. One query over the whole chain through the gateway (\`npm start\`'s stack, \`logs_concurrency\` ${part.concurrency}), against the node asked directly one ${part.cap}-block piece after another. Upstream calls: eth_getLogs calls the providers received, refusals included.`,
    "",
    "| scenario | upstream calls | refused | ms | logs | same logs as the node's |",
    "|---|---:|---:|---:|---:|---|",
    ...part.records.map(
      (r) =>
        `| ${r.scenario} | ${r.upstreamCalls} | ${r.refused} | ${ms(r.ms)} | ${r.logs} | ${r.identical ? "yes" : "**no**"} |`,
    ),
    "",
  ];
}

function renderProfile(part: ProfilePart): string[] {
  const lines = [
    "## Where the time goes (CPU profiles)",
    "",
    `- Measured: ${measuredWhen(part)}`,
    "- `--cpu-prof`; each sample charged to its nearest project frame (time in a library or in native code goes to the project code that called it), and separately by the file or package it ran in; µs per request. Profiles: `bench/.tmp/profiles/` (Chrome DevTools' Performance panel or speedscope open them).",
    "",
  ];
  for (const found of part.findings) {
    lines.push(
      `### ${found.subject}: ${found.cpuUsPerRequest.toFixed(0)} µs CPU/request sampled over ${found.requests} requests`,
      "",
      "| nearest project frame | µs/request | | file or package | µs/request (self) |",
      "|---|---:|---|---|---:|",
    );
    const rows = Math.max(found.byOwner.length, found.byPackage.length);
    for (let i = 0; i < rows; i++) {
      const owner = found.byOwner[i];
      const where = found.byPackage[i];
      lines.push(
        `| ${owner ? owner[0] : ""} | ${owner ? owner[1].toFixed(1) : ""} | | ${where ? where[0] : ""} | ${where ? where[1].toFixed(1) : ""} |`,
      );
    }
    lines.push("");
  }
  return lines;
}

const DEFAULT_HEADER = `# Benchmark results

What \`npm run bench\` measured. The section between the markers is generated from
bench/results.json by every run; everything outside it is kept.

`;

/** Replaces the generated section of RESULTS.md and keeps everything else as it is. */
export function writeReport(path: string, generated: string): void {
  const section = `${START_MARKER}\n${generated}\n${END_MARKER}`;
  if (!existsSync(path)) {
    writeFileSync(path, `${DEFAULT_HEADER}${section}\n\n## Notes\n\n(hand-written, kept)\n`);
    return;
  }
  const current = readFileSync(path, "utf8");
  const start = current.indexOf(START_MARKER);
  const end = current.indexOf(END_MARKER);
  if (start === -1 || end === -1 || end < start) {
    writeFileSync(path, `${current.trimEnd()}\n\n${section}\n`);
    return;
  }
  writeFileSync(
    path,
    `${current.slice(0, start)}${section}${current.slice(end + END_MARKER.length)}`,
  );
}
