import type { CallInfo, Verdict } from "../classify/verdict.ts";
import type { GatewayModel, Network, Provider } from "../config/network-model.ts";
import type { AcceptedRequest, Call } from "../jsonrpc/jsonrpc.ts";
import type { LearnedLimit } from "../routing/network-state.ts";
import type { AttemptSlot, SelectionContext } from "../routing/selection.ts";

/**
 * The request pipeline's shared words (docs/architecture.md "The request pipeline"): the
 * records its stages hand each other. Types only, and nothing of `request/` imported, so every
 * stage can name them without depending on another stage.
 */

/** How long an answer stays true (docs/behaviour.md §11). */
export type AnswerClass = "immutable" | "unfinalized" | "realtime" | "never";

/** What the gateway hands back to the HTTP surface. */
export interface GatewayResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** How long a lone call's answer stays true (GET mode's Cache-Control); absent: never. */
  readonly cacheClass?: AnswerClass;
}

/** An upstream answer kept in case attempts run out (an inner error or an upstream error). */
export interface KeptAnswer {
  readonly text: string;
  readonly provider: string;
}

/** One provider's failure of one call, as the suspicion rule compares them. */
export interface CallFailure {
  readonly provider: string;
  /** Failures with the same signature failed the same way. */
  readonly signature: string;
}

/**
 * One call of a request while the gateway works on it: its walk over the providers. Read
 * everywhere; changed only through the functions of `open-call.ts`.
 */
export interface OpenCall {
  /** The call as it goes upstream (block tags pinned). */
  readonly call: Call;
  /** The call as the caller wrote it, when tag pinning changed it; else null. */
  readonly unpinned: Call | null;
  /** Answered by sending `unpinned` (the answer is about another block than the key's). */
  readonly sentUnpinned: boolean;
  /**
   * The provider slot whose answer to `call` as sent `answer` is; null when it is not a
   * provider's (the cache's, the served head's or the gateway's own). A provider behind that
   * call's block was of no use to a call another provider answered.
   */
  readonly answeredBy: AttemptSlot | null;
  readonly info: CallInfo;
  readonly order: readonly AttemptSlot[];
  /** The next slot of `order` to try. */
  readonly next: number;
  readonly attempts: number;
  /** The answer to hand back: set once final. */
  readonly answer: string | null;
  /**
   * A provider's answer as its attempt's judge parsed it, so the cache classes it without
   * parsing it again; read only while `answer` is still that text.
   */
  readonly parsedAnswer: { readonly text: string; readonly member: unknown } | null;
  /** The last upstream answer worth handing back if no provider does better. */
  readonly fallback: KeptAnswer | null;
  /** What went wrong last, for the gateway's own error when every attempt failed. */
  readonly lastError: string;
  /** Every provider's failure of this call, in order. */
  readonly failures: readonly CallFailure[];
}

/** Calls that go to one provider together, as one upstream request. */
export interface AttemptGroup {
  readonly slot: AttemptSlot;
  readonly calls: OpenCall[];
  /**
   * Sent as one call rather than a batch: the caller's single call as written, or a batch
   * member on its own to a provider that takes no batches.
   */
  readonly alone: boolean;
}

/** A verdict that sends the call to the next provider. */
export type FailureVerdict = Extract<
  Verdict,
  { outcome: "retry" | "capability" | "behind" | "pruned" }
>;

/** One attempt, as the health bookkeeping needs it. */
export interface AttemptRecord {
  readonly network: Network;
  readonly context: SelectionContext;
  readonly slot: AttemptSlot;
  readonly elapsedMs: number;
  /**
   * A batch, or a call the catalogue calls heavy (logs, traces): slow everywhere by nature, so
   * exempt from the slow rule.
   */
  readonly heavy: boolean;
  /**
   * Every call runs the caller's code (a call, a simulation, a JS tracer: the catalogue's
   * `runsCallersCode`): an unclassified error is the code's far more often than the node's, and
   * does not count toward force-rotate (a caller could otherwise rotate a healthy provider away
   * by sending a throwing tracer three times).
   */
  readonly callersCodeOnly: boolean;
  /** The request's state writes: they run beside the retries, and the answer waits a little. */
  readonly writes: Promise<unknown>[];
}

/** A failed attempt whose penalty waits for the end of the request. */
export interface HeldPenalty {
  readonly attempt: AttemptRecord;
  readonly verdict: FailureVerdict;
  /** The calls the attempt failed. */
  readonly calls: readonly OpenCall[];
  /** Its timeout was cut short by the request's deadline: a timeout then proves nothing. */
  readonly cutShort: boolean;
}

/** The blocks `latest`, `safe` and `finalized` are pinned to (docs/behaviour.md §10). */
export interface PinnedTags {
  readonly latest: number | null;
  readonly safe: number | null;
  readonly finalized: number | null;
}

/** The served head as one request sees it (docs/behaviour.md §10.2). */
export interface ServedHeadView {
  /** The served head now, or null when no publication is old enough yet. */
  readonly answer: number | null;
  /** The newest publication or chain position, of any age: its blocks exist on some provider. */
  readonly newest: number;
  /**
   * The newest publication's block, of any age, or null before any: once it is a delay old it
   * is the served head, and nothing lower is served after it.
   */
  readonly published: number | null;
  /** Published within a block time (or a publication delay, when longer): no provider is asked. */
  readonly recent: boolean;
}

/** What one request's attempts share. */
export interface RequestScope {
  readonly network: Network;
  readonly model: GatewayModel;
  readonly request: AcceptedRequest;
  readonly single: boolean;
  /** The providers in preference order for this request (drawn once, so a batch agrees). */
  readonly ranked: readonly Provider[];
  readonly context: SelectionContext;
  readonly quorumHead: number | null;
  /** Providers that answered, in order of use (x-gateway-provider). */
  readonly used: string[];
  /** State writes started by this request: they run beside the retries, not before them. */
  readonly writes: Promise<unknown>[];
  readonly held: HeldPenalty[];
  /** Batch sizes providers take, as learned so far (this request may learn more). */
  readonly batchLimits: Map<string, LearnedLimit>;
  readonly servedHead: ServedHeadView;
  /** What block tags are pinned to, or null when they go upstream as written. */
  readonly pin: PinnedTags | null;
}

/** Where a stage sits in a request's life (docs/architecture.md "The request pipeline"). */
export type Phase = "intake" | "before attempts" | "attempts" | "settle" | "answer";
