import type { Call } from "../../jsonrpc/jsonrpc.ts";
import type { AttemptSlot } from "../../routing/selection.ts";
import { openCall } from "../open-call.ts";
import type { OpenCall } from "../vocabulary.ts";

/**
 * A call about `latest` goes upstream pinned to the served head (docs/behaviour.md §10.4). The
 * served head can run a few blocks ahead of every provider: one provider's `eth_blockNumber`
 * published early (the reachable head allows a margin), or a revert that shortened the chain
 * (the served head never goes back). Then every provider answers from behind that block, and
 * the caller would get an error, or a provider's "requested block is above the head", about a
 * block it never named. So a call every provider it reached answered from behind, and only so,
 * is sent once more as the caller wrote it; its answer is about the providers' own head.
 */

/** The failure signature of a provider that answered from behind the block asked about. */
const BEHIND = "behind";

export interface UnpinnedRetry {
  readonly original: OpenCall;
  readonly retry: OpenCall;
}

/** The calls to send again as written, each with its own walk over the providers. */
export function unpinnedRetries(
  open: readonly OpenCall[],
  orderOf: (call: Call) => readonly AttemptSlot[],
): UnpinnedRetry[] {
  const retries: UnpinnedRetry[] = [];
  for (const original of open) {
    const { unpinned } = original;
    if (
      original.answer !== null ||
      unpinned === null ||
      original.failures.length === 0 ||
      !original.failures.every((failure) => failure.signature === BEHIND)
    ) {
      continue;
    }
    retries.push({ original, retry: openCall(unpinned, orderOf(unpinned)) });
  }
  return retries;
}

/**
 * Carries what the resent calls got back to the caller's calls. An answer marks the call as
 * answered unpinned: the cache keeps nothing under the pinned block's key for it.
 */
export function settleUnpinnedRetries(retries: readonly UnpinnedRetry[]): void {
  for (const { original, retry } of retries) {
    original.attempts += retry.attempts;
    original.failures.push(...retry.failures);
    if (retry.answer !== null) {
      original.answer = retry.answer;
      original.sentUnpinned = true;
      continue;
    }
    // What a provider said about the pinned block is no answer to a call that never named it.
    original.fallback = retry.fallback;
    if (retry.attempts > 0) original.lastError = retry.lastError;
  }
}
