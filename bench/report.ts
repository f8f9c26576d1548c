import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** What one measured run (one target, one workload, one concurrency) produced. */
export type TargetName = "direct" | "pass-through" | "gateway";

export interface DynamoCounts {
  Query: number;
  GetItem: number;
  UpdateItem: number;
  other: number;
}

export interface RunRecord {
  readonly workload: string;
  readonly connections: number;
  readonly target: TargetName;
  /** Measured windows merged into this record. */
  readonly rounds: number;
  readonly responses: number;
  readonly reqPerSec: number;
  readonly p50: number;
  readonly p99: number;
  readonly durationSeconds: number;
  /** Errors, timeouts, non-2xx, unexpected bodies: a run with any is not a valid result. */
  readonly problems: readonly string[];
  /** Event loop utilisation of the main thread, where the pass-through and the gateway run. */
  readonly serverElu: number;
  /** CPU time of the main thread per response, µs; null when unknown (not Linux). */
  readonly serverCpuUsPerRequest: number | null;
  /** CPU anvil used, in cores (1 = one core busy the whole run); null when unknown. */
  readonly anvilCores: number | null;
  /** CPU every other process on the machine used during the run, in cores. */
  readonly otherCores: number | null;
  readonly loadgenElu: number;
  /** Requests the gateway's DynamoDB client sent (each HTTP attempt), gateway runs only. */
  readonly dynamo: DynamoCounts | null;
  /** What the gateway wrote during the run, gateway runs only. */
  readonly output: GatewayOutput | null;
}

/** Lines the gateway wrote. */
export interface GatewayOutput {
  /** EMF blobs with metrics, through the telemetry's `write` option. */
  emfWrite: number;
  /** EMF blobs with no metric at all, through `write`. */
  emfEmpty: number;
  /** EMF blobs Powertools printed on stdout itself, bypassing `write`. */
  emfStdout: number;
  /** Any other stdout line (logs). */
  otherStdout: number;
}

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly date: string;
  readonly loadAtStart: readonly number[];
  readonly loadAtEnd: readonly number[];
}

export interface Verdict {
  readonly name: string;
  readonly measured: string;
  readonly verdict: "PASS" | "FAIL" | "INVALID";
}

export interface Report {
  readonly machine: Machine;
  readonly command: string;
  readonly setup: readonly string[];
  readonly primary: string;
  readonly runs: readonly RunRecord[];
  readonly verdicts: readonly Verdict[];
}

export const START_MARKER = "<!-- bench:start -->";
export const END_MARKER = "<!-- bench:end -->";

const ms = (value: number) => value.toFixed(3);
const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "n/a");
const pct = (value: number) => `${Math.round(value * 100)}%`;
const cores = (value: number | null) => (value === null ? "n/a" : value.toFixed(2));

export function find(
  runs: readonly RunRecord[],
  workload: string,
  connections: number,
  target: TargetName,
): RunRecord | undefined {
  return runs.find(
    (run) => run.workload === workload && run.connections === connections && run.target === target,
  );
}

export const dynamoReads = (counts: DynamoCounts) => counts.Query + counts.GetItem;
export const dynamoTotal = (counts: DynamoCounts) =>
  counts.Query + counts.GetItem + counts.UpdateItem + counts.other;

function groups(runs: readonly RunRecord[]): Array<{ workload: string; connections: number }> {
  const seen = new Map<string, { workload: string; connections: number }>();
  for (const run of runs) {
    seen.set(`${run.workload}|${run.connections}`, {
      workload: run.workload,
      connections: run.connections,
    });
  }
  return [...seen.values()];
}

/** The generated section (markdown), also what goes to stdout. */
export function renderReport(report: Report): string {
  const { machine, runs } = report;
  const lines: string[] = [];
  const invalid = runs.filter((run) => run.problems.length > 0);
  lines.push(`## Latest run: ${machine.date}`, "");
  if (invalid.length > 0) {
    lines.push(
      `> **⚠ INVALID: ${invalid.length} run(s) had errors; their figures are not valid results.**`,
    );
    for (const run of invalid) {
      lines.push(
        `> - ${run.workload} c=${run.connections} ${run.target}: ${run.problems.join("; ")}`,
      );
    }
    lines.push("");
  }
  lines.push(
    `- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB.toFixed(1)} GiB, ${machine.platform}`,
    `- Node: ${machine.node}`,
    `- Load average (1/5/15 min) at start: ${machine.loadAtStart.map((n) => n.toFixed(2)).join(" / ")}; at end: ${machine.loadAtEnd.map((n) => n.toFixed(2)).join(" / ")}`,
    `- Command: \`${report.command}\``,
    ...report.setup.map((line) => `- ${line}`),
    "",
    `### Targets (primary workload: ${report.primary})`,
    "",
    "| target | measured | verdict |",
    "|---|---|---|",
    ...report.verdicts.map((v) => `| ${v.name} | ${v.measured} | **${v.verdict}** |`),
    "",
    "### Throughput and latency",
    "",
    "| workload | c | target | req/s | p50 ms | p99 ms | responses | valid |",
    "|---|---:|---|---:|---:|---:|---:|---|",
  );
  for (const run of runs) {
    lines.push(
      `| ${run.workload} | ${run.connections} | ${run.target} | ${Math.round(run.reqPerSec)} | ${ms(run.p50)} | ${ms(run.p99)} | ${run.responses} | ${run.problems.length === 0 ? "yes" : "**NO**"} |`,
    );
  }
  lines.push(
    "",
    "### Ratios (gateway / baseline)",
    "",
    "| workload | c | req/s gw/pass-through | req/s gw/direct | p50 gw/pass-through | p50 gw/direct | p99 gw/pass-through | p99 gw/direct |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const { workload, connections } of groups(runs)) {
    const gw = find(runs, workload, connections, "gateway");
    const pt = find(runs, workload, connections, "pass-through");
    const direct = find(runs, workload, connections, "direct");
    if (!gw || !pt || !direct) continue;
    lines.push(
      `| ${workload} | ${connections} | ${ratio(gw.reqPerSec / pt.reqPerSec)} | ${ratio(gw.reqPerSec / direct.reqPerSec)} | ${ratio(gw.p50 / pt.p50)} | ${ratio(gw.p50 / direct.p50)} | ${ratio(gw.p99 / pt.p99)} | ${ratio(gw.p99 / direct.p99)} |`,
    );
  }
  lines.push(
    "",
    "### Added p50 latency at c=1 (p50 through X − p50 direct)",
    "",
    "| workload | direct p50 ms | pass-through added ms | gateway added ms | gateway/pass-through |",
    "|---|---:|---:|---:|---:|",
  );
  for (const { workload, connections } of groups(runs)) {
    if (connections !== 1) continue;
    const added = addedLatency(runs, workload);
    if (!added) continue;
    lines.push(
      `| ${workload} | ${ms(added.direct)} | ${ms(added.passthrough)} | ${ms(added.gateway)} | ${ratio(added.gateway / added.passthrough)} |`,
    );
  }
  lines.push(
    "",
    "### DynamoDB requests per proxied request (gateway runs, measured window only)",
    "",
    "| workload | c | proxied requests | Query | GetItem | UpdateItem | other | reads/request | all/request |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const run of runs) {
    if (!run.dynamo) continue;
    const d = run.dynamo;
    lines.push(
      `| ${run.workload} | ${run.connections} | ${run.responses} | ${d.Query} | ${d.GetItem} | ${d.UpdateItem} | ${d.other} | ${perRequest(dynamoReads(d), run.responses)} | ${perRequest(dynamoTotal(d), run.responses)} |`,
    );
  }
  lines.push(
    "",
    "### Where the CPU went (diagnostics)",
    "",
    "server CPU/request: CPU time of the main thread, which hosts the pass-through, the gateway (API Gateway emulator + handler) and dynalite, per response. server ELU: its event loop utilisation (≈100%: saturated; it counts time the thread was runnable but waiting for a core too). anvil: cores anvil kept busy. others: cores used by every other process on the machine during the run (other engineers' tests): the noise. load generator ELU: autocannon's worker thread. Gateway output during the run: EMF blobs with metrics through the telemetry's `write` / empty EMF blobs through `write` / EMF blobs Powertools printed on stdout itself / other stdout lines (logs).",
    "",
    "| workload | c | target | server CPU µs/request | server ELU | anvil cores | load generator ELU | others (cores) | gateway output (EMF / empty EMF / EMF on stdout / logs) |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|",
  );
  for (const run of runs) {
    lines.push(
      `| ${run.workload} | ${run.connections} | ${run.target} | ${run.serverCpuUsPerRequest === null ? "n/a" : Math.round(run.serverCpuUsPerRequest)} | ${pct(run.serverElu)} | ${cores(run.anvilCores)} | ${pct(run.loadgenElu)} | ${cores(run.otherCores)} | ${run.output ? `${run.output.emfWrite} / ${run.output.emfEmpty} / ${run.output.emfStdout} / ${run.output.otherStdout}` : "–"} |`,
    );
  }
  return lines.join("\n");
}

function perRequest(count: number, requests: number): string {
  if (requests === 0) return "n/a";
  const value = count / requests;
  return value === 0 ? "0" : value < 0.001 ? value.toExponential(2) : value.toFixed(4);
}

export function addedLatency(
  runs: readonly RunRecord[],
  workload: string,
): { direct: number; passthrough: number; gateway: number } | undefined {
  const direct = find(runs, workload, 1, "direct");
  const pt = find(runs, workload, 1, "pass-through");
  const gw = find(runs, workload, 1, "gateway");
  if (!direct || !pt || !gw) return undefined;
  return { direct: direct.p50, passthrough: pt.p50 - direct.p50, gateway: gw.p50 - direct.p50 };
}

const DEFAULT_HEADER = `# Benchmark results

What \`npm run bench\` measured: the upstream (anvil) directly, a ~20-line undici pass-through
proxy (\`bench/passthrough.ts\`) and the gateway's local server, in one run on the same upstream.
The section between the markers is regenerated by every run; everything outside it is kept.

`;

/** Replaces the generated section of RESULTS.md and keeps everything else as it is. */
export function writeResults(path: string, generated: string): void {
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
