import { type Call, ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import { blockRefOf } from "../../methods/block-ref.ts";
import { headsReadAt, quorumInForce } from "../../routing/network-state.ts";
import type { SelectionContext } from "../../routing/selection.ts";
import { GET_LOGS, quantity } from "./logs-range.ts";

/**
 * A log range whose ends are tags (docs/behaviour.md §12.1): pinning `latest` to the served
 * head can put `toBlock` under a `fromBlock` the caller took from a newer answer (a receipt's
 * block while the served head is a few blocks behind). Sent so, nodes answer an inverted range
 * with an empty list or an error about a range the caller never wrote; so such a call goes
 * with its tags as written (the provider's own head answers for it), or, when its numbered
 * end is above every head the gateway knows, the caller is told so.
 */

export type PinnedLogRange =
  | { readonly kind: "call"; readonly call: Call }
  | { readonly kind: "refused"; readonly text: string };

/**
 * `pinned` as it may go upstream: itself, unless pinning inverted the range; then the call as
 * the caller wrote it, or the gateway's -32602 naming the head it knows when `fromBlock` is
 * above it (and above what the chain can have made since the monitor's snapshot).
 */
export function pinnedLogRange(
  written: Call,
  pinned: Call,
  context: SelectionContext,
): PinnedLogRange {
  if (pinned === written || pinned.method !== GET_LOGS) return { kind: "call", call: pinned };
  const after = blockRefOf(pinned.method, pinned.params);
  if (after?.kind !== "range" || after.from.kind !== "number" || after.to.kind !== "number") {
    return { kind: "call", call: pinned };
  }
  if (after.from.number <= after.to.number) return { kind: "call", call: pinned };
  const before = blockRefOf(written.method, written.params);
  // An inverted range as written is the caller's, and the node's to answer.
  if (before?.kind === "range" && before.from.kind === "number" && before.to.kind === "number") {
    return { kind: "call", call: pinned };
  }
  const from = after.from.number;
  const knownHead = headKnown(context);
  const head = knownHead === null ? null : knownHead + blocksSinceSnapshot(context);
  const inForce = quorumInForce(context.state, context.now, context.checkIntervalSeconds);
  if (knownHead !== null && head !== null && inForce && from > head) {
    return {
      kind: "refused",
      text: errorResponse(
        written.rawId ?? "null",
        ErrorCode.invalidParams,
        `fromBlock ${quantity(from)} is above the chain head this gateway knows (${quantity(knownHead)}): ask for blocks up to it`,
      ),
    };
  }
  return { kind: "call", call: written };
}

/** The highest block known to exist: the quorum's head, the chain position, the served head. */
function headKnown(context: SelectionContext): number | null {
  const { quorum, head } = context.state;
  const known = [quorum?.head ?? null, head?.latest.number ?? null, head?.served?.block ?? null];
  const numbers = known.filter((block): block is number => block !== null);
  return numbers.length === 0 ? null : Math.max(...numbers);
}

/** The blocks the chain can have made since the monitor's snapshot. */
function blocksSinceSnapshot(context: SelectionContext): number {
  const quorum = context.state.quorum;
  if (quorum === null) return 0;
  const blockTimeMs = context.network.settings.block_time_seconds * 1000;
  return Math.ceil(Math.max(0, context.now - headsReadAt(quorum)) / blockTimeMs);
}
