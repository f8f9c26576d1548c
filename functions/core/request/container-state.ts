import type { Network } from "../config/network-model.ts";
import type { SelectionContext } from "../routing/selection.ts";
import { HealthRecorder } from "./attempts/health-recorder.ts";
import { HistoryLearning } from "./attempts/history-learning.ts";
import { ServableMethods } from "./attempts/servable.ts";
import { AnswerCache } from "./cache/answer-cache.ts";
import { ConsensusBook } from "./consensus/consensus-book.ts";
import type { GatewayDeps } from "./gateway-deps.ts";
import { HeadPublisher } from "./head/head-publication.ts";
import { ObservedHeads } from "./head/observed-head.ts";
import { reachableBlocks } from "./head/served-head.ts";
import { Hedging } from "./hedge/hedging.ts";
import { LogChecks } from "./logs/checks/logs-check-state.ts";
import type { ReachDeps } from "./logs/logs-reach.ts";
import type { ScopeDeps } from "./scope.ts";

/**
 * What one container knows beyond any request (docs/architecture.md "The request pipeline"):
 * the health bookkeeping, the methods providers answered, the heads seen in answers and the
 * served head's publication, the answer cache, hedging's budget and latencies, the log
 * checks' headers and counts, what attempts taught of providers' history. The gateway's stages read and feed it; the status route reads
 * it (`demoted`, `observedHeads`, `reachable`, `answerCache`, `logCheckCounts`). One per
 * container, built with the gateway from the same deps.
 */
export class ContainerState {
  readonly deps: GatewayDeps;
  readonly health: HealthRecorder;
  readonly servable = new ServableMethods();
  readonly observed = new ObservedHeads();
  readonly heads: HeadPublisher;
  readonly answers: AnswerCache;
  readonly hedging: Hedging;
  /** What attempts teach about providers' history, and block numbers by hash (§16.3). */
  readonly history: HistoryLearning;
  /** The log-attempt path's parts (docs/behaviour.md §12.12). */
  readonly reach: ReachDeps;
  /** Read consensus's counts, incidents and events (docs/behaviour.md §17). */
  readonly consensus: ConsensusBook;
  /** What every request's scope is drawn from beside the request and the state. */
  readonly scopeDeps: ScopeDeps;

  constructor(deps: GatewayDeps) {
    this.deps = deps;
    const health = new HealthRecorder(deps);
    this.health = health;
    this.reach = { observed: this.observed, health, checks: new LogChecks(deps) };
    this.heads = new HeadPublisher({
      ...deps,
      observed: this.observed,
      demoted: (network, now) => health.demoted(network, now),
    });
    this.answers = new AnswerCache(deps);
    const history = new HistoryLearning(deps);
    this.history = history;
    this.consensus = new ConsensusBook(deps, health);
    this.scopeDeps = {
      random: deps.random,
      demoted: (network, now) => health.demoted(network, now),
      observed: this.observed,
      numberOfHash: (network, state) => history.numberOfHash(network, state),
    };
    this.hedging = new Hedging({
      clock: deps.clock,
      telemetry: deps.telemetry,
      timer: deps.hedgeTimer,
    });
  }

  /** Providers of the network this container has rotated away from (force-rotate). */
  demoted(network: Network): ReadonlySet<string> {
    return this.health.demoted(network, this.deps.clock());
  }

  /** Heads this container saw in answers that are still in force, by provider. */
  observedHeads(network: Network, context: SelectionContext): ReadonlyMap<string, number> {
    return this.observed.inForce(network, context);
  }

  /** The highest block each provider can have reached by now, as block-aware routing sees it. */
  reachable(network: Network, context: SelectionContext): (provider: string) => number | null {
    return reachableBlocks(
      context.state.quorum,
      this.observed.sightings(network, context),
      context.now,
      network.settings.block_time_seconds * 1000,
    );
  }

  /** This container's answer cache: hits and misses by class, and its memory use. */
  answerCache(network: string) {
    return { classes: this.answers.counts(network), memory: this.answers.memoryUsage() };
  }

  /** The log checks' counts by provider (docs/behaviour.md §12.12). */
  logCheckCounts(network: string) {
    return this.reach.checks.counts(network);
  }
}
