import { setTimeout as sleep } from "node:timers/promises";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import type { PartMeta, Verdict } from "../verdict.ts";
import { measuredWhen, verdict } from "../verdict.ts";

/**
 * Read consensus, off and on side by side in one run (docs/behaviour.md §17.6): one local stack
 * with two networks over one anvil node, each with its own three counting shims that hold every
 * answer 5, 15 and 25 ms (priorities in that order, so consensus asks the 5 and 15 ms ones);
 * `plain` has no consensus, `consensus` needs two providers to agree on `eth_getBalance`. An
 * open-loop client sends balance reads of a new address at a numbered block (no cache can answer
 * them), alternating the networks round by round, and the same reads straight to the slower
 * participant's shim: its latency as a client sees it, which the p50 consensus adds is held to.
 */

export interface ConsensusOptions {
  readonly rate: number;
  readonly seconds: number;
  readonly rounds: number;
}

export interface ConsensusRecord {
  /** `direct`: the reads sent straight to the slower participant's shim, not through the gateway. */
  readonly target: "plain" | "consensus" | "direct";
  readonly consensus: boolean;
  readonly requests: number;
  /** HTTP calls the network's three shims received while its rounds ran. */
  readonly upstreamCalls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Answers not agreed by 2 (consensus) or not a result, and requests that failed. */
  readonly problems: readonly string[];
}

export interface ConsensusPart extends PartMeta {
  readonly options: ConsensusOptions;
  readonly records: readonly ConsensusRecord[];
  readonly verdicts: readonly Verdict[];
}

const CHAIN_ID = 31337;
/** What each shim holds an answer, ms: consensus asks the first two. */
const DELAYS_MS = [5, 15, 25] as const;
const SLOWER_PARTICIPANT_MS = DELAYS_MS[1];
export const CONSENSUS_TARGETS = { callsPerCall: 2.05 };
const NETWORKS = { plain: false, consensus: true } as const;
type NetworkName = keyof typeof NETWORKS;
type Target = NetworkName | "direct";

function read(sequence: number): string {
  const address = `0x${sequence.toString(16).padStart(40, "0")}`;
  return JSON.stringify({
    jsonrpc: "2.0",
    id: sequence,
    method: "eth_getBalance",
    params: [address, "0x1"],
  });
}

interface Round {
  readonly latencies: number[];
  readonly problems: string[];
}

async function openLoop(
  url: string,
  options: ConsensusOptions,
  consensus: boolean,
  sequence: { next: number },
): Promise<Round> {
  const round: Round = { latencies: [], problems: [] };
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < Math.round(options.rate * options.seconds); i++) {
    const wait = start + (i * 1000) / options.rate - performance.now();
    if (wait > 0) await sleep(wait);
    const sent = performance.now();
    pending.push(
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: read(sequence.next++),
      })
        .then(async (response) => {
          const text = await response.text();
          round.latencies.push(performance.now() - sent);
          const agreed = response.headers.get("x-gateway-consensus");
          if (!text.includes('"result"') || (consensus && agreed !== "agreed-2")) {
            round.problems.push(`HTTP ${response.status} (${agreed}): ${text.slice(0, 120)}`);
          }
        })
        .catch((error: unknown) => {
          round.problems.push(error instanceof Error ? error.message : String(error));
        }),
    );
  }
  await Promise.all(pending);
  return round;
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

export async function measureConsensus(
  options: ConsensusOptions,
  log: (line: string) => void,
): Promise<ConsensusRecord[]> {
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const node: AnvilNode = await startAnvil({ chainId: CHAIN_ID });
    closers.push(() => node.stop());
    await node.rpc("anvil_mine", ["0x2"]);
    const shims = {} as Record<NetworkName, FaultShim[]>;
    for (const name of Object.keys(NETWORKS) as NetworkName[]) {
      shims[name] = await Promise.all(DELAYS_MS.map(() => startFaultShim(node.url)));
      for (const [index, shim] of shims[name].entries()) {
        closers.push(() => shim.close());
        await shim.setFault({ kind: "slow", ms: DELAYS_MS[index] ?? 0 });
      }
    }
    const network = (name: NetworkName) => ({
      chain_id: CHAIN_ID,
      providers: shims[name].map((shim, index) => ({
        name: `p${DELAYS_MS[index]}ms`,
        url: shim.url,
        priority: DELAYS_MS.length - index,
      })),
      ...(NETWORKS[name] ? { consensus: { methods: ["eth_getBalance"] } } : {}),
    });
    const stack: LocalStack = await startLocalStack({
      config: {
        hedge: { max_ratio: 0 },
        networks: { plain: network("plain"), consensus: network("consensus") },
      },
    });
    closers.push(() => stack.close());
    const sequence = { next: 1 };
    // The slower participant, asked straight: a shim of its own at the same delay.
    const slower = await startFaultShim(node.url);
    closers.push(() => slower.close());
    await slower.setFault({ kind: "slow", ms: SLOWER_PARTICIPANT_MS });
    const urlOf = (target: Target) => (target === "direct" ? slower.url : `${stack.url}/${target}`);
    const calls = (target: Target) =>
      target === "direct"
        ? slower.requests
        : shims[target].reduce((sum, shim) => sum + shim.requests, 0);
    const targets: Target[] = ["plain", "consensus", "direct"];
    const totals = new Map<Target, { round: Round; calls: number }>();
    for (const target of targets) {
      await openLoop(urlOf(target), { ...options, seconds: 1 }, target === "consensus", sequence);
    }
    for (let round = 0; round < options.rounds; round++) {
      const order = [...targets];
      if (round % 2 === 1) order.reverse();
      for (const target of order) {
        const before = calls(target);
        const measured = await openLoop(urlOf(target), options, target === "consensus", sequence);
        const total = totals.get(target) ?? { round: { latencies: [], problems: [] }, calls: 0 };
        total.round.latencies.push(...measured.latencies);
        total.round.problems.push(...measured.problems);
        total.calls += calls(target) - before;
        totals.set(target, total);
        log(
          `consensus: ${target}, round ${round + 1}/${options.rounds}: ${measured.latencies.length} answers`,
        );
      }
    }
    return [...totals].map(([target, total]) => {
      const sorted = [...total.round.latencies].sort((a, b) => a - b);
      return {
        target,
        consensus: target === "consensus",
        requests: sorted.length,
        upstreamCalls: total.calls,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        problems: [...new Set(total.round.problems)].slice(0, 5),
      };
    });
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

const callsPer = (record: ConsensusRecord | undefined) =>
  record ? record.upstreamCalls / record.requests : Number.NaN;

export function consensusVerdicts(records: readonly ConsensusRecord[]): Verdict[] {
  const on = records.find((r) => r.target === "consensus");
  const off = records.find((r) => r.target === "plain");
  const direct = records.find((r) => r.target === "direct");
  const valid = [on, off, direct].every((r) => r !== undefined && r.problems.length === 0);
  const added = (on?.p50Ms ?? Number.NaN) - (off?.p50Ms ?? Number.NaN);
  const slowerMs = direct?.p50Ms ?? Number.NaN;
  return [
    {
      target: `read consensus, every provider honest: upstream calls per consensus call ≤ ${CONSENSUS_TARGETS.callsPerCall}`,
      measured: `${callsPer(on).toFixed(3)} (off: ${callsPer(off).toFixed(3)}; ${(callsPer(on) / callsPer(off)).toFixed(2)}×)`,
      verdict: verdict(callsPer(on) <= CONSENSUS_TARGETS.callsPerCall, valid),
    },
    {
      target:
        "read consensus: p50 added ≤ the slower participant's p50, asked straight (its shim holds answers 15 ms)",
      measured: `${on?.p50Ms.toFixed(1)} vs ${off?.p50Ms.toFixed(1)} ms = +${added.toFixed(1)} ms (${((on?.p50Ms ?? 0) / (off?.p50Ms ?? 1)).toFixed(2)}×); the slower participant ${slowerMs.toFixed(1)} ms`,
      verdict: verdict(added <= slowerMs, valid),
    },
  ];
}

export function renderConsensus(part: ConsensusPart): string[] {
  const { options } = part;
  return [
    "## Read consensus",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- One local stack (in the bench's process), two networks over one anvil node, each with its own three counting shims holding every answer ${DELAYS_MS.join(", ")} ms (priorities in that order): \`plain\` without consensus, \`consensus\` with \`consensus: { methods: ["eth_getBalance"] }\` (agreement 2). Reads are \`eth_getBalance\` of a new address at block 1, open loop at ${options.rate}/s for ${options.seconds} s per round, ${options.rounds} rounds alternating the networks and the same reads sent straight to a fourth shim holding answers ${SLOWER_PARTICIPANT_MS} ms (the slower participant as a client sees it), after 1 s of uncounted warm-up each. Latency is the client's, send to last byte; upstream calls are the HTTP calls the network's shims received.`,
    "",
    "| target | requests | p50 ms | p99 ms | upstream calls | calls/request | valid |",
    "|---|---:|---:|---:|---:|---:|---|",
    ...part.records.map(
      (r) =>
        `| ${r.target === "direct" ? "the slower participant, asked straight" : `gateway, consensus ${r.consensus ? "on" : "off"}`} | ${r.requests} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.upstreamCalls} | ${callsPer(r).toFixed(3)} | ${r.problems.length === 0 ? "yes" : `**NO**: ${r.problems.join("; ")}`} |`,
    ),
    "",
  ];
}
