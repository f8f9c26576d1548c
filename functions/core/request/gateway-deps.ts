import type { GatewayModel } from "../config/network-model.ts";
import type {
  FilterStore,
  HedgeTimer,
  SharedAnswerStore,
  StateStore,
  Telemetry,
  TransactionLedger,
  Upstream,
  Wait,
} from "../ports.ts";
import type { StateCache } from "../routing/state-cache.ts";
import type { GuardCounts } from "../status/guards.ts";
import type { HealthRecorderDeps } from "./attempts/health-recorder.ts";
import type { CacheLookup } from "./cache/answer-cache.ts";
import type { ConsensusRequest } from "./consensus/consensus-calls.ts";
import type { InternalCall } from "./logs/logs-queries.ts";
import type { Phase } from "./vocabulary.ts";

/** What the gateway is built from (`GatewayDeps`) and what a request brings (`RpcOptions`). */

export interface GatewayDeps extends HealthRecorderDeps {
  readonly model: () => GatewayModel;
  readonly upstream: Upstream;
  readonly store: StateStore;
  readonly cache: StateCache;
  readonly random: () => number;
  readonly telemetry: Telemetry;
  /** Masks secret values in an answer to the caller (an upstream may echo its own URL). */
  readonly scrubAnswer: (text: string) => string;
  /** Where sent transactions' outcomes are shared; without it, no ledger. */
  readonly ledger?: TransactionLedger;
  readonly wait: Wait;
  /** The wait before a hedged read's second attempt (tests fire it themselves). */
  readonly hedgeTimer: HedgeTimer;
  /** The answer cache's shared tier (immutable answers); without it, memory only. */
  readonly sharedAnswers?: SharedAnswerStore;
  /** Where the filters the gateway serves are kept; without it, filters live on providers. */
  readonly filters?: FilterStore;
  /** Where the guards (deny lists, cache bounds) count what they refused. */
  readonly guards: GuardCounts;
  /** Told what each stage of each request took (a bench, a debug build); absent: nothing timed. */
  readonly stageObserver?: StageObserver;
}

export interface RpcOptions {
  /** When the handler started on this request (ms): config and state loading count too. */
  readonly startedAt?: number;
  /** Time left at `startedAt` before the platform cuts the request (Lambda remaining time). */
  readonly remainingMs?: number;
  /** Set when the gateway serves a piece of a log query to itself. */
  readonly internal?: InternalCall;
  /** The name of the API key the request came with, when the gateway has keys. */
  readonly caller?: string;
  /** An internal call's request's dealings with the answer cache, whose bounds it shares. */
  readonly parentCache?: CacheLookup;
  /** An internal call's request's consensus calls, told how the internal call's fared. */
  readonly parentConsensus?: ConsensusRequest;
}

/**
 * Watches the stages of every request, for a bench or a debug build: what each took, awaits
 * included. Absent, the walk reads no clock and makes nothing per stage.
 */
export interface StageObserver {
  /** A clock fine enough for a stage (ms, fractions allowed). */
  readonly now: () => number;
  stage(name: string, phase: Phase, ms: number, internal: boolean): void;
}
