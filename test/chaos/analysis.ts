import {
  LAG_LIMIT_SECONDS,
  PRIMARY,
  PROVIDERS,
  STALE_LIMIT_SECONDS,
  TRAIL_LIMIT_SECONDS,
} from "./config.ts";
import type {
  AllDownFigures,
  BlacklistEpisode,
  OpSample,
  ScenarioFigures,
  Timeline,
  Verdict,
} from "./figures.ts";
import type { LogComparison } from "./logs-check.ts";
import type { HeadTracker, StatusSample } from "./observe.ts";
import { attemptsOf, type OpRecord, providersOf, succeeded } from "./traffic.ts";

/**
 * The figures of one scenario, computed from what the client recorded (every op with the
 * gateway's x-gateway-provider / x-gateway-attempts headers), the heads sampled from every
 * node and shim, and the status route's documents.
 */

export interface AnalysisInput {
  readonly ops: readonly OpRecord[];
  readonly status: readonly StatusSample[];
  readonly heads: HeadTracker;
  readonly timeline: Timeline;
  readonly allDown: boolean;
  readonly logs: LogComparison;
}

/** A head sample older than this (at the op's start) is not used for the op. */
const FRESH_SAMPLE_MS = 1_000;

const NODE_SOURCES = PROVIDERS.map((provider) => `node:${provider}`);

function phaseOf(op: OpRecord, timeline: Timeline): OpSample["phase"] {
  if (op.start < timeline.fault) return "before";
  return op.start < timeline.clear ? "fault" : "after";
}

function sample(op: OpRecord, timeline: Timeline): OpSample {
  return {
    phase: phaseOf(op, timeline),
    atMs: op.start - timeline.fault,
    kind: op.kind,
    error: op.error,
    wrong: op.wrong,
    providers: providersOf(op).join(",") || "-",
    attempts: attemptsOf(op),
    status: op.exchanges.map((exchange) => exchange.status).join(",") || "-",
    ms: op.end - op.start,
  };
}

/**
 * How far behind the network an op's answer is, in seconds: the best head any node had when
 * the op started minus (a) the head each answering provider showed through its shim then and
 * (b) the timestamps of the latest blocks in the answer. Null when nothing is known.
 */
export function stalenessOf(op: OpRecord, heads: HeadTracker): number | null {
  const reference = heads.maxTimestampAt(NODE_SOURCES, op.start);
  if (reference === null) return null;
  const behind: number[] = [];
  for (const provider of providersOf(op)) {
    // Only a recent sample says what the provider shows now: one from before a fault that
    // kept the sampler from reading it (429s, resets…) says nothing about the answer.
    const shown = heads.at(`shim:${provider}`, op.start);
    if (shown && op.start - shown.at <= FRESH_SAMPLE_MS) behind.push(reference - shown.timestamp);
  }
  for (const timestamp of op.latestTimestamps) behind.push(reference - timestamp);
  return behind.length === 0 ? null : Math.max(...behind);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Every answer of the op is a JSON-RPC error object (the gateway's own or an upstream's). */
/**
 * Every exchange of the op was answered by the gateway itself (no provider named), each member
 * a JSON-RPC error or, in a batch, a result the gateway gives without a provider (the served
 * head's `eth_blockNumber`, confirmed within a block time): with every provider down, nothing
 * else may reach a caller.
 */
function answeredByTheGateway(op: OpRecord): boolean {
  if (op.exchanges.length === 0) return false;
  return op.exchanges.every((exchange) => {
    if (exchange.status === 0 || exchange.providers.length > 0) return false;
    try {
      const parsed = JSON.parse(exchange.body) as unknown;
      const members = Array.isArray(parsed) ? parsed : [parsed];
      const isError = (member: unknown) =>
        typeof (member as { error?: { code?: unknown } } | null)?.error?.code === "number";
      const isHead = (member: unknown) =>
        /^0x[0-9a-f]+$/i.test(String((member as { result?: unknown } | null)?.result));
      return (
        members.length > 0 &&
        members.some(isError) &&
        members.every((member) => isError(member) || isHead(member))
      );
    } catch {
      return false;
    }
  });
}

/**
 * One out-of-service episode of the primary as the status route shows it: a blacklist (the
 * same `until` while blacklisted and then awaiting its probe) or a quorum exclusion (the same
 * monitor snapshot). Null while it is in service.
 */
function episodeOf(entry: StatusSample): string | null {
  const primary = entry.status.providers.find((provider) => provider.name === PRIMARY);
  if (primary === undefined || primary.state === "healthy") return null;
  if (primary.state === "out_of_quorum") {
    return `quorum:${primary.quorum_reason}@${entry.status.monitor.last_tick_at}`;
  }
  return `blacklist:${primary.blacklist?.until ?? "?"}`;
}

/**
 * When the gateway certainly had the primary out of service: from the arrival of a status
 * document showing an episode to the sending of the last consecutive one showing the same
 * episode (the status route reads the proxy's own state cache, and an episode that ended and
 * began again in between would show a new `until` or a new snapshot).
 */
function outOfServiceRanges(status: readonly StatusSample[]): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let run: { key: string; from: number; to: number } | null = null;
  for (const entry of status) {
    const key = episodeOf(entry);
    if (run !== null && key === run.key) {
      run.to = entry.sentAt;
      continue;
    }
    if (run !== null) ranges.push([run.from, run.to]);
    run = key === null ? null : { key, from: entry.at, to: entry.sentAt };
  }
  if (run !== null) ranges.push([run.from, run.to]);
  return ranges;
}

function observedHealth(
  status: readonly StatusSample[],
  providers: readonly string[],
): ScenarioFigures["observed"] {
  let maxStrikes = 0;
  const episodes = new Map<string, BlacklistEpisode>();
  const quorumReasons = new Set<string>();
  const probes = new Map<string, string>();
  for (const entry of status) {
    for (const provider of entry.status.providers) {
      if (!providers.includes(provider.name)) continue;
      maxStrikes = Math.max(maxStrikes, provider.strikes);
      if (provider.quorum_reason) quorumReasons.add(provider.quorum_reason);
      if (provider.last_probe) {
        probes.set(`${provider.name}@${provider.last_probe.at}`, provider.last_probe.result);
      }
      if (provider.blacklist && provider.state === "blacklisted") {
        const key = `${provider.name}@${provider.blacklist.until}`;
        if (!episodes.has(key)) {
          episodes.set(key, {
            provider: provider.name,
            reason: provider.blacklist.reason,
            strikes: provider.strikes,
            cooldownSeconds: (Date.parse(provider.blacklist.until) - entry.at) / 1000,
          });
        }
      }
    }
  }
  const results = [...probes.values()];
  return {
    maxStrikes,
    blacklists: [...episodes.values()],
    quorumReasons: [...quorumReasons],
    probes: {
      pass: results.filter((result) => result === "pass").length,
      fail: results.filter((result) => result === "fail").length,
    },
  };
}

export function analyse(input: AnalysisInput): ScenarioFigures {
  const { timeline, heads, status } = input;
  const ops = [...input.ops].sort((a, b) => a.start - b.start);
  const before = ops.filter((op) => op.start < timeline.fault);
  const during = ops.filter((op) => op.start >= timeline.fault && op.start < timeline.clear);
  const after = ops.filter((op) => op.start >= timeline.clear);

  // "All down": the outage itself has no healthy provider, so it is judged on its own, and
  // so are the ops that were under way when it began (they may meet it or not).
  const counted = input.allDown
    ? [...before.filter((op) => op.end < timeline.fault), ...after]
    : ops;
  const ok = counted.filter(succeeded).length;

  const outOfService = outOfServiceRanges(status);
  let staleCount = 0;
  let strict = 0;
  let beyondTrail = 0;
  let afterVerdict = 0;
  let maxStale: number | null = null;
  const staleSamples: OpSample[] = [];
  for (const op of ops) {
    if (!op.resolved) continue;
    const behind = stalenessOf(op, heads);
    if (behind !== null) {
      maxStale = maxStale === null ? behind : Math.max(maxStale, behind);
      if (behind > LAG_LIMIT_SECONDS) {
        strict++;
        if (staleSamples.length < 5) {
          staleSamples.push({ ...sample(op, timeline), behindSeconds: behind });
        }
      }
      if (behind > TRAIL_LIMIT_SECONDS) beyondTrail++;
      if (behind > STALE_LIMIT_SECONDS) staleCount++;
    }
    // Routing check: an answer from the primary while the status route had it out of service
    // from before the op started until after it ended (all down aside: emergency use).
    if (
      !input.allDown &&
      providersOf(op).includes(PRIMARY) &&
      outOfService.some(([from, to]) => op.start >= from && op.end <= to)
    ) {
      afterVerdict++;
      if (staleSamples.length < 5) staleSamples.push(sample(op, timeline));
    }
  }

  const plainPrimary = (op: OpRecord) =>
    succeeded(op) && attemptsOf(op) === op.exchanges.length && providersOf(op).join() === PRIMARY;
  const firstHit = during.find((op) => !plainPrimary(op));
  const failoverOp = during.find(
    (op) => succeeded(op) && providersOf(op).length > 0 && !providersOf(op).includes(PRIMARY),
  );
  const returned = after.find((op) => succeeded(op) && providersOf(op).includes(PRIMARY));

  const latencies = ops.map((op) => op.end - op.start).sort((a, b) => a - b);

  let allDown: AllDownFigures | null = null;
  if (input.allDown) {
    const outage = during.filter((op) => op.end <= timeline.clear);
    const failed = outage.filter((op) => !succeeded(op));
    const jsonRpc = failed.filter(answeredByTheGateway);
    const answered = outage.filter(succeeded);
    const noProvider = (op: OpRecord) => op.exchanges.every((e) => e.providers.length === 0);
    const resumed = after.find(succeeded);
    allDown = {
      outageOps: outage.length,
      errorRate: outage.length === 0 ? 0 : failed.length / outage.length,
      jsonRpcErrors: jsonRpc.length,
      otherErrors: failed.length - jsonRpc.length,
      servedByGateway: answered.filter(noProvider).length,
      fromProviders: answered.filter((op) => !noProvider(op)).length,
      maxOutageMs: Math.max(0, ...outage.map((op) => op.end - op.start)),
      resumeMs: resumed ? resumed.end - timeline.clear : null,
      afterOps: after.length,
      afterOk: after.filter(succeeded).length,
    };
  }

  return {
    ops: {
      total: ops.length,
      calls: ops.reduce((sum, op) => sum + op.calls, 0),
      before: before.length,
      fault: during.length,
      after: after.length,
    },
    success: { ok, total: counted.length },
    wrong: ops.filter((op) => op.wrong !== null).length,
    stale: { count: staleCount, strict, beyondTrail, maxSeconds: maxStale, afterVerdict },
    failover: {
      ms: failoverOp ? failoverOp.end - timeline.fault : null,
      attempts: failoverOp ? attemptsOf(failoverOp) : null,
      via: failoverOp ? providersOf(failoverOp).join(",") : null,
      firstHit: firstHit
        ? {
            ok: succeeded(firstHit),
            attempts: attemptsOf(firstHit),
            extraAttempts: Math.max(
              0,
              ...firstHit.exchanges.map((exchange) => exchange.attempts - 1),
            ),
            providers: providersOf(firstHit).join(",") || "-",
            kind: firstHit.kind,
            calls: firstHit.calls,
          }
        : null,
      maxAttemptsDuringFault: Math.max(0, ...during.map(attemptsOf)),
      retriedOps: during.filter((op) => attemptsOf(op) > op.exchanges.length).length,
    },
    returnMs: returned ? returned.start - timeline.clear : null,
    observed: observedHealth(status, input.allDown ? PROVIDERS : [PRIMARY]),
    latencyMs: {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies[latencies.length - 1] ?? 0,
    },
    allDown,
    failures: ops
      .filter((op) => !succeeded(op) && (!input.allDown || counted.includes(op)))
      .slice(0, 8)
      .map((op) => sample(op, timeline)),
    staleSamples,
    logs: input.logs,
  };
}

/**
 * The calls a log query's completeness check may make of its own near the head (the receipts a
 * bloom hit asks for), which `x-gateway-attempts` counts with the attempts (docs/behaviour.md
 * §12.10): not a failover's.
 */
const LOG_CHECK_CALLS = 1;

/** The targets: with ≥ 1 healthy provider, 100 % success, 0 stale, failover within one attempt, return. */
export function verdicts(figures: ScenarioFigures, allDown: boolean): Verdict[] {
  const list: Verdict[] = [];
  const { success, stale, failover, returnMs } = figures;
  const rate = success.total === 0 ? 0 : success.ok / success.total;
  list.push({
    target: allDown ? "100 % success before and after the outage" : "100 % success",
    pass: success.total > 0 && success.ok === success.total,
    measured: `${success.ok}/${success.total} ops (${(rate * 100).toFixed(2)} %)${figures.wrong > 0 ? `, ${figures.wrong} wrong answers` : ""}`,
  });
  list.push({
    target: "every eth_getLogs answer holds exactly the node's logs of its range",
    pass: figures.logs.mismatches === 0,
    measured: `${figures.logs.checked - figures.logs.mismatches}/${figures.logs.checked} match; ${figures.logs.mismatches} differ`,
  });
  list.push({
    target: "0 stale answers",
    pass: stale.count === 0 && stale.afterVerdict === 0,
    measured: `${stale.count} (> ${STALE_LIMIT_SECONDS} s); ${stale.strict} > ${LAG_LIMIT_SECONDS} s; ${stale.afterVerdict} from a primary already out; max ${stale.maxSeconds ?? "-"} s`,
  });
  if (allDown) {
    const figuresAllDown = figures.allDown;
    list.push({
      target: "every outage request gets the gateway's own JSON-RPC answer, no hang",
      pass:
        figuresAllDown !== null &&
        figuresAllDown.outageOps > 0 &&
        figuresAllDown.otherErrors === 0 &&
        figuresAllDown.fromProviders === 0 &&
        figuresAllDown.jsonRpcErrors + figuresAllDown.servedByGateway === figuresAllDown.outageOps,
      measured: figuresAllDown
        ? `${figuresAllDown.jsonRpcErrors} JSON-RPC errors + ${figuresAllDown.servedByGateway} from the served head of ${figuresAllDown.outageOps}, ${figuresAllDown.otherErrors} other; slowest ${figuresAllDown.maxOutageMs} ms`
        : "-",
    });
    list.push({
      target: "service resumes after",
      pass:
        figuresAllDown !== null &&
        figuresAllDown.resumeMs !== null &&
        figuresAllDown.afterOps > 0 &&
        figuresAllDown.afterOk === figuresAllDown.afterOps,
      measured: figuresAllDown
        ? `first success ${figuresAllDown.resumeMs ?? "never"} ms after the restore; ${figuresAllDown.afterOk}/${figuresAllDown.afterOps} after`
        : "-",
    });
  } else {
    const hit = failover.firstHit;
    list.push({
      target: "failover within one attempt",
      pass:
        failover.ms !== null &&
        hit?.ok === true &&
        hit.extraAttempts <= 1 + (hit.kind === "logs" ? LOG_CHECK_CALLS : 0),
      measured:
        failover.ms === null || hit === null
          ? "no failover seen"
          : `first hit (${hit.kind}) ${hit.ok ? "ok" : "FAILED"} in ${hit.attempts} attempt(s) via ${hit.providers}${hit.kind === "logs" ? " (a log query: its completeness check's own call counted too)" : ""}; off the primary after ${failover.ms} ms`,
    });
  }
  list.push({
    target: "traffic returns to the primary",
    pass: returnMs !== null,
    measured: returnMs === null ? "never" : `${returnMs} ms after the fault was removed`,
  });
  return list;
}
