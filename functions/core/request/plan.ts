import { withId } from "../json-raw.ts";
import type { Call } from "../jsonrpc.ts";
import type { AttemptSlot } from "../selection.ts";
import type { OpenCall } from "./open-call.ts";

/** Calls that go to one provider together in one round of attempts. */
export interface AttemptGroup {
  readonly slot: AttemptSlot;
  readonly calls: OpenCall[];
}

/**
 * The next round: each call still open, with attempts left, takes the next slot of its
 * order, and calls bound for the same provider travel together as one batch. A batch thereby
 * stays whole on the first provider, and only its failed members move on.
 */
export function nextRound(open: readonly OpenCall[], maxAttempts: number): AttemptGroup[] {
  const groups = new Map<string, AttemptGroup>();
  for (const entry of open) {
    if (entry.answer !== null || entry.attempts >= maxAttempts) continue;
    const slot = entry.order[entry.next];
    if (slot === undefined) continue;
    entry.next++;
    entry.attempts++;
    const group = groups.get(slot.provider.name);
    if (group) group.calls.push(entry);
    else groups.set(slot.provider.name, { slot, calls: [entry] });
  }
  return [...groups.values()];
}

/**
 * What goes upstream: a single call as the caller wrote it; a batch with each call's position
 * as its id, so the answers map back exactly whatever ids the caller chose.
 */
export function upstreamBody(single: boolean, body: string, calls: readonly OpenCall[]): string {
  return single ? body : batchBody(calls.map((entry) => entry.call));
}

function batchBody(calls: readonly Call[]): string {
  return `[${calls.map((call) => withId(call.raw, String(call.position))).join(",")}]`;
}
