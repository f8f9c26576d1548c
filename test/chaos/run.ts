import { setTimeout as sleep } from "node:timers/promises";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { analyse, verdicts } from "./analysis.ts";
import {
  BACKUP,
  BLOCK_TIME_SECONDS,
  CHAIN_ID,
  chaosConfig,
  KEY_PLACEHOLDER,
  NETWORK,
  PRIMARY,
  PROVIDERS,
  SECONDARY,
} from "./config.ts";
import type { ScenarioFigures, Timeline, Verdict } from "./figures.ts";
import { compareLogs, LogFeeder } from "./logs-check.ts";
import { HeadTracker, providerOf, StatusPoller, waitFor } from "./observe.ts";
import type { Scenario, ScenarioContext } from "./scenarios.ts";
import type { SecretScanner } from "./secrets.ts";
import { providersOf, succeeded, Traffic } from "./traffic.ts";

/** How much traffic and how long each phase lasts. */
export interface ChaosSize {
  readonly name: "ci" | "quick" | "full";
  /** Concurrent viem clients per scenario, each sending one op after another. */
  readonly workers: number;
  readonly pauseMs: number;
  /** Hard cap of ops per scenario (the stream is bounded). */
  readonly maxOps: number;
  /** Traffic before the fault. */
  readonly baselineMs: number;
  /** Traffic kept on the fault once the failover is seen. */
  readonly afterFailoverMs: number;
  /** Traffic kept after it returned to the primary. */
  readonly tailMs: number;
  readonly flapCycles: number;
  readonly flapMs: number;
  readonly outageMs: number;
  /** Scenarios run at the same time (each on its own nodes, shims and stack). */
  readonly concurrency: number;
  readonly clientTimeoutMs: number;
  readonly warmupTimeoutMs: number;
  readonly failoverTimeoutMs: number;
  readonly returnTimeoutMs: number;
}

const WAITS = {
  clientTimeoutMs: 8_000,
  warmupTimeoutMs: 30_000,
  failoverTimeoutMs: 20_000,
  returnTimeoutMs: 45_000,
} as const;

export const SIZES: Readonly<Record<ChaosSize["name"], ChaosSize>> = {
  ci: {
    name: "ci",
    workers: 2,
    pauseMs: 40,
    maxOps: 1_500,
    baselineMs: 500,
    afterFailoverMs: 1_000,
    tailMs: 300,
    flapCycles: 2,
    flapMs: 2_000,
    outageMs: 2_000,
    concurrency: 3,
    ...WAITS,
  },
  quick: {
    name: "quick",
    workers: 2,
    pauseMs: 20,
    maxOps: 3_000,
    baselineMs: 1_000,
    afterFailoverMs: 2_000,
    tailMs: 1_000,
    flapCycles: 3,
    flapMs: 2_000,
    outageMs: 3_000,
    concurrency: 2,
    ...WAITS,
  },
  full: {
    name: "full",
    workers: 4,
    pauseMs: 5,
    maxOps: 50_000,
    baselineMs: 3_000,
    afterFailoverMs: 5_000,
    tailMs: 3_000,
    flapCycles: 5,
    flapMs: 2_000,
    outageMs: 5_000,
    concurrency: 1,
    ...WAITS,
  },
};

export interface ScenarioResult {
  readonly name: string;
  readonly fault: string;
  readonly allDown: boolean;
  readonly durationMs: number;
  /** Set when the harness itself failed (a node did not start, warm-up timed out…). */
  readonly harnessError: string | null;
  readonly figures: ScenarioFigures | null;
  readonly verdicts: readonly Verdict[];
  readonly pass: boolean;
  /** Phase times relative to the fault (ms). */
  readonly phases: {
    readonly baselineMs: number;
    readonly faultMs: number;
    readonly recoveryMs: number;
  } | null;
  /** Metric lines the gateway wrote (all scanned for the key). */
  readonly metricLines: number;
}

export interface RunHooks {
  readonly scanner: SecretScanner;
  /** The value behind `${CHAOS_KEY}`. */
  readonly secret: string;
  readonly log?: (line: string) => void;
}

const HEAD_SAMPLE_MS = 250;
const STATUS_POLL_MS = 250;

/** One scenario on its own three anvil nodes, three fault shims and local stack. */
export async function runScenario(
  scenario: Scenario,
  size: ChaosSize,
  hooks: RunHooks,
): Promise<ScenarioResult> {
  const log = hooks.log ?? (() => {});
  const started = Date.now();
  const cleanups: Array<() => Promise<unknown>> = [];
  let metricLines = 0;
  try {
    const nodes = (await Promise.all(
      PROVIDERS.map(() => startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: BLOCK_TIME_SECONDS })),
    )) as [AnvilNode, AnvilNode, AnvilNode];
    for (const node of nodes) cleanups.push(() => node.stop());
    const shims = (await Promise.all(nodes.map((node) => startFaultShim(node.url)))) as [
      FaultShim,
      FaultShim,
      FaultShim,
    ];
    for (const shim of shims) cleanups.push(() => shim.close());
    const feeder = new LogFeeder(nodes);
    await feeder.start();
    cleanups.push(() => feeder.stop());
    const stack: LocalStack = await startLocalStack({
      config: chaosConfig([shims[0].url, shims[1].url, shims[2].url]),
      monitor: true,
      env: { [KEY_PLACEHOLDER]: hooks.secret },
      writeMetrics: (line) => {
        metricLines++;
        hooks.scanner.scan("metrics", line);
      },
    });
    cleanups.push(() => stack.close());
    cleanups.push(async () => {
      // Pending metrics go out (and through the scan) before the stack stops.
      stack.runtime.telemetry.flush();
      stack.monitor?.telemetry.flush();
    });
    const context: ScenarioContext = { shims, nodes };

    const heads = new HeadTracker(
      PROVIDERS.flatMap((provider, index) => [
        { name: `node:${provider}`, url: nodes[index]?.url ?? "" },
        { name: `shim:${provider}`, url: shims[index]?.url ?? "" },
      ]),
      HEAD_SAMPLE_MS,
    );
    heads.start();
    cleanups.push(() => heads.stop());
    const poller = new StatusPoller(
      `${stack.url}/${NETWORK}/status`,
      STATUS_POLL_MS,
      hooks.scanner,
    );

    const ready = await waitFor(
      async () => {
        const status = await poller.poll();
        return (
          status !== undefined &&
          !status.monitor.stale &&
          status.active_provider === PRIMARY &&
          status.providers.every(
            (provider) => provider.state === "healthy" && provider.in_quorum,
          ) &&
          PROVIDERS.every((provider) => heads.at(`shim:${provider}`, Date.now()) !== undefined)
        );
      },
      size.warmupTimeoutMs,
      100,
    );
    if (!ready) {
      throw new Error(
        `warm-up: the providers were not all in quorum with the primary active within ${size.warmupTimeoutMs} ms: ${JSON.stringify(poller.latest()?.status.providers.map((p) => [p.name, p.state, p.quorum_reason]))}`,
      );
    }
    poller.start();
    cleanups.push(() => poller.stop());

    const traffic = new Traffic({
      url: `${stack.url}/${NETWORK}`,
      workers: size.workers,
      pauseMs: size.pauseMs,
      maxOps: size.maxOps,
      clientTimeoutMs: size.clientTimeoutMs,
      // A block the healthy nodes have had for a moment (they mine independently), and the
      // gateway shows: one above its served head is not shown yet (docs/behaviour.md §10.4).
      settledBlock: () => {
        const lowest = heads.minNumberNow([`node:${SECONDARY}`, `node:${BACKUP}`]);
        if (lowest === null) return null;
        const served = poller.latest()?.status.served_head.served ?? Number.POSITIVE_INFINITY;
        return BigInt(Math.max(0, Math.min(lowest - 1, served)));
      },
      scanner: hooks.scanner,
    });
    const readyAt = Date.now();
    traffic.start();
    cleanups.push(() => traffic.stop());
    await sleep(size.baselineMs);

    // From the moment the fault is being put in force: an op sent meanwhile may meet it.
    const faultAt = Date.now();
    await scenario.apply(context);
    if (scenario.sentinel) await traffic.runOnce(scenario.sentinel);
    log(`${scenario.name}: fault on`);
    if (scenario.hold) {
      await scenario.hold(context, {
        ...size,
        waitForPrimary: (check, timeoutMs) =>
          waitFor(() => {
            const latest = poller.latest();
            const primary =
              latest && latest.sentAt > faultAt ? providerOf(latest.status, PRIMARY) : undefined;
            return primary !== undefined && check(primary);
          }, timeoutMs),
      });
    } else {
      const seen = await waitFor(() => {
        const failedOver = traffic.ops.some(
          (op) =>
            op.start >= faultAt &&
            succeeded(op) &&
            providersOf(op).length > 0 &&
            !providersOf(op).includes(PRIMARY),
        );
        const latest = poller.latest();
        const primary =
          latest && latest.at > faultAt ? providerOf(latest.status, PRIMARY) : undefined;
        return (
          (failedOver && primary !== undefined && primary.state !== "healthy") || traffic.exhausted
        );
      }, size.failoverTimeoutMs);
      log(
        `${scenario.name}: ${seen ? "failover seen" : "no failover seen"} after ${Date.now() - faultAt} ms`,
      );
      await sleep(size.afterFailoverMs);
    }

    await scenario.clear(context);
    const clearAt = Date.now();
    log(`${scenario.name}: fault off after ${clearAt - faultAt} ms`);
    const returned = await waitFor(
      () =>
        traffic.exhausted ||
        traffic.ops.some(
          (op) => op.start >= clearAt && succeeded(op) && providersOf(op).includes(PRIMARY),
        ),
      size.returnTimeoutMs,
    );
    log(
      `${scenario.name}: ${returned ? "back on the primary" : "not back on the primary"} after ${Date.now() - clearAt} ms`,
    );
    await sleep(size.tailMs);
    await traffic.stop();
    const endAt = Date.now();
    await poller.stop();
    await heads.stop();

    const logs = await compareLogs(traffic.ops, nodes, size.returnTimeoutMs);
    await feeder.stop();
    const timeline: Timeline = { ready: readyAt, fault: faultAt, clear: clearAt, end: endAt };
    const figures = analyse({
      logs,
      ops: traffic.ops,
      status: poller.samples,
      heads,
      timeline,
      allDown: scenario.allDown === true,
    });
    const list = verdicts(figures, scenario.allDown === true);
    return {
      name: scenario.name,
      fault: scenario.fault,
      allDown: scenario.allDown === true,
      durationMs: Date.now() - started,
      harnessError: null,
      figures,
      verdicts: list,
      pass: list.every((verdict) => verdict.pass),
      phases: {
        baselineMs: faultAt - readyAt,
        faultMs: clearAt - faultAt,
        recoveryMs: endAt - clearAt,
      },
      metricLines,
    };
  } catch (error) {
    return {
      name: scenario.name,
      fault: scenario.fault,
      allDown: scenario.allDown === true,
      durationMs: Date.now() - started,
      harnessError: error instanceof Error ? error.message : String(error),
      figures: null,
      verdicts: [],
      pass: false,
      phases: null,
      metricLines,
    };
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch(() => undefined);
    }
  }
}

/** Runs the scenarios, `size.concurrency` at a time, and returns their results in order. */
export async function runMatrix(
  scenarios: readonly Scenario[],
  size: ChaosSize,
  hooks: RunHooks & { onResult?: (result: ScenarioResult) => void },
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = new Array(scenarios.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, size.concurrency) }, async () => {
    for (;;) {
      const index = next++;
      const scenario = scenarios[index];
      if (scenario === undefined) return;
      const result = await runScenario(scenario, size, hooks);
      results[index] = result;
      hooks.onResult?.(result);
    }
  });
  await Promise.all(lanes);
  return results;
}
