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
 * Waits `ms`, or less when `signal` aborts (then resolves all the same). The real one
 * (`afterDelay`) is a timer; tests pass one they fire themselves.
 */
export type HedgeTimer = (ms: number, signal?: AbortSignal) => Promise<void>;

export const afterDelay: HedgeTimer = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
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
/** A p90 read this recently stands: a second's new answers barely move a minute's p90. */
const P90_REFRESH_MS = 1000;

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
  /** One view per network as configured: a config change builds new networks, and new views. */
  readonly #views = new WeakMap<Network, RequestHedging>();
  /** p90s as last read, by key: read again at most once a second (a read walks the histogram). */
  readonly #p90s = new Map<string, { readonly at: number; readonly value: number }>();

  constructor(deps: HedgingDeps) {
    this.#deps = deps;
  }

  forRequest(network: Network): RequestHedging {
    let view = this.#views.get(network);
    if (view === undefined) {
      view = this.#view(network);
      this.#views.set(network, view);
    }
    return view;
  }

  #view(network: Network): RequestHedging {
    const { clock, telemetry } = this.#deps;
    const settings = network.settings.hedge;
    const { budget, latency } = this.#of(network.name);
    const key = (group: AttemptGroup, what: string) =>
      `${network.name}\u0000${group.slot.provider.name}\u0000${what}`;
    const methods = (group: AttemptGroup) => group.calls.map((entry) => entry.info.method);
    const own = (group: AttemptGroup) =>
      group.calls.length === 1 ? (group.calls[0]?.info.method ?? BATCH) : BATCH;
    const p90 = (of: string, now: number): number | null => {
      const known = this.#p90s.get(of);
      if (known !== undefined && now - known.at < P90_REFRESH_MS && now >= known.at) {
        return known.value;
      }
      // Too few answers yet is cheap to find out, and is not kept: the 50th answer counts at once.
      const value = latency.quantile(of, 0.9, now, HEDGE_MIN_SAMPLES);
      if (value !== null) this.#p90s.set(of, { at: now, value });
      return value;
    };
    return {
      requestStarted: () => {
        if (settings.max_ratio > 0) budget.request(clock());
      },
      delayFor: (group) => {
        if (group.slot.emergency || whyNotHedged(methods(group), settings) !== null) return null;
        const now = clock();
        const what = own(group);
        const known =
          p90(key(group, what), now) ?? (what === BATCH ? null : p90(key(group, ANY_READ), now));
        return hedgeDelayMs(known, settings);
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
