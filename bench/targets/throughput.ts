import type { AnvilNode } from "../../local/anvil.ts";
import type { LoadGenerator, LoadResult } from "../tools/load.ts";
import {
  groupCpuSeconds,
  machineBusySeconds,
  median,
  processCpuSeconds,
  reapedChildrenCpuSeconds,
} from "../tools/machine.ts";
import type { RevisionTree } from "../tools/revision-tree.ts";
import {
  GATEWAY_NETWORK,
  type ServerProcess,
  startGatewayProcess,
  startPassthroughProcess,
} from "../tools/servers.ts";
import { bodyOf, FORWARDED, PENDING_NONCE, SERVED_HEAD, type Workload } from "./calls.ts";

/**
 * Throughput and latency as users see them: the load generator, the pass-through and the
 * gateway are separate processes on the same anvil node. Rounds alternate the targets, so a
 * change in the machine's load hits every target alike.
 */

/**
 * The verdicts are the forwarded call's (the first). The others show what the pipeline skips:
 * a nonce at `pending` is forwarded but neither pinned nor looked up in the answer cache, and
 * `eth_blockNumber` is the served head's, with no provider at all.
 */
export const WORKLOADS: readonly Workload[] = [FORWARDED, PENDING_NONCE, SERVED_HEAD];

/** A target: the upstream itself, the pass-through, the gateway, or another revision's (`--against`). */
export type TargetName = "direct" | "pass-through" | "gateway" | "against";

export interface ThroughputRecord {
  readonly workload: string;
  readonly connections: number;
  readonly target: TargetName;
  readonly rounds: number;
  readonly requests: number;
  readonly perSecond: number;
  /** Each round's req/s, in round order (absent in records from before it was kept). */
  readonly roundPerSecond?: readonly number[];
  /** Median over rounds of each round's percentile (wrk reports percentiles per run). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly problems: readonly string[];
  /** CPU of the server's processes per request, µs (null for direct, or off Linux). */
  readonly serverCpuUsPerRequest: number | null;
  readonly anvilCores: number | null;
  readonly loadgenCores: number | null;
  /** Cores every other process on the machine used meanwhile: the noise. */
  readonly otherCores: number | null;
}

export interface ThroughputPlan {
  readonly workloads: readonly Workload[];
  readonly concurrencies: readonly number[];
  readonly targets: readonly TargetName[];
  readonly rounds: number;
  readonly seconds: number;
  /** Before a target's first round; later rounds warm up for 1 s. */
  readonly warmupSeconds: number;
  /** The tree the `against` target runs. */
  readonly against?: RevisionTree;
}

export async function measureThroughput(
  anvil: AnvilNode,
  load: LoadGenerator,
  plan: ThroughputPlan,
  log: (line: string) => void,
): Promise<ThroughputRecord[]> {
  const servers = new Map<TargetName, ServerProcess>();
  try {
    for (const target of plan.targets) {
      if (target === "direct") continue;
      const server =
        target === "pass-through"
          ? await startPassthroughProcess(anvil.url)
          : await startGatewayProcess({
              name: target === "against" ? `gateway@${plan.against?.commit}` : target,
              upstreamUrl: anvil.url,
              ...(target === "against" ? { root: plan.against?.root } : {}),
            });
      servers.set(target, server);
    }
    const urlOf = (target: TargetName) => {
      const server = servers.get(target);
      if (target === "direct" || !server) return anvil.url;
      return target === "pass-through" ? server.url : `${server.url}/${GATEWAY_NETWORK}`;
    };

    // Every target must give the upstream's answer before anything is measured, and the
    // gateway must send each call of a forwarded workload to the provider: two calls in a row
    // (two addresses, when the workload varies) each made an attempt and were no cache hit.
    for (const workload of plan.workloads) {
      for (const sequence of [1, 2]) {
        const body = bodyOf(workload, "0".repeat(24), sequence);
        const expected = JSON.stringify((await rpcCall(anvil.url, body)).result);
        for (const target of plan.targets) {
          const { result, headers } = await rpcCall(urlOf(target), body);
          if (JSON.stringify(result) !== expected) {
            throw new Error(
              `${target} answers ${workload.name} with ${JSON.stringify(result)}, not ${expected}`,
            );
          }
          const attempts = Number(headers.get("x-gateway-attempts") ?? "0");
          const cache = headers.get("x-gateway-cache") ?? "";
          if (
            (target === "gateway" || target === "against") &&
            workload.forwarded &&
            (attempts < 1 || cache.startsWith("hit"))
          ) {
            throw new Error(
              `the gateway did not forward ${workload.name} (x-gateway-attempts ${attempts}, x-gateway-cache ${cache}): it measures no forwarded call`,
            );
          }
        }
      }
    }

    const records: ThroughputRecord[] = [];
    for (const workload of plan.workloads) {
      for (const connections of plan.concurrencies) {
        const windows = new Map<TargetName, Window[]>(plan.targets.map((t) => [t, []]));
        for (let round = 1; round <= plan.rounds; round++) {
          for (const target of plan.targets) {
            const job = { url: urlOf(target), workload, connections };
            const warm = await load.run({
              ...job,
              seconds: round === 1 ? plan.warmupSeconds : 1,
            });
            const before = snapshot(anvil, servers.get(target));
            const result = await load.run({ ...job, seconds: plan.seconds });
            const window = toWindow(result, before, snapshot(anvil, servers.get(target)));
            window.problems.push(...warm.problems.map((problem) => `warm-up: ${problem}`));
            windows.get(target)?.push(window);
            log(
              `${workload.name} c=${connections} round ${round} ${target.padEnd(20)} ${Math.round(result.perSecond)} req/s  p50 ${result.p50Ms.toFixed(3)} ms  p99 ${result.p99Ms.toFixed(3)} ms${window.serverCpu === null ? "" : `  server CPU ${Math.round((window.serverCpu * 1e6) / Math.max(1, result.requests))} µs/req`}${window.problems.length ? `  INVALID: ${window.problems.join("; ")}` : ""}`,
            );
          }
        }
        for (const target of plan.targets) {
          records.push(combine(workload.name, connections, target, windows.get(target) ?? []));
        }
      }
    }
    return records;
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

interface Snapshot {
  readonly server: number | null;
  readonly anvil: number | null;
  readonly loadgen: number | null;
  readonly machine: number | null;
}

function snapshot(anvil: AnvilNode, server: ServerProcess | undefined): Snapshot {
  const anvilPid = anvil.process.pid;
  return {
    server: server ? groupCpuSeconds(server.groupId) : 0,
    anvil: anvilPid === undefined ? null : processCpuSeconds(anvilPid),
    loadgen: reapedChildrenCpuSeconds(),
    machine: machineBusySeconds(),
  };
}

interface Window {
  readonly result: LoadResult;
  readonly problems: string[];
  readonly serverCpu: number | null;
  readonly anvilCpu: number | null;
  readonly loadgenCpu: number | null;
  readonly otherCpu: number | null;
}

const delta = (after: number | null, before: number | null) =>
  after === null || before === null ? null : after - before;

function toWindow(result: LoadResult, before: Snapshot, after: Snapshot): Window {
  const serverCpu = delta(after.server, before.server);
  const anvilCpu = delta(after.anvil, before.anvil);
  const loadgenCpu = delta(after.loadgen, before.loadgen);
  const machineCpu = delta(after.machine, before.machine);
  // The bench process itself only waits during a run; it is counted as noise.
  const otherCpu =
    machineCpu === null || serverCpu === null || anvilCpu === null || loadgenCpu === null
      ? null
      : Math.max(0, machineCpu - serverCpu - anvilCpu - loadgenCpu);
  return { result, problems: [...result.problems], serverCpu, anvilCpu, loadgenCpu, otherCpu };
}

function combine(
  workload: string,
  connections: number,
  target: TargetName,
  windows: readonly Window[],
): ThroughputRecord {
  const requests = windows.reduce((sum, w) => sum + w.result.requests, 0);
  const seconds = windows.reduce((sum, w) => sum + w.result.seconds, 0);
  const total = (pick: (w: Window) => number | null) =>
    windows.some((w) => pick(w) === null)
      ? null
      : windows.reduce((sum, w) => sum + (pick(w) ?? 0), 0);
  const serverCpu = total((w) => w.serverCpu);
  const cores = (cpu: number | null) => (cpu === null || seconds === 0 ? null : cpu / seconds);
  return {
    workload,
    connections,
    target,
    rounds: windows.length,
    requests,
    perSecond: seconds > 0 ? requests / seconds : 0,
    roundPerSecond: windows.map((w) => w.result.perSecond),
    p50Ms: median(windows.map((w) => w.result.p50Ms)),
    p99Ms: median(windows.map((w) => w.result.p99Ms)),
    problems: windows.flatMap((w, index) => w.problems.map((p) => `round ${index + 1}: ${p}`)),
    serverCpuUsPerRequest:
      target === "direct" || serverCpu === null || requests === 0
        ? null
        : (serverCpu * 1e6) / requests,
    anvilCores: cores(total((w) => w.anvilCpu)),
    loadgenCores: cores(total((w) => w.loadgenCpu)),
    otherCores: cores(total((w) => w.otherCpu)),
  };
}

async function rpcCall(url: string, body: string): Promise<{ result: unknown; headers: Headers }> {
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
  return { result: answer.result, headers: response.headers };
}
