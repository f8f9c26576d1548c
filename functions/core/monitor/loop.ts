import type { GatewayModel } from "../config/network-model.ts";
import type { Monitor } from "./monitor.ts";

/**
 * How ticks are scheduled. In Lambda, EventBridge starts a run once a minute and the run
 * ticks every `check_interval_seconds` until just before the next one, under a lease so two
 * runs never overlap. Locally (`npm start`) a plain timer ticks.
 */

export interface MonitorLease {
  /** True when this run may tick (the lease was free, expired or already ours). */
  acquire(): Promise<boolean>;
  release(): Promise<void>;
}

export interface MonitorLeaseStore {
  acquireMonitorLease(holder: string, now: number, expiresAt: number): Promise<boolean>;
  releaseMonitorLease(holder: string): Promise<void>;
}

/** The `LEASE#monitor` item held by `holder` until `expiresAt` (ms). */
export function monitorLease(
  store: MonitorLeaseStore,
  holder: string,
  clock: () => number,
  expiresAt: number,
): MonitorLease {
  return {
    acquire: () => store.acquireMonitorLease(holder, clock(), expiresAt),
    release: () => store.releaseMonitorLease(holder),
  };
}

export interface MonitorLoopOptions {
  readonly monitor: Monitor;
  readonly lease: MonitorLease;
  readonly clock: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** No tick may still be running at this time (ms). */
  readonly until: number;
  readonly intervalMs: number;
  /** The longest a tick can take (see `tickBudgetMs`): a tick starts only if it fits. */
  readonly tickBudgetMs: number;
}

export interface MonitorLoopResult {
  /** False when another run held the lease. */
  readonly leased: boolean;
  readonly ticks: number;
}

/** Ticks on a fixed cadence from now while a whole tick still fits before `until`. */
export async function runMonitorLoop(options: MonitorLoopOptions): Promise<MonitorLoopResult> {
  const { monitor, lease, clock, sleep, until, intervalMs, tickBudgetMs } = options;
  if (!(await lease.acquire())) return { leased: false, ticks: 0 };
  let ticks = 0;
  try {
    for (let due = clock(); due + tickBudgetMs <= until; ) {
      const wait = due - clock();
      if (wait > 0) await sleep(wait);
      await monitor.tick();
      ticks++;
      // A tick that overran its slot is followed at once, not by a burst of catch-up ticks.
      due = Math.max(due + intervalMs, clock());
    }
  } finally {
    await lease.release();
  }
  return { leased: true, ticks };
}

/** Slack for the DynamoDB reads and writes around a tick's upstream calls. */
const TICK_STORAGE_MS = 1_000;

/** A tick's worst case: the quorum check's timeout, then a probe's, then storage. */
export function tickBudgetMs(model: GatewayModel): number {
  let calls = 0;
  for (const network of model.networks.values()) {
    const { quorum, probe } = network.settings;
    calls = Math.max(calls, quorum.check_timeout_ms + probe.timeout_ms);
  }
  return calls + TICK_STORAGE_MS;
}

/** EventBridge starts a run every 60 s; a run ends just before, so runs rarely meet. */
export const SCHEDULED_RUN_MS = 58_000;
/** Never run into the Lambda timeout: the last tick ends this long before it. */
const LAMBDA_END_MARGIN_MS = 5_000;

export interface ScheduledRunOptions {
  readonly monitor: Monitor;
  readonly model: () => Promise<GatewayModel>;
  readonly leaseStore: MonitorLeaseStore;
  /** Identifies this run in the lease (the Lambda request id). */
  readonly holder: string;
  /** `context.getRemainingTimeInMillis()` at the start of the invocation. */
  readonly remainingMs: number;
  readonly clock: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** One scheduled invocation: take the lease, tick until just before the next schedule. */
export async function runScheduled(options: ScheduledRunOptions): Promise<MonitorLoopResult> {
  const { clock } = options;
  const startedAt = clock();
  const model = await options.model();
  const until = startedAt + Math.min(SCHEDULED_RUN_MS, options.remainingMs - LAMBDA_END_MARGIN_MS);
  return runMonitorLoop({
    monitor: options.monitor,
    lease: monitorLease(options.leaseStore, options.holder, clock, until),
    clock,
    sleep: options.sleep,
    until,
    intervalMs: model.checkIntervalSeconds * 1000,
    tickBudgetMs: tickBudgetMs(model),
  });
}

/**
 * For the local runtime: ticks now and then every `intervalMs` (measured from each tick's
 * start, never overlapping). `stop()` cancels the timer and waits for a running tick.
 */
export function startMonitorTimer(
  monitor: Monitor,
  intervalMs: number,
  onError: (error: unknown) => void = (error) => console.error("monitor tick failed:", error),
): () => Promise<void> {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const run = (): void => {
    const startedAt = Date.now();
    running = monitor
      .tick()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(run, Math.max(0, intervalMs - (Date.now() - startedAt)));
      });
  };
  run();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
