import { setTimeout as sleep } from "node:timers/promises";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { metricsNamed, parseEmf, valuesOf } from "../../test/support/emf.ts";
import { formatLoad } from "../tools/machine.ts";
import type { PartMeta, Verdict } from "../verdict.ts";
import { verdict } from "../verdict.ts";

/**
 * Hedged reads, side by side in one run: one gateway (the local stack in this process) with
 * two networks on the same two anvil nodes, each provider behind its own counting shim;
 * `hedged` has the default `hedge` settings, `unhedged` has `hedge.max_ratio: 0`. An open-loop
 * client sends reads at a fixed rate, alternating the networks round by round. Scenarios: a
 * slow tail (2 s added to every 10th answer of one provider, 10 %) and every provider healthy.
 */

export interface HedgeOptions {
  /** Requests a second, sent on schedule whatever the answers' latency (open loop). */
  readonly rate: number;
  readonly seconds: number;
  readonly rounds: number;
  /** Seconds of traffic per network before the first round, not counted (p90s, budget). */
  readonly warmupSeconds: number;
}

export type HedgeScenario = "tail" | "healthy";

export interface HedgeRecord {
  readonly scenario: HedgeScenario;
  readonly hedging: boolean;
  readonly requests: number;
  /** HTTP calls the providers received (both shims). */
  readonly upstreamCalls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly hedges: { readonly started: number; readonly won: number; readonly aborted: number };
  /** Answers that were not HTTP 200 with a result, and requests that failed. */
  readonly problems: readonly string[];
}

export interface HedgePart extends PartMeta {
  readonly options: HedgeOptions;
  readonly records: readonly HedgeRecord[];
  readonly verdicts: readonly Verdict[];
}

export const HEDGE_TARGETS = {
  p99Reduction: 0.4,
  tailCallsRatio: 1.1,
  healthyCallsRatio: 1.01,
};

const CHAIN_ID = 31337;
const TAIL_DELAY_MS = 2000;
const TAIL_EVERY = 10;
const NETWORKS = { hedged: true, unhedged: false } as const;
type NetworkName = keyof typeof NETWORKS;

/** A read no cache can answer: each request asks the balance of another address. */
function read(sequence: number): string {
  const address = `0x${sequence.toString(16).padStart(40, "0")}`;
  return JSON.stringify({
    jsonrpc: "2.0",
    id: sequence,
    method: "eth_getBalance",
    params: [address, "latest"],
  });
}

interface Round {
  readonly latencies: number[];
  readonly problems: string[];
}

/** Sends `rate` reads a second for `seconds`, on schedule, and waits for every answer. */
async function openLoop(
  url: string,
  rate: number,
  seconds: number,
  sequence: { next: number },
): Promise<Round> {
  const latencies: number[] = [];
  const problems: string[] = [];
  const pending: Promise<void>[] = [];
  const interval = 1000 / rate;
  const start = performance.now();
  const count = Math.round(rate * seconds);
  for (let i = 0; i < count; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const id = sequence.next++;
    const sent = performance.now();
    pending.push(
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: read(id),
      })
        .then(async (response) => {
          const text = await response.text();
          latencies.push(performance.now() - sent);
          if (response.status !== 200 || !text.includes('"result"')) {
            problems.push(`HTTP ${response.status}: ${text.slice(0, 120)}`);
          }
        })
        .catch((error: unknown) => {
          problems.push(error instanceof Error ? error.message : String(error));
        }),
    );
  }
  await Promise.all(pending);
  return { latencies, problems };
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

export async function measureHedging(
  options: HedgeOptions,
  log: (line: string) => void,
): Promise<HedgeRecord[]> {
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const nodes: AnvilNode[] = await Promise.all([
      startAnvil({ chainId: CHAIN_ID }),
      startAnvil({ chainId: CHAIN_ID }),
    ]);
    for (const node of nodes) closers.push(() => node.stop());
    const [nodeA, nodeB] = nodes as [AnvilNode, AnvilNode];
    const shims: Record<NetworkName, { slow: FaultShim; fast: FaultShim }> = {
      hedged: { slow: await startFaultShim(nodeA.url), fast: await startFaultShim(nodeB.url) },
      unhedged: { slow: await startFaultShim(nodeA.url), fast: await startFaultShim(nodeB.url) },
    };
    for (const pair of Object.values(shims)) {
      closers.push(
        () => pair.slow.close(),
        () => pair.fast.close(),
      );
    }
    const metricLines: string[] = [];
    const network = (name: NetworkName) => ({
      chain_id: CHAIN_ID,
      providers: [
        { name: "a", url: shims[name].slow.url },
        { name: "b", url: shims[name].fast.url },
      ],
      ...(NETWORKS[name] ? {} : { hedge: { max_ratio: 0 } }),
    });
    const stack: LocalStack = await startLocalStack({
      writeMetrics: (line) => metricLines.push(line),
      config: { networks: { hedged: network("hedged"), unhedged: network("unhedged") } },
    });
    closers.push(() => stack.close());

    const sequence = { next: 1 };
    const records: HedgeRecord[] = [];
    for (const scenario of ["tail", "healthy"] as const) {
      const fault =
        scenario === "tail"
          ? ({ kind: "slow_some", ms: TAIL_DELAY_MS, every: TAIL_EVERY } as const)
          : null;
      for (const pair of Object.values(shims)) await pair.slow.setFault(fault);
      log(`hedge: ${scenario}: warm-up ${options.warmupSeconds} s per network`);
      for (const name of Object.keys(NETWORKS) as NetworkName[]) {
        await openLoop(`${stack.url}/${name}`, options.rate, options.warmupSeconds, sequence);
      }
      const totals = new Map<NetworkName, { round: Round; calls: number; lines: string[] }>();
      for (let round = 0; round < options.rounds; round++) {
        // Alternated, so neither network always runs first (the machine's load drifts).
        const order = (Object.keys(NETWORKS) as NetworkName[]).slice();
        if (round % 2 === 1) order.reverse();
        for (const name of order) {
          const callsBefore = shims[name].slow.requests + shims[name].fast.requests;
          stack.runtime.telemetry.flush();
          const linesBefore = metricLines.length;
          const measured = await openLoop(
            `${stack.url}/${name}`,
            options.rate,
            options.seconds,
            sequence,
          );
          stack.runtime.telemetry.flush();
          const total = totals.get(name) ?? {
            round: { latencies: [], problems: [] },
            calls: 0,
            lines: [],
          };
          total.round.latencies.push(...measured.latencies);
          total.round.problems.push(...measured.problems);
          total.calls += shims[name].slow.requests + shims[name].fast.requests - callsBefore;
          total.lines.push(...metricLines.slice(linesBefore));
          totals.set(name, total);
          log(
            `hedge: ${scenario}, ${name}, round ${round + 1}/${options.rounds}: ${measured.latencies.length} answers`,
          );
        }
      }
      for (const [name, total] of totals) {
        const sorted = [...total.round.latencies].sort((a, b) => a - b);
        const metrics = parseEmf(total.lines);
        const hedges = (outcome: string) =>
          valuesOf(metricsNamed(metrics, "hedges", { network: name, outcome })).reduce(
            (sum, value) => sum + value,
            0,
          );
        records.push({
          scenario,
          hedging: NETWORKS[name],
          requests: sorted.length,
          upstreamCalls: total.calls,
          p50Ms: percentile(sorted, 0.5),
          p99Ms: percentile(sorted, 0.99),
          maxMs: sorted.at(-1) ?? Number.NaN,
          hedges: { started: hedges("started"), won: hedges("won"), aborted: hedges("aborted") },
          problems: [...new Set(total.round.problems)].slice(0, 5),
        });
      }
    }
    return records;
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

const find = (records: readonly HedgeRecord[], scenario: HedgeScenario, hedging: boolean) =>
  records.find((r) => r.scenario === scenario && r.hedging === hedging);

const callsPerRequest = (record: HedgeRecord | undefined) =>
  record ? record.upstreamCalls / record.requests : Number.NaN;

export function hedgeVerdicts(records: readonly HedgeRecord[]): Verdict[] {
  const tailOn = find(records, "tail", true);
  const tailOff = find(records, "tail", false);
  const healthyOn = find(records, "healthy", true);
  const healthyOff = find(records, "healthy", false);
  const valid = (...rs: Array<HedgeRecord | undefined>) =>
    rs.every((r) => r !== undefined && r.problems.length === 0);
  const reduction = tailOn && tailOff ? 1 - tailOn.p99Ms / tailOff.p99Ms : Number.NaN;
  const tailCalls = callsPerRequest(tailOn) / callsPerRequest(tailOff);
  const healthyCalls = callsPerRequest(healthyOn) / callsPerRequest(healthyOff);
  const pct = (value: number) => `${(value * 100).toFixed(1)} %`;
  return [
    {
      target: `hedged reads, 2 s added to 10 % of one provider's answers: p99 ≥ ${pct(HEDGE_TARGETS.p99Reduction)} lower than with hedging off`,
      measured: `${tailOn?.p99Ms.toFixed(0)} vs ${tailOff?.p99Ms.toFixed(0)} ms = ${pct(reduction)} lower`,
      verdict: verdict(reduction >= HEDGE_TARGETS.p99Reduction, valid(tailOn, tailOff)),
    },
    {
      target: `hedged reads, same tail: upstream calls ≤ ${HEDGE_TARGETS.tailCallsRatio}× hedging off's`,
      measured: `${callsPerRequest(tailOn).toFixed(4)} vs ${callsPerRequest(tailOff).toFixed(4)} calls per request = ${tailCalls.toFixed(4)}×`,
      verdict: verdict(tailCalls <= HEDGE_TARGETS.tailCallsRatio, valid(tailOn, tailOff)),
    },
    {
      target: `hedged reads, every provider healthy: upstream calls < ${HEDGE_TARGETS.healthyCallsRatio}× hedging off's`,
      measured: `${callsPerRequest(healthyOn).toFixed(4)} vs ${callsPerRequest(healthyOff).toFixed(4)} calls per request = ${healthyCalls.toFixed(4)}×`,
      verdict: verdict(
        healthyCalls < HEDGE_TARGETS.healthyCallsRatio,
        valid(healthyOn, healthyOff),
      ),
    },
  ];
}

export function renderHedge(part: HedgePart): string[] {
  const { options } = part;
  return [
    "## Hedged reads",
    "",
    `- Measured: ${part.date}, load ${formatLoad(part.loadAtStart)} at start, ${formatLoad(part.loadAtEnd)} at end; ${part.revision}; \`${part.command}\``,
    `- One local stack (in the bench's process) with two networks on the same two anvil nodes, each provider behind its own counting shim, the providers of equal priority (so each takes about half the reads): \`hedged\` with the default \`hedge\` settings (max_ratio 0.1, min_ms 150, max_ms 2000), \`unhedged\` with \`hedge.max_ratio: 0\`. Reads are \`eth_getBalance\` of a new address each time, sent open loop at ${options.rate}/s for ${options.seconds} s per round, ${options.rounds} rounds alternating the networks, after ${options.warmupSeconds} s of uncounted warm-up per network. Latency is the client's, send to last byte. Tail: every ${TAIL_EVERY}th answer of provider \`a\` is held ${TAIL_DELAY_MS} ms by its shim.`,
    "- Upstream calls: the HTTP calls both shims received while the rounds ran (no monitor runs). Hedges: the `hedges` metric.",
    "",
    "| scenario | hedging | requests | p50 ms | p99 ms | max ms | upstream calls | calls/request | hedges started / won / aborted | valid |",
    "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ...part.records.map(
      (r) =>
        `| ${r.scenario} | ${r.hedging ? "on" : "off"} | ${r.requests} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.maxMs.toFixed(0)} | ${r.upstreamCalls} | ${callsPerRequest(r).toFixed(4)} | ${r.hedges.started} / ${r.hedges.won} / ${r.hedges.aborted} | ${r.problems.length === 0 ? "yes" : `**NO**: ${r.problems.join("; ")}`} |`,
    ),
    "",
  ];
}
