import type { Settings } from "../config/config-schema.ts";
import type { GatewayModel, Network, Provider } from "../config/network-model.ts";
import type { AcceptedRequest } from "../jsonrpc/jsonrpc.ts";
import type { UpstreamResult } from "../ports.ts";
import { batchLimitOf } from "../routing/learned-limits.ts";
import type { NetworkState } from "../routing/network-state.ts";
import type { AttemptJudge } from "./attempts/attempts.ts";
import { recordAttempt } from "./attempts/record.ts";
import type { CacheLookup } from "./cache/answer-cache.ts";
import type { ConsensusRequest } from "./consensus/consensus-calls.ts";
import type { ContainerState } from "./container-state.ts";
import type { RpcOptions } from "./gateway-deps.ts";
import type { InternalCall } from "./logs/logs-queries.ts";
import { NO_SENDS, type SendsInFlight } from "./send/broadcast.ts";
import type { AttemptGroup, GatewayResponse, OpenCall, Phase, RequestScope } from "./vocabulary.ts";

/** The gateway, as a request that makes calls of its own sees it. */
export interface Pipeline {
  handleRpc(network: string, body: string, options: RpcOptions): Promise<GatewayResponse>;
}

const NO_CALLS: readonly OpenCall[] = [];
const NO_ANSWERS: ReadonlyMap<number, string> = new Map();
const NONE_ANSWERED: ReadonlySet<OpenCall> = new Set();

/**
 * One request on its way through the stages (docs/architecture.md "The request pipeline"):
 * what it brought, and what each stage found for the stages after it. A stage fills the
 * fields it names and reads those of the stages before it; the ones marked "set by" are read
 * only after that stage ran. It is also what the attempt loop asks of the request: each
 * provider's batch limit and the recording of each attempt (`AttemptJudge`), so the loop
 * needs no function made for the request.
 */
export class InFlight implements AttemptJudge {
  readonly container: ContainerState;
  /** Serves the calls the request makes to the gateway itself. */
  readonly pipeline: Pipeline;
  readonly networkName: string;
  /** The caller's body as it arrived. */
  readonly body: string;
  readonly options: RpcOptions;
  /** Set when the gateway serves this request to itself (a piece of a log query, a filter's read). */
  readonly internal: InternalCall | undefined;

  /** Set by `network`. */
  model!: GatewayModel;
  network!: Network;
  /** Set by `parse`. */
  request!: AcceptedRequest;
  /** Set by `state`: when the request started (ms), and when it must be answered by. */
  started = 0;
  deadline = 0;
  /** Set by `state`: the settings the attempts obey (an internal call's own share of calls). */
  limits!: Settings;
  state!: NetworkState;
  /** Set by `scope`. */
  scope!: RequestScope;
  /** Set by `admit`: the calls that go on, and the answers settled at admission, by position. */
  open: readonly OpenCall[] = NO_CALLS;
  immediate: ReadonlyMap<number, string> = NO_ANSWERS;
  /** The `eth_blockNumber` calls the served head answered (`served head`). */
  fromHead: ReadonlySet<OpenCall> = NONE_ANSWERED;
  /** Set by `cache lookup`. */
  cache!: CacheLookup;
  /** The request sends a transaction, and those under way (`sends`). */
  sending = false;
  sends: SendsInFlight = NO_SENDS;
  /** The calls served apart as log queries, and the ones the attempt loop takes (`log queries apart`). */
  logQueries: readonly OpenCall[] = NO_CALLS;
  routed: readonly OpenCall[] = NO_CALLS;
  /** The calls that need agreement and their participants (`consensus apart`); null: none. */
  consensus: ConsensusRequest | null = null;
  /** Upstream calls made for the request so far (filters' reads, attempts, log queries' pieces). */
  upstreamCalls = 0;
  /** Answers held back above the served head (`hold back`). */
  held = 0;
  response: GatewayResponse | null = null;
  /** An early response ends the walk: the stages after the one that gave it do not run. */
  done = false;

  constructor(
    pipeline: Pipeline,
    container: ContainerState,
    networkName: string,
    body: string,
    options: RpcOptions,
  ) {
    this.pipeline = pipeline;
    this.container = container;
    this.networkName = networkName;
    this.body = body;
    this.options = options;
    this.internal = options.internal;
  }

  /** The answer, now: no later stage runs. */
  answerEarly(response: GatewayResponse): void {
    this.response = response;
    this.done = true;
  }

  /**
   * Serves `text` to the gateway itself as part of this request (a log query's piece, a
   * filter's read): not cut again, its own budget, not reported alone, the cache's bounds
   * shared with this request.
   */
  handleInternally(text: string, internal: InternalCall): Promise<GatewayResponse> {
    return this.pipeline.handleRpc(this.network.name, text, {
      ...this.options,
      startedAt: this.started,
      internal,
      parentCache: this.cache,
      ...(this.consensus === null ? {} : { parentConsensus: this.consensus }),
    });
  }

  /** Upstream calls the request has made or spoken for (its transactions' copies too). */
  get callsMade(): number {
    return this.sends.copies + this.upstreamCalls;
  }

  batchLimit(provider: Provider): number {
    return batchLimitOf(provider, this.scope.batchLimits, this.container.deps.clock());
  }

  record(group: AttemptGroup, result: UpstreamResult, cutShort: boolean): void {
    recordAttempt(this.container, this.scope, group, result, cutShort);
  }
}

/**
 * A named step every request goes through. `run` reads what the stages before it found in the
 * flight and adds its own; it returns a promise only when it has something to wait for, so a
 * stage with nothing to do for a request costs no turn of the event loop. A stage ends the
 * walk early with `flight.answerEarly`.
 */
export interface Stage {
  readonly name: string;
  readonly phase: Phase;
  run(flight: InFlight): void | Promise<void>;
}
