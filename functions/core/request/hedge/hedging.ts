import type { Network } from "../../config/network-model.ts";
import {
  HEDGE_BUDGET_WINDOW_SECONDS,
  HEDGE_LATENCY_WINDOW_SECONDS,
  HEDGE_MIN_SAMPLES,
} from "../../policies.ts";
import type { HedgeTimer, Telemetry } from "../../ports.ts";
import type { AttemptGroup } from "../vocabulary.ts";
import { HedgeBudget } from "./hedge-budget.ts";
import { hedgeDelayMs, whyNotHedged } from "./hedge-policy.ts";
import { LatencyWindows } from "./latency-window.ts";

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
  readonly timer: HedgeTimer;
  /** Counts a hedge of an attempt on `provider` (the first attempt's, the one that was slow). */
  count(outcome: HedgeOutcome, provider: string): void;
}

export interface HedgingDeps {
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly timer: HedgeTimer;
}

/** A provider's answers to every hedgeable single call, the stand-in for a rare method. */
const ANY_READ = "*";
/** Small batches are learned apart from single calls: they take longer. */
const BATCH = "[batch]";
/** A p90 read this recently stands: a second's new answers barely move a minute's p90. */
const P90_REFRESH_MS = 1000;

/** One provider's latencies by method (or `ANY_READ`, `BATCH`), and their p90s as last read. */
class ProviderLatency {
  readonly #windows = new LatencyWindows(HEDGE_LATENCY_WINDOW_SECONDS);
  readonly #p90s = new Map<string, { readonly at: number; readonly value: number }>();

  record(what: string, latencyMs: number, now: number): void {
    this.#windows.record(what, latencyMs, now);
  }

  /** Too few answers yet is cheap to find out and is not kept: the 50th answer counts at once. */
  p90(what: string, now: number): number | null {
    const known = this.#p90s.get(what);
    if (known !== undefined && now - known.at < P90_REFRESH_MS && now >= known.at) {
      return known.value;
    }
    const value = this.#windows.quantile(what, 0.9, now, HEDGE_MIN_SAMPLES);
    if (value !== null) this.#p90s.set(what, { at: now, value });
    return value;
  }
}

/**
 * Hedged reads in one container (docs/behaviour.md §13): per network, the budget and each
 * provider's latency per method, learned from this container's own answers. No DynamoDB read
 * on the request path: a per-method p90 is not in the shared stats (one bucket per provider),
 * and a container's own answers reach a usable sample within seconds at any rate the budget
 * lets it hedge.
 */
export class Hedging {
  readonly #deps: HedgingDeps;
  readonly #budgets = new Map<string, HedgeBudget>();
  /** network → provider → latencies. */
  readonly #latency = new Map<string, Map<string, ProviderLatency>>();
  /** One view per network as configured: a config change builds new networks, and new views. */
  readonly #views = new WeakMap<Network, RequestHedging>();

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
    let budget = this.#budgets.get(network.name);
    if (budget === undefined) {
      budget = new HedgeBudget(HEDGE_BUDGET_WINDOW_SECONDS);
      this.#budgets.set(network.name, budget);
    }
    const spent = budget;
    let byProvider = this.#latency.get(network.name);
    if (byProvider === undefined) {
      byProvider = new Map();
      this.#latency.set(network.name, byProvider);
    }
    const providers = byProvider;
    const latencyOf = (group: AttemptGroup): ProviderLatency => {
      const name = group.slot.provider.name;
      let latency = providers.get(name);
      if (latency === undefined) {
        latency = new ProviderLatency();
        providers.set(name, latency);
      }
      return latency;
    };
    /** The method a single call is learned by, or `BATCH`; null: never hedged. */
    const hedgeable = (group: AttemptGroup): string | null => {
      const [only] = group.calls;
      if (group.calls.length === 1 && only !== undefined) {
        return whyNotHedged([only.info.method], settings) === null ? only.info.method : null;
      }
      const methods = group.calls.map((entry) => entry.info.method);
      return whyNotHedged(methods, settings) === null ? BATCH : null;
    };
    return {
      requestStarted: () => {
        if (settings.max_ratio > 0) spent.request(clock());
      },
      delayFor: (group) => {
        const what = group.slot.emergency ? null : hedgeable(group);
        if (what === null) return null;
        const now = clock();
        const latency = latencyOf(group);
        const p90 = latency.p90(what, now) ?? (what === BATCH ? null : latency.p90(ANY_READ, now));
        return hedgeDelayMs(p90, settings);
      },
      takeBudget: () => spent.take(clock(), settings.max_ratio),
      answered: (group, elapsedMs) => {
        const what = hedgeable(group);
        if (what === null) return;
        const now = clock();
        const latency = latencyOf(group);
        latency.record(what, elapsedMs, now);
        if (what !== BATCH) latency.record(ANY_READ, elapsedMs, now);
      },
      timer: this.#deps.timer,
      count: (outcome, provider) =>
        telemetry.count("hedges", { network: network.name, provider, outcome }),
    };
  }
}
