import type { Network } from "../network-model.ts";
import {
  HEDGE_BUDGET_WINDOW_SECONDS,
  HEDGE_LATENCY_WINDOW_SECONDS,
  HEDGE_MIN_SAMPLES,
} from "../policies.ts";
import type { Telemetry } from "../ports.ts";
import { HedgeBudget } from "./hedge-budget.ts";
import { hedgeDelayMs, whyNotHedged } from "./hedge-policy.ts";
import { LatencyWindows } from "./latency-window.ts";
import type { AttemptGroup } from "./plan.ts";

/**
 * Waits `ms`, then resolves true; resolves false at once when `signal` aborts first. The
 * real one (`afterDelay`) is a timer; tests pass one they fire themselves.
 */
export type HedgeTimer = (ms: number, signal: AbortSignal) => Promise<boolean>;

/**
 * A timer followed by one turn of the event loop's I/O: after a CPU stall the timer phase runs
 * before the answers that arrived meanwhile are read, and an answer already in the socket must
 * not be hedged.
 */
export const afterDelay: HedgeTimer = (ms, signal) =>
  new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      setImmediate(() => resolve(!signal.aborted));
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });

export type HedgeOutcome = "started" | "won" | "aborted";

/** What the attempt loop asks of hedging during one request. */
export interface RequestHedging {
  /** The request goes upstream: it counts toward the budget. */
  requestStarted(): void;
  /** How long the group's first attempt gets before a hedge, or null: never hedged. */
  delayFor(group: AttemptGroup): number | null;
  /** Takes one hedge from this container's budget for the network; false when it is spent. */
  takeBudget(): boolean;
  /** An attempt answered every call of its group: its latency teaches the p90. */
  answered(group: AttemptGroup, elapsedMs: number): void;
  readonly wait: HedgeTimer;
  /** Counts a hedge of an attempt on `provider` (the first attempt's, the one that was slow). */
  count(outcome: HedgeOutcome, provider: string): void;
}

export interface HedgingDeps {
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly timer?: HedgeTimer;
}

/** A provider's answers to every hedgeable single call, the stand-in for a rare method. */
const ANY_READ = "*";
/** Small batches are learned apart from single calls: they take longer. */
const BATCH = "[batch]";

/**
 * Hedged reads in one container (docs/behaviour.md §13): per network, the budget and each
 * provider's latency per method, learned from this container's own answers. No DynamoDB read
 * on the request path: a per-method p90 is not in the shared stats (one bucket per provider),
 * and a container's own answers reach a usable sample within seconds at any rate the budget
 * lets it hedge.
 */
export class Hedging {
  readonly #deps: HedgingDeps;
  readonly #networks = new Map<string, { budget: HedgeBudget; latency: LatencyWindows }>();

  constructor(deps: HedgingDeps) {
    this.#deps = deps;
  }

  forRequest(network: Network): RequestHedging {
    const { clock, telemetry } = this.#deps;
    const settings = network.settings.hedge;
    const { budget, latency } = this.#of(network.name);
    const key = (group: AttemptGroup, what: string) => `${group.slot.provider.name}\u0000${what}`;
    const methods = (group: AttemptGroup) => group.calls.map((entry) => entry.info.method);
    const own = (group: AttemptGroup) =>
      group.calls.length === 1 ? (group.calls[0]?.info.method ?? BATCH) : BATCH;
    return {
      requestStarted: () => {
        if (settings.max_ratio > 0) budget.request(clock());
      },
      delayFor: (group) => {
        if (group.slot.emergency || whyNotHedged(methods(group), settings) !== null) return null;
        const now = clock();
        const what = own(group);
        const p90 =
          latency.quantile(key(group, what), 0.9, now, HEDGE_MIN_SAMPLES) ??
          (what === BATCH
            ? null
            : latency.quantile(key(group, ANY_READ), 0.9, now, HEDGE_MIN_SAMPLES));
        return hedgeDelayMs(p90, settings);
      },
      takeBudget: () => budget.take(clock(), settings.max_ratio),
      answered: (group, elapsedMs) => {
        if (whyNotHedged(methods(group), settings) !== null) return;
        const now = clock();
        const what = own(group);
        latency.record(key(group, what), elapsedMs, now);
        if (what !== BATCH) latency.record(key(group, ANY_READ), elapsedMs, now);
      },
      wait: this.#deps.timer ?? afterDelay,
      count: (outcome, provider) =>
        telemetry.count("hedges", { network: network.name, provider, outcome }),
    };
  }

  #of(network: string) {
    let entry = this.#networks.get(network);
    if (entry === undefined) {
      entry = {
        budget: new HedgeBudget(HEDGE_BUDGET_WINDOW_SECONDS),
        latency: new LatencyWindows(HEDGE_LATENCY_WINDOW_SECONDS),
      };
      this.#networks.set(network, entry);
    }
    return entry;
  }
}
