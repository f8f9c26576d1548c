import type { Provider } from "../../config/network-model.ts";
import { withId } from "../../jsonrpc/json-raw.ts";
import type { AttemptSlot } from "../../routing/selection.ts";
import type { AttemptGroup, OpenCall } from "../vocabulary.ts";

/**
 * The next round: each call still open, with attempts left, takes the next slot of its
 * order, and calls bound for the same provider travel together as one batch, cut to the
 * largest batch that provider takes (`batchLimit`). A batch thereby stays whole on the first
 * provider, and only its failed members move on.
 */
export function nextRound(
  open: readonly OpenCall[],
  maxAttempts: number,
  single: boolean,
  batchLimit: (provider: Provider) => number,
): AttemptGroup[] {
  if (open.length === 1)
    return nextRoundOfOne(open[0] as OpenCall, maxAttempts, single, batchLimit);
  const byProvider = new Map<string, { slot: AttemptSlot; calls: OpenCall[] }>();
  for (const entry of open) {
    if (entry.answer !== null || entry.attempts >= maxAttempts) continue;
    const slot = entry.order[entry.next];
    if (slot === undefined) continue;
    entry.next++;
    entry.attempts++;
    const group = byProvider.get(slot.provider.name);
    if (group) group.calls.push(entry);
    else byProvider.set(slot.provider.name, { slot, calls: [entry] });
  }
  return [...byProvider.values()].flatMap(({ slot, calls }) => {
    if (single) return [{ slot, calls, alone: true }];
    const size = Math.max(1, batchLimit(slot.provider));
    const chunks: AttemptGroup[] = [];
    for (let start = 0; start < calls.length; start += size) {
      chunks.push({ slot, calls: calls.slice(start, start + size), alone: size === 1 });
    }
    return chunks;
  });
}

/** `nextRound` of one open call (every single call), without the grouping. */
function nextRoundOfOne(
  entry: OpenCall,
  maxAttempts: number,
  single: boolean,
  batchLimit: (provider: Provider) => number,
): AttemptGroup[] {
  if (entry.answer !== null || entry.attempts >= maxAttempts) return [];
  const slot = entry.order[entry.next];
  if (slot === undefined) return [];
  entry.next++;
  entry.attempts++;
  return [{ slot, calls: [entry], alone: single || Math.max(1, batchLimit(slot.provider)) === 1 }];
}

/**
 * What goes upstream: the caller's single call as written; a lone batch member with its
 * position as id; a batch with each call's position as its id, so the answers map back
 * exactly whatever ids the caller chose.
 */
export function upstreamBody(group: AttemptGroup, single: boolean, body: string): string {
  const [first] = group.calls;
  // A single call's text is the caller's body, unless its block tags were pinned.
  if (single) {
    const raw = first?.call.raw ?? body;
    return first === undefined || nodesReadId(first.call.rawId)
      ? raw
      : withId(raw, String(first.call.position));
  }
  if (group.alone && first !== undefined)
    return withId(first.call.raw, String(first.call.position));
  return `[${group.calls.map((entry) => withId(entry.call.raw, String(entry.call.position))).join(",")}]`;
}

/**
 * Whether nodes read this id as written: a string, null (or none), or an unsigned integer
 * under 2^53. Other JSON numbers are valid JSON-RPC ids (1.5, 1e2, -7, 2^64), but reth and
 * anvil refuse some of them ("Invalid request"), so such a call goes with its position as id
 * and the caller's is spliced back into the answer, as for a batch.
 */
export function nodesReadId(rawId: string | null): boolean {
  if (rawId === null || rawId === "null" || rawId.startsWith('"')) return true;
  return /^(0|[1-9]\d{0,15})$/.test(rawId) && Number.isSafeInteger(Number(rawId));
}

/**
 * A group that failed with a batch-limit error goes back to the same provider, its calls no
 * worse off: the attempt it took is given back.
 */
export function resendToSameProvider(calls: readonly OpenCall[]): void {
  for (const entry of calls) {
    entry.next--;
    entry.attempts--;
  }
}
