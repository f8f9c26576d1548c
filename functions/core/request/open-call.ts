import type { Call } from "../jsonrpc/jsonrpc.ts";
import type { AttemptSlot } from "../routing/selection.ts";
import type { CallFailure, KeptAnswer, OpenCall } from "./vocabulary.ts";

/**
 * An open call's walk over its providers, changed only here: every other module reads an
 * `OpenCall` (its fields are read-only there) and moves it with these functions, so what can
 * happen to a call is this list.
 */

/** The same record, writable: only this module holds one. */
type Writable = { -readonly [K in keyof OpenCall]: OpenCall[K] } & { failures: CallFailure[] };

const writable = (entry: OpenCall) => entry as Writable;

export function openCall(
  call: Call,
  order: readonly AttemptSlot[],
  unpinned: Call | null = null,
): OpenCall {
  const entry: Writable = {
    call,
    unpinned,
    sentUnpinned: false,
    answeredBy: null,
    info: { method: call.method, params: call.params },
    order,
    next: 0,
    attempts: 0,
    answer: null,
    parsedAnswer: null,
    fallback: null,
    lastError: "no attempt was made",
    failures: [],
  };
  return entry;
}

/** The gateway's own answer (the cache's, the served head's, its error): whoever sent the call. */
export function answer(entry: OpenCall, text: string): void {
  writable(entry).answer = text;
}

/** The answer `slot`'s provider gave to the call as sent; `member`: the text parsed, if it was. */
export function answerFrom(
  entry: OpenCall,
  text: string,
  slot: AttemptSlot,
  member?: unknown,
): void {
  const call = writable(entry);
  call.answer = text;
  call.answeredBy = slot;
  call.parsedAnswer = member === undefined ? null : { text, member };
}

/** The upstream answer handed back if no provider does better; null forgets the one kept. */
export function keep(entry: OpenCall, fallback: KeptAnswer | null): void {
  writable(entry).fallback = fallback;
}

/** What went wrong last: the gateway's own error names it when every attempt failed. */
export function note(entry: OpenCall, lastError: string): void {
  writable(entry).lastError = lastError;
}

/** A provider failed the call: the suspicion rule and the unpinned retry read `failures`. */
export function failed(entry: OpenCall, failure: CallFailure, lastError: string): void {
  const call = writable(entry);
  call.failures.push(failure);
  call.lastError = lastError;
}

/** No answer after all (`why` is what went wrong); whose answer it was stays known. */
export function withdraw(entry: OpenCall, why: string): void {
  const call = writable(entry);
  call.answer = null;
  call.lastError = why;
}

/** The answer is set aside and the call walks on to its next provider. */
export function reopen(entry: OpenCall, why: string): void {
  withdraw(entry, why);
  writable(entry).answeredBy = null;
}

/** The call takes the next slot of its order (an attempt, or a hedge's). */
export function takeSlot(entry: OpenCall): void {
  const call = writable(entry);
  call.next++;
  call.attempts++;
}

/** The slot taken is given back: the call goes to the same provider again, no worse off. */
export function giveSlotBack(entry: OpenCall): void {
  const call = writable(entry);
  call.next--;
  call.attempts--;
}

/**
 * The attempt just made is given back, its slot kept taken: the provider no longer keeps the
 * history the call is about, which is no failed attempt (docs/behaviour.md §16.4).
 */
export function giveAttemptBack(entry: OpenCall): void {
  const call = writable(entry);
  call.attempts = Math.max(0, call.attempts - 1);
}

/** The next slot is passed over without an attempt, for `why`. */
export function passSlot(entry: OpenCall, why: string): void {
  const call = writable(entry);
  call.next++;
  call.lastError = why;
}

/** The call walks no further (`why` follows what went wrong): it fails as its providers did. */
export function giveUp(entry: OpenCall, why: string): void {
  const call = writable(entry);
  call.lastError = `${call.lastError}; then ${why}`;
  call.next = call.order.length;
}

/**
 * `original` takes what its resend as written got (docs/behaviour.md §10.4): the attempts and
 * failures; an answer, marked as answered unpinned (the cache keeps nothing under the pinned
 * block's key for it); else the resend's kept answer and last error, since what a provider said
 * about the pinned block is no answer to a call that never named it.
 */
export function takeOver(original: OpenCall, retry: OpenCall): void {
  const call = writable(original);
  call.attempts += retry.attempts;
  call.failures.push(...retry.failures);
  if (retry.answer !== null) {
    call.answer = retry.answer;
    call.sentUnpinned = true;
    return;
  }
  call.fallback = retry.fallback;
  if (retry.attempts > 0) call.lastError = retry.lastError;
}
