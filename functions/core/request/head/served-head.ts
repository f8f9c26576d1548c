import { type ChainHead, servedHeadAt, servedRecently } from "../../chain/chain-head.ts";
import { type Call, type InvalidMember, isCall } from "../../jsonrpc/jsonrpc.ts";
import { blockRefOf } from "../../methods/block-ref.ts";
import { headsReadAt, type QuorumSnapshot } from "../../routing/network-state.ts";
import { answer } from "../open-call.ts";
import type { OpenCall, PinnedTags, ServedHeadView } from "../vocabulary.ts";
import { mayBeHeldBack } from "./held-back.ts";

/**
 * `eth_blockNumber` from the served head (docs/behaviour.md §10): every container answers the
 * highest value published at least a publication delay ago, so they agree and no client sees
 * the head go back; a provider is asked only when nothing was published within a block time,
 * and its answer is published for the others, not handed out at once.
 */

const BLOCK_NUMBER = "eth_blockNumber";
/** The failure signature of a provider that answered from behind the known head. */
const BEHIND = "behind";
const HEX_QUANTITY = /^0x[0-9a-f]{1,16}$/i;

export function servedHeadView(
  head: ChainHead | null,
  now: number,
  delayMs: number,
  blockTimeMs: number,
): ServedHeadView {
  return {
    answer: servedHeadAt(head, now, delayMs),
    newest: Math.max(head?.served?.block ?? 0, head?.latest.number ?? 0),
    published: head?.served?.block ?? null,
    // No container publishes more often than once a delay: on a chain whose blocks come faster
    // (0.25 s on Arbitrum), asking a provider sooner could not make the answer any newer.
    recent: servedRecently(head, now, Math.max(blockTimeMs, delayMs)),
  };
}

/** The gateway's own `eth_blockNumber` answer; `respond` puts the caller's id in. */
function blockNumberAnswer(block: number): string {
  return `{"jsonrpc":"2.0","id":null,"result":"0x${block.toString(16)}"}`;
}

/**
 * Answers the request's `eth_blockNumber` calls from the served head when it was published
 * within a block time; returns the calls it answered.
 */
export function answerFromServedHead(
  open: readonly OpenCall[],
  view: ServedHeadView,
): ReadonlySet<OpenCall> {
  const answered = new Set<OpenCall>();
  if (!view.recent || view.answer === null) return answered;
  for (const entry of open) {
    if (entry.info.method !== BLOCK_NUMBER) continue;
    answer(entry, blockNumberAnswer(view.answer));
    answered.add(entry);
  }
  return answered;
}

/**
 * The request's `eth_blockNumber` calls that went to providers: answered with the served head
 * when there is one (a provider's number is not this caller's), else with the provider's own. A call every provider failed, one of them by answering a number behind the
 * served head, gets the served head too: that provider is alive, and the served head is what
 * the caller would have got from any answer. With no served head yet but a publication too
 * young to serve, the caller gets that publication: it is the served head a delay later, and a
 * provider's higher number handed out now would be followed by that lower one. With no
 * publication at all, a provider's number beyond the reachable head (`reachableHead`: no chain
 * can be there yet) is not handed out either: the caller gets the newest block known to exist.
 * Returns the highest block a provider answered (`answered`), and the highest of those a
 * caller was handed as it is (`handedOut`: a caller was told it exists), or null.
 */
export function settleBlockNumbers(
  open: readonly OpenCall[],
  view: ServedHeadView,
  fromHead: ReadonlySet<OpenCall>,
  reachable: number | null,
): { readonly answered: number | null; readonly handedOut: number | null } {
  let highest: number | null = null;
  let handedOut: number | null = null;
  for (const entry of open) {
    if (entry.info.method !== BLOCK_NUMBER || fromHead.has(entry)) continue;
    if (entry.answer === null) {
      if (view.answer !== null && entry.failures.some((failure) => failure.signature === BEHIND)) {
        answer(entry, blockNumberAnswer(view.answer));
      }
      continue;
    }
    const answered = resultNumber(entry.answer);
    if (answered === null) continue;
    highest = Math.max(highest ?? 0, answered);
    if (view.answer !== null) answer(entry, blockNumberAnswer(view.answer));
    else if (view.published !== null) answer(entry, blockNumberAnswer(view.published));
    else if (reachable !== null && answered > reachable) {
      answer(entry, blockNumberAnswer(view.newest));
    } else handedOut = Math.max(handedOut ?? 0, answered);
  }
  return { answered: highest, handedOut };
}

function resultNumber(text: string): number | null {
  try {
    const result = (JSON.parse(text) as { result?: unknown })?.result;
    return typeof result === "string" && HEX_QUANTITY.test(result)
      ? Number.parseInt(result, 16)
      : null;
  } catch {
    return null;
  }
}

/**
 * The highest block each provider can have reached by now, for block-aware routing: its head
 * as the monitor's snapshot or an answer last showed it, each plus the blocks the chain can
 * have made since it was seen (an answer's head since the answer, not since the snapshot
 * before it). Null for a provider of unknown head.
 */
export function reachableBlocks(
  quorum: QuorumSnapshot | null,
  observed: ReadonlyMap<string, { readonly block: number; readonly at: number }>,
  now: number,
  blockTimeMs: number,
): (provider: string) => number | null {
  if (quorum === null) return () => null;
  const since = (at: number) => Math.ceil(Math.max(0, now - at) / blockTimeMs);
  const progress = since(headsReadAt(quorum));
  return (provider) => {
    const checked = quorum.heads[provider]?.number;
    const seen = observed.get(provider);
    const fromCheck = checked === undefined ? -1 : checked + progress;
    const fromAnswer = seen === undefined ? -1 : seen.block + since(seen.at);
    const reachable = Math.max(fromCheck, fromAnswer);
    return reachable < 0 ? null : reachable;
  };
}

/**
 * The numbers `latest`, `safe` and `finalized` are pinned to, or null when the chain position
 * is unknown or stale (tags then go upstream as written). `latest` is the served head, pinned
 * only while some candidate can have reached it; `safe` and `finalized` are never above the
 * served head (the monitor's may be, for the publication delay), so no tag names a block the
 * gateway does not show yet.
 */
export function tagsToPin(
  head: ChainHead | null,
  view: ServedHeadView,
  candidates: readonly string[],
  reachable: (provider: string) => number | null,
  now: number,
  staleAfterMs: number,
): PinnedTags | null {
  if (head === null || now - head.updatedAt > staleAfterMs) return null;
  const latest = view.answer;
  const reached =
    latest !== null && candidates.some((provider) => (reachable(provider) ?? 0) >= latest);
  const settled = (position: { readonly number: number } | null) =>
    position === null ? null : Math.min(position.number, latest ?? position.number);
  return {
    latest: reached ? latest : null,
    safe: settled(head.safe),
    finalized: settled(head.finalized),
  };
}

/**
 * Whether a request needs a fresh copy of the chain position (docs/behaviour.md §10.2): an
 * `eth_blockNumber`, a call whose block is `latest`, `safe` or `finalized` (named or left
 * out), pinned to the served head, a lookup whose answer is held back above it (a block, a
 * receipt, a transaction), or a filter install or poll (it reports up to the served head, and
 * a filter of a chain restarted since is gone, §14): each must agree with every head any
 * container showed, so it waits for a copy no older than `head_cache_ms`. Any other call
 * (state at a number or hash, logs, fees, traces, sends) needs the served head only to attest
 * its answer: it takes the copy in hand.
 */
export function needsFreshHead(calls: ReadonlyArray<Call | InvalidMember>): boolean {
  return calls.some(
    (call) =>
      isCall(call) &&
      (call.method === "eth_blockNumber" ||
        mayBeHeldBack(call.method) ||
        FILTER_CALLS.has(call.method) ||
        namesPinnedTag(call)),
  );
}

const FILTER_CALLS: ReadonlySet<string> = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_getFilterChanges",
  "eth_getFilterLogs",
]);

const PINNED_TAGS: ReadonlySet<string> = new Set(["latest", "safe", "finalized"]);

function namesPinnedTag(call: Call): boolean {
  const ref = blockRefOf(call.method, call.params);
  if (ref === null) return false;
  const pinned = (point: { readonly kind: string; readonly tag?: string }) =>
    point.kind === "tag" && PINNED_TAGS.has(point.tag ?? "");
  return ref.kind === "range" ? pinned(ref.from) || pinned(ref.to) : pinned(ref);
}
