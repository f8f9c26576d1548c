import { addedLatency, find, roundRatios } from "../report.ts";
import type { Verdict } from "../verdict.ts";
import { verdict } from "../verdict.ts";
import { FORWARDED } from "./calls.ts";
import type { ColdStartRecord, CostRecord, HandlerCpuRecord } from "./lambda.ts";
import type { LogsMeasurement } from "./logs.ts";
import type { ReplayRecord } from "./replay.ts";
import type { ThroughputRecord } from "./throughput.ts";

/**
 * The gating targets (bench/RESULTS.md "Targets") and how each part's figures are judged against
 * them. The hedged reads' targets are with their part (hedge.ts).
 */

export const TARGETS = {
  throughputRatio: 0.8,
  addedLatencyRatio: 2,
  handlerCpuRatio: 1.5,
  coldRatio: 1.15,
  dollarsPerMillion: 1.25,
  replayUpstreamReduction: 0.5,
  memoryHitAddedMs: 0.2,
};

const validAll = (records: ReadonlyArray<{ problems: readonly string[] } | undefined>) =>
  records.every((r) => r !== undefined && r.problems.length === 0);

/**
 * The local server's targets, judged on the call the gateway forwards every time: a call the
 * gateway answers by itself (the served head, a cache hit) says nothing about the pipeline.
 */
export function throughputVerdicts(
  records: readonly ThroughputRecord[],
  latencyStepMs: number,
): Verdict[] {
  const judged = FORWARDED.name;
  const gw32 = find(records, judged, 32, "gateway");
  const pt32 = find(records, judged, 32, "pass-through");
  const throughput = gw32 && pt32 ? gw32.perSecond / pt32.perSecond : Number.NaN;
  const rounds = roundRatios(gw32?.roundPerSecond ?? [], pt32?.roundPerSecond ?? []);
  const serverCpu =
    gw32?.serverCpuUsPerRequest != null && pt32?.serverCpuUsPerRequest != null
      ? `; server CPU ${Math.round(gw32.serverCpuUsPerRequest)} vs ${Math.round(pt32.serverCpuUsPerRequest)} µs/req`
      : "";
  const added = addedLatency(records, judged);
  const addedRatio = added ? added.gateway / added.passthrough : Number.NaN;
  // Sub-millisecond differences need a load generator that reports them.
  const fineEnough = latencyStepMs <= 0.01;
  return [
    {
      target: `local server: throughput ≥ ${TARGETS.throughputRatio}× the pass-through's at c=32 (${judged})`,
      measured: `${Math.round(gw32?.perSecond ?? 0)} vs ${Math.round(pt32?.perSecond ?? 0)} req/s = ${throughput.toFixed(2)}×${rounds}${serverCpu}`,
      verdict: verdict(throughput >= TARGETS.throughputRatio, validAll([gw32, pt32])),
    },
    {
      target: `local server: added p50 at c=1 ≤ ${TARGETS.addedLatencyRatio}× the pass-through's (${judged})`,
      measured: added
        ? `+${added.gateway.toFixed(3)} ms vs +${added.passthrough.toFixed(3)} ms = ${addedRatio.toFixed(2)}×${fineEnough ? "" : " (the load generator reports whole ms: install wrk)"}`
        : "n/a",
      verdict: verdict(
        added !== undefined &&
          (added.gateway <= TARGETS.addedLatencyRatio * added.passthrough || added.gateway <= 0),
        fineEnough &&
          validAll([
            find(records, judged, 1, "gateway"),
            find(records, judged, 1, "pass-through"),
            find(records, judged, 1, "direct"),
          ]),
      ),
    },
  ];
}

const byRole = <T extends { role: string }>(records: readonly T[], role: string) =>
  records.find((r) => r.role === role);

export function handlerVerdicts(records: readonly HandlerCpuRecord[]): Verdict[] {
  const gateway = byRole(records, "gateway");
  const baseline = byRole(records, "baseline");
  const cpuRatio = gateway && baseline ? gateway.medianCpuUs / baseline.medianCpuUs : Number.NaN;
  return [
    {
      target: `handler CPU per request ≤ ${TARGETS.handlerCpuRatio}× a minimal middy handler's (same HTTP client, a forwarded call)`,
      measured: `${Math.round(gateway?.medianCpuUs ?? 0)} vs ${Math.round(baseline?.medianCpuUs ?? 0)} µs = ${cpuRatio.toFixed(2)}×${roundRatios(gateway?.cpuUs ?? [], baseline?.cpuUs ?? [])}`,
      verdict: verdict(cpuRatio <= TARGETS.handlerCpuRatio),
    },
  ];
}

/**
 * Judged on CPU time: what stretches on Lambda's share of a vCPU, and what other people's load
 * on this shared machine disturbs least.
 */
export function coldVerdicts(records: readonly ColdStartRecord[]): Verdict[] {
  const gateway = byRole(records, "gateway");
  const baseline = byRole(records, "baseline");
  const importRatio =
    gateway && baseline ? gateway.medianImportCpuMs / baseline.medianImportCpuMs : Number.NaN;
  const totalRatio =
    gateway && baseline ? gateway.medianTotalCpuMs / baseline.medianTotalCpuMs : Number.NaN;
  return [
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
  ];
}

/** The first rate measured is the headline. */
export function costVerdicts(records: readonly CostRecord[], memoryMb: number): Verdict[] {
  const [headline] = records;
  if (!headline) return [];
  return [
    {
      target: `cost ≤ $${TARGETS.dollarsPerMillion.toFixed(2)} per million requests, healthy provider (${headline.rate} requests/s per container, ${memoryMb} MB arm64)`,
      measured: `$${headline.total.toFixed(4)} ($${headline.httpApi.toFixed(2)} API + $${headline.lambdaRequests.toFixed(2)} Lambda requests + $${headline.lambdaDuration.toFixed(4)} duration + $${headline.dynamo.toFixed(4)} DynamoDB)`,
      verdict: verdict(headline.total <= TARGETS.dollarsPerMillion),
    },
  ];
}

export function replayVerdicts(record: ReplayRecord): Verdict[] {
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

export function logsVerdicts(measured: LogsMeasurement): Verdict[] {
  const gateway = measured.records.filter((r) => r.scenario.startsWith("gateway"));
  return [
    {
      target: `a ${measured.blocks}-block eth_getLogs on providers capped at ${measured.cap} blocks returns exactly the node's logs`,
      measured: gateway
        .map(
          (r) => `${r.scenario}: ${r.logs} logs, ${r.upstreamCalls} calls, ${Math.round(r.ms)} ms`,
        )
        .join("; "),
      verdict: verdict(gateway.length > 0 && gateway.every((r) => r.identical)),
    },
  ];
}
