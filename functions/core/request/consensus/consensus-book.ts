import type { ConsensusConfig } from "../../config/consensus-schema.ts";
import type { Network } from "../../config/network-model.ts";
import { afterMinority, type MinorityRule } from "../../health/minority.ts";
import type { Telemetry } from "../../ports.ts";
import type { AttemptSlot } from "../../routing/selection.ts";
import { type EventSink, makeEvent } from "../../status/events.ts";
import type { HealthRecorder } from "../attempts/health-recorder.ts";

/**
 * What read consensus keeps in one container (docs/behaviour.md §17.5): each provider's counts
 * for the status route (agreed with the majority, in the minority, in a dispute without one),
 * the `inconsistent` incidents of the minority with the sit-out they may start, the metrics,
 * and the events, a dispute without a majority at most once a minute per network.
 */

export interface ConsensusCounts {
  /** Votes that were part of an agreed answer. */
  readonly agreed: number;
  /** Votes against an agreed answer: each an `inconsistent` incident. */
  readonly minority: number;
  /** Votes in a dispute that had no majority. */
  readonly disputed: number;
}

export const NO_CONSENSUS_COUNTS: ConsensusCounts = { agreed: 0, minority: 0, disputed: 0 };

/** At most one event for a dispute without a majority per network this often, per container. */
export const DISPUTE_EVENT_INTERVAL_MS = 60_000;

export interface ConsensusBookDeps {
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly events?: EventSink;
  readonly scrub: (text: string) => string;
}

export type ConsensusCallOutcome = "agreed" | "unconfirmed" | "disputed" | "short" | "no_votes";

export class ConsensusBook {
  readonly #deps: ConsensusBookDeps;
  readonly #health: HealthRecorder;
  readonly #counts = new Map<string, Map<string, ConsensusCounts>>();
  readonly #lastDisputeEvent = new Map<string, number>();

  constructor(deps: ConsensusBookDeps, health: HealthRecorder) {
    this.#deps = deps;
    this.#health = health;
  }

  /** Each provider's counts in this container, for the status route. */
  counts(network: string): ReadonlyMap<string, ConsensusCounts> {
    return this.#counts.get(network) ?? new Map();
  }

  /** One consensus call settled (metric `consensus_calls`). */
  called(network: Network, outcome: ConsensusCallOutcome): void {
    this.#deps.telemetry.count("consensus_calls", { network: network.name, outcome });
  }

  agreed(network: Network, providers: readonly string[]): void {
    for (const provider of providers) this.#count(network.name, provider, "agreed");
  }

  /**
   * A dispute without a majority: counted for each provider that voted, logged, and an event
   * naming each answer's digest and the block, at most once a minute per network.
   */
  disputed(network: Network, providers: readonly string[], detail: string): void {
    for (const provider of providers) this.#count(network.name, provider, "disputed");
    const now = this.#deps.clock();
    this.#deps.telemetry.log("warn", "read consensus: no majority", {
      network: network.name,
      detail: this.#deps.scrub(detail),
    });
    const last = this.#lastDisputeEvent.get(network.name);
    if (last !== undefined && now - last < DISPUTE_EVENT_INTERVAL_MS) return;
    this.#lastDisputeEvent.set(network.name, now);
    this.#event(network, null, "consensus_disputed", "no_majority", detail, now);
  }

  /**
   * A vote against the agreed answer: counted, the metric and a warning, every time. `penalised`
   * false (a call that runs the caller's code, whose answer may depend on a node's settings,
   * such as its gas cap): nothing more, so a caller cannot frame an honest provider.
   */
  minorityVote(network: Network, provider: string, detail: string, penalised: boolean): void {
    this.#count(network.name, provider, "minority");
    this.#deps.telemetry.count("consensus_minority", { network: network.name, provider });
    this.#deps.telemetry.log("warn", "read consensus: provider in the minority", {
      network: network.name,
      provider,
      detail: this.#deps.scrub(detail),
      penalised,
    });
  }

  /**
   * The request found `slot`'s provider in the minority (once, however many of its calls): an
   * `inconsistent` incident (one strike, as any) whose write also counts it in its shared
   * minority record; when that starts a sit-out, an event says so. Unlike a failure, a wrong
   * answer counts in emergency use too: a blacklisted provider that answers is still answering
   * wrongly. `detail` names the block and both answers' digests.
   */
  inconsistent(
    network: Network,
    settings: ConsensusConfig,
    slot: AttemptSlot,
    detail: string,
    writes: Promise<unknown>[],
  ): void {
    const provider = slot.provider;
    const rule: MinorityRule = {
      limit: settings.minority_limit,
      windowMs: settings.minority_window_seconds * 1000,
      sitOutMs: settings.sit_out_seconds * 1000,
    };
    const now = this.#deps.clock();
    let sitOutFrom = 0;
    const write = this.#health
      .incident(network, provider, "inconsistent", detail, undefined, (next, read) => {
        const consensus = afterMinority(read.consensus, now, rule);
        sitOutFrom = consensus.sitOutUntil > (read.consensus?.sitOutUntil ?? 0) ? now : 0;
        return { ...next, consensus, version: read.version + 1 };
      })
      .then((written) => {
        if (!written || sitOutFrom === 0) return;
        const until = new Date(sitOutFrom + rule.sitOutMs).toISOString();
        this.#event(
          network,
          provider.name,
          "consensus_sat_out",
          "minority",
          `in the minority ${rule.limit} times within ${settings.minority_window_seconds} s: left out of consensus routing until ${until}`,
          now,
        );
      });
    writes.push(write);
  }

  #count(network: string, provider: string, counter: keyof ConsensusCounts): void {
    let providers = this.#counts.get(network);
    if (providers === undefined) {
      providers = new Map();
      this.#counts.set(network, providers);
    }
    const counts = providers.get(provider) ?? NO_CONSENSUS_COUNTS;
    providers.set(provider, { ...counts, [counter]: counts[counter] + 1 });
  }

  #event(
    network: Network,
    provider: string | null,
    kind: "consensus_disputed" | "consensus_sat_out",
    reason: string,
    detail: string,
    at: number,
  ): void {
    this.#deps.events?.record(
      makeEvent({ network: network.name, at, provider, kind, reason, detail }, this.#deps.scrub),
    );
  }
}
