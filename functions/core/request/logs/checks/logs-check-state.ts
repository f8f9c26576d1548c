import type { CallInfo } from "../../../classify/verdict.ts";
import type { Telemetry } from "../../../ports.ts";
import { type EventSink, makeEvent } from "../../../status/events.ts";
import { type BlockHeader, HeaderMemory, headerAnswered } from "./logs-headers.ts";

/**
 * What the log checks keep in one container (docs/behaviour.md §12.12): the headers seen, the
 * bloom hits the receipts showed to be false (so the next query over that block asks no
 * receipts again), each provider's counts for the status route, and the rate limit of the
 * "logs_missing_data" event.
 */

export interface LogCheckCounts {
  /** Answers dropped because the block's header showed data missing (bloom hit, stale log). */
  readonly missing_data: number;
  /** Bloom hits the block's receipts showed to be false: the answer was used. */
  readonly bloom_false_positives: number;
  /** Bloom hits no receipts could settle (none to be had, or past the budget): answer used. */
  readonly bloom_unresolved: number;
  /** Answers dropped because the provider did not show their `toBlock` (or block hash). */
  readonly reach_failures: number;
  /** Header members asked beside log queries, and header or receipt calls of their own. */
  readonly headers_asked: number;
  readonly receipts_asked: number;
}

type Counter = keyof LogCheckCounts;

/** Counts of a provider the checks have not met yet. */
export const NO_LOG_CHECKS: LogCheckCounts = {
  missing_data: 0,
  bloom_false_positives: 0,
  bloom_unresolved: 0,
  reach_failures: 0,
  headers_asked: 0,
  receipts_asked: 0,
};

/** At most one "logs_missing_data" event per provider this often, per container. */
export const MISSING_DATA_EVENT_INTERVAL_MS = 5 * 60_000;
/** Bloom hits resolved as false, remembered by block hash and filter. */
const FALSE_POSITIVES_KEPT = 1024;

export interface LogCheckDeps {
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly events?: EventSink;
  readonly scrub: (text: string) => string;
}

export class LogChecks {
  readonly headers = new HeaderMemory();
  readonly #deps: LogCheckDeps;
  readonly #falsePositives = new Set<string>();
  readonly #counts = new Map<string, Map<string, LogCheckCounts>>();
  readonly #lastEvent = new Map<string, number>();

  constructor(deps: LogCheckDeps) {
    this.#deps = deps;
  }

  /** Each provider's counts in this container, for the status route. */
  counts(network: string): ReadonlyMap<string, LogCheckCounts> {
    return this.#counts.get(network) ?? new Map();
  }

  count(network: string, provider: string, counter: Counter, by = 1): void {
    if (by <= 0) return;
    let providers = this.#counts.get(network);
    if (providers === undefined) {
      providers = new Map();
      this.#counts.set(network, providers);
    }
    const counts = providers.get(provider) ?? NO_LOG_CHECKS;
    providers.set(provider, { ...counts, [counter]: counts[counter] + by });
  }

  /** A block a quorum member answered a caller with: a header the checks may judge against. */
  keepAnswered(network: string, info: CallInfo, member: unknown): void {
    const header = headerAnswered(info, member);
    if (header !== null) this.headers.keep(network, header);
  }

  isFalsePositive(header: BlockHeader, filterKey: string): boolean {
    return this.#falsePositives.has(`${header.hash}|${filterKey}`);
  }

  rememberFalsePositive(header: BlockHeader, filterKey: string): void {
    this.#falsePositives.add(`${header.hash}|${filterKey}`);
    for (const oldest of this.#falsePositives) {
      if (this.#falsePositives.size <= FALSE_POSITIVES_KEPT) break;
      this.#falsePositives.delete(oldest);
    }
  }

  /**
   * A provider's answer was dropped for data its block commits to: counted, a metric, and an
   * event at most once per provider every few minutes (an indexer near the head would
   * otherwise write one per query while the provider lags).
   */
  caughtMissing(
    network: string,
    provider: string,
    reason: "missing_data" | "stale_log",
    detail: string,
  ): void {
    const now = this.#deps.clock();
    this.count(network, provider, "missing_data");
    this.#deps.telemetry.count("logs_answers_dropped", { network, provider, reason });
    const key = `${network}\u0000${provider}`;
    const last = this.#lastEvent.get(key);
    if (last !== undefined && now - last < MISSING_DATA_EVENT_INTERVAL_MS) return;
    this.#lastEvent.set(key, now);
    this.#deps.telemetry.log("warn", "log answer missing data", { network, provider, reason });
    this.#deps.events?.record(
      makeEvent(
        { network, at: now, provider, kind: "logs_missing_data", reason, detail },
        this.#deps.scrub,
      ),
    );
  }

  /** A provider did not show the block its answer needed: counted and a metric. */
  caughtBehind(network: string, provider: string): void {
    this.count(network, provider, "reach_failures");
    this.#deps.telemetry.count("logs_answers_dropped", { network, provider, reason: "reach" });
  }
}
