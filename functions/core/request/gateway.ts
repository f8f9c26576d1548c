import { publicationDelayMs, servedHeadAt } from "../chain/chain-head.ts";
import { handBack, report, respond } from "./answer-stages.ts";
import { attempts, penalties, stateWrites } from "./attempts/attempt-stages.ts";
import { cacheLookup, cacheOutcome, cacheStore } from "./cache/cache-stages.ts";
import { consensus, consensusApart, consensusOutcome } from "./consensus/consensus-stages.ts";
import { ContainerState } from "./container-state.ts";
import { filters } from "./filters/filters-stage.ts";
import type { GatewayDeps, RpcOptions } from "./gateway-deps.ts";
import {
  heldUncached,
  holdBack,
  loneBlockNumber,
  publishHead,
  servedHead,
  unpinnedRetry,
} from "./head/head-stages.ts";
import { InFlight, type Stage } from "./in-flight.ts";
import { admit, drawScope, parse, readState, resolveNetwork } from "./intake-stages.ts";
import { logQueries, logQueriesApart } from "./logs/logs-stages.ts";
import { checkSends, sends, settleSends } from "./send/send-stages.ts";
import { walk } from "./stages.ts";
import type { GatewayResponse } from "./vocabulary.ts";

export type { GatewayDeps, RpcOptions } from "./gateway-deps.ts";
export type { GatewayResponse } from "./vocabulary.ts";

/**
 * The request pipeline (docs/architecture.md "The request pipeline"): every request walks
 * these stages in this order. A feature plugs in as a stage of its own folder, at its place in
 * the list; a stage that has nothing to do for a request returns at once, and one that has
 * the answer already (an unknown network, a body that is not JSON-RPC, the lone
 * `eth_blockNumber` the served head answers) ends the walk.
 */
export const REQUEST_STAGES: readonly Stage[] = [
  // intake
  resolveNetwork,
  parse,
  readState,
  loneBlockNumber,
  drawScope,
  admit,
  // before the attempts
  servedHead,
  cacheLookup,
  sends,
  filters,
  logQueriesApart,
  consensusApart,
  // the attempts
  attempts,
  consensus,
  unpinnedRetry,
  logQueries,
  // settle
  checkSends,
  publishHead,
  settleSends,
  cacheStore,
  holdBack,
  penalties,
  stateWrites,
  // the answer
  respond,
  cacheOutcome,
  consensusOutcome,
  heldUncached,
  report,
];

/**
 * A call the gateway serves to itself as part of a request (a log query's piece, a filter's
 * read): the same stages, but never the short path, never cut into log queries again, and
 * handed back to its request instead of reported as one.
 */
export const INTERNAL_STAGES: readonly Stage[] = [
  resolveNetwork,
  parse,
  readState,
  drawScope,
  admit,
  servedHead,
  cacheLookup,
  sends,
  filters,
  consensusApart,
  attempts,
  consensus,
  unpinnedRetry,
  checkSends,
  publishHead,
  settleSends,
  cacheStore,
  holdBack,
  penalties,
  stateWrites,
  respond,
  cacheOutcome,
  heldUncached,
  handBack,
];

export class Gateway {
  readonly #deps: GatewayDeps;
  readonly #container: ContainerState;

  /** `container`: what this container knows across requests, which the status route reads too. */
  constructor(deps: GatewayDeps, container: ContainerState = new ContainerState(deps)) {
    this.#deps = deps;
    this.#container = container;
  }

  handleRpc(networkName: string, body: string, options: RpcOptions = {}): Promise<GatewayResponse> {
    const flight = new InFlight(this, this.#container, networkName, body, options);
    const stages = options.internal === undefined ? REQUEST_STAGES : INTERNAL_STAGES;
    return walk(stages, flight, this.#deps.stageObserver);
  }

  /**
   * Asks one quorum member of `networkName` for its head now and publishes it as the served
   * head's polls do (the head follower's look for a block when it is due); the number, or null.
   */
  async pollHead(networkName: string, timeoutMs: number): Promise<number | null> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return null;
    const state = await this.#deps.cache.get(network.name, { freshHead: true });
    return this.#container.heads.pollNow(network, state, model.checkIntervalSeconds, timeoutMs);
  }

  /**
   * The served head of `networkName` now, as `eth_blockNumber` answers it, without ever asking
   * a provider (the head follower's look: its own polls find new blocks); null while there is
   * none. The container's background poll is paced by it as by any request.
   */
  async servedHead(networkName: string): Promise<number | null> {
    const model = this.#deps.model();
    const network = model.networks.get(networkName);
    if (network === undefined) return null;
    const state = await this.#deps.cache.get(network.name, { freshHead: true });
    this.#container.heads.afterRequest(network, state, model.checkIntervalSeconds);
    const delay = publicationDelayMs(network.settings.head_cache_ms);
    return servedHeadAt(state.head, this.#deps.clock(), delay);
  }
}
