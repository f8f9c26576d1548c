import { type ChainHead, headIsFresh, servedHead } from "../chain-head.ts";
import type { QuorumSnapshot } from "../network-state.ts";
import type { OpenCall } from "./open-call.ts";
import type { PinnedTags } from "./pin-tags.ts";

/**
 * The served head for `eth_blockNumber` (docs/behaviour.md §10): the highest block the gateway
 * has vouched for, shared by every container through the head item. An answer never goes
 * below it; while it was confirmed within a block time, it is the answer, with no provider
 * call.
 */

const BLOCK_NUMBER = "eth_blockNumber";
const HEX_QUANTITY = /^0x[0-9a-f]{1,16}$/i;

/** What this container itself answered last, per network. */
interface ServedHere {
  readonly served: number;
  readonly at: number;
}

export interface ServedHeadView {
  /** No `eth_blockNumber` answer goes below this. */
  readonly floor: number;
  /** Confirmed within a block time: answer from it without asking a provider. */
  readonly fresh: boolean;
}

export class ServedHeads {
  readonly #here = new Map<string, ServedHere>();

  view(network: string, head: ChainHead | null, now: number, blockTimeMs: number): ServedHeadView {
    const here = this.#here.get(network);
    return {
      floor: servedHead(head, here?.served ?? 0),
      fresh: head !== null && headIsFresh(head, here?.at ?? 0, now, blockTimeMs),
    };
  }

  /** This container answered `block`: true when that raised what it had served. */
  served(network: string, block: number, now: number): boolean {
    const here = this.#here.get(network);
    if (here !== undefined && here.served > block) return false;
    this.#here.set(network, { served: block, at: now });
    return here === undefined || here.served < block;
  }
}

/** The gateway's own `eth_blockNumber` answer; `respond` puts the caller's id in. */
function blockNumberAnswer(block: number): string {
  return `{"jsonrpc":"2.0","id":null,"result":"0x${block.toString(16)}"}`;
}

/**
 * Answers the request's `eth_blockNumber` calls from a fresh served head; returns the calls it
 * answered (they confirm nothing about the chain).
 */
export function answerFromServedHead(
  open: readonly OpenCall[],
  view: ServedHeadView,
): ReadonlySet<OpenCall> {
  const answered = new Set<OpenCall>();
  if (!view.fresh || view.floor === 0) return answered;
  for (const entry of open) {
    if (entry.info.method !== BLOCK_NUMBER) continue;
    entry.answer = blockNumberAnswer(view.floor);
    answered.add(entry);
  }
  return answered;
}

/**
 * The request's `eth_blockNumber` answers from providers, never below the served head: a
 * provider within the tolerance under it is answered with the head itself. Returns the highest
 * block a provider answered (or the head it was held to), or null when none answered.
 */
export function holdServedHead(
  open: readonly OpenCall[],
  view: ServedHeadView,
  fromHead: ReadonlySet<OpenCall>,
): number | null {
  let highest: number | null = null;
  for (const entry of open) {
    if (entry.info.method !== BLOCK_NUMBER || entry.answer === null || fromHead.has(entry)) {
      continue;
    }
    const answered = resultNumber(entry.answer);
    if (answered === null) continue;
    if (answered < view.floor) entry.answer = blockNumberAnswer(view.floor);
    highest = Math.max(highest ?? 0, answered, view.floor);
  }
  return highest;
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
 * as the monitor or an answer last showed it, plus the blocks the chain can have made since
 * the monitor's snapshot. Null for a provider of unknown head.
 */
export function reachableBlocks(
  quorum: QuorumSnapshot | null,
  observed: ReadonlyMap<string, number>,
  now: number,
  blockTimeMs: number,
): (provider: string) => number | null {
  if (quorum === null) return () => null;
  const progress = Math.ceil(Math.max(0, now - quorum.computedAt) / blockTimeMs);
  return (provider) => {
    const known = Math.max(quorum.heads[provider]?.number ?? -1, observed.get(provider) ?? -1);
    return known < 0 ? null : known + progress;
  };
}

/**
 * The numbers `latest`, `safe` and `finalized` are pinned to, or null when the chain position
 * is unknown or stale (tags then go upstream as written). `latest` is the served head, pinned
 * only while some candidate can have reached it.
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
  const latestReached = candidates.some((provider) => (reachable(provider) ?? 0) >= view.floor);
  return {
    latest: latestReached && view.floor > 0 ? view.floor : null,
    safe: head.safe?.number ?? null,
    finalized: head.finalized?.number ?? null,
  };
}
