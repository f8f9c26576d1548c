import type { Call } from "../jsonrpc.ts";
import type { AttemptSlot } from "../selection.ts";
import type { CallInfo } from "../verdict.ts";
import type { CallFailure } from "./penalties.ts";

/** An upstream answer kept in case attempts run out (an inner error or an upstream error). */
export interface KeptAnswer {
  readonly text: string;
  readonly provider: string;
}

/** One call of a request while the gateway works on it: its walk over the providers. */
export interface OpenCall {
  /** The call as it goes upstream (block tags pinned). */
  readonly call: Call;
  /** The call as the caller wrote it, when tag pinning changed it; else null. */
  readonly unpinned: Call | null;
  /** Answered by sending `unpinned` (the answer is about another block than the key's). */
  sentUnpinned: boolean;
  /**
   * The provider slot whose answer to `call` as sent `answer` is; null when it is not a
   * provider's (the cache's, the served head's or the gateway's own). A provider behind that
   * call's block was of no use to a call another provider answered.
   */
  answeredBy: AttemptSlot | null;
  readonly info: CallInfo;
  readonly order: readonly AttemptSlot[];
  /** The next slot of `order` to try. */
  next: number;
  attempts: number;
  /** The answer to hand back: set once final. */
  answer: string | null;
  /** The last upstream answer worth handing back if no provider does better. */
  fallback: KeptAnswer | null;
  /** What went wrong last, for the gateway's own error when every attempt failed. */
  lastError: string;
  /** Every provider's failure of this call, in order. */
  readonly failures: CallFailure[];
}

export function openCall(
  call: Call,
  order: readonly AttemptSlot[],
  unpinned: Call | null = null,
): OpenCall {
  return {
    call,
    unpinned,
    sentUnpinned: false,
    answeredBy: null,
    info: { method: call.method, params: call.params },
    order,
    next: 0,
    attempts: 0,
    answer: null,
    fallback: null,
    lastError: "no attempt was made",
    failures: [],
  };
}
