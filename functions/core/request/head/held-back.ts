import type { Network } from "../../config/network-model.ts";
import { arrayElementSpans, memberValueSpan } from "../../jsonrpc/json-raw.ts";
import { blockRefOf } from "../../methods/block-ref.ts";
import type { Telemetry } from "../../ports.ts";
import type { GatewayResponse, OpenCall, PinnedTags } from "../vocabulary.ts";

/**
 * The chain as of the served head (docs/behaviour.md §10.4, read-your-writes): an answer that
 * would show a block above the served head (a receipt or a transaction by hash whose block is
 * higher, a block by hash above it, a block by number above it) is answered as a node that has
 * not seen that block yet answers: `null`, until the served head reaches it. Every later call
 * about `latest`, pinned to a served head that never goes back, through any container, is then
 * at or above every block a caller was shown. The answer itself stays in the cache: only what
 * the caller is handed waits.
 */

/** Lookups by number that answer `null` for a block the node has not seen. */
const BY_NUMBER: ReadonlySet<string> = new Set([
  "eth_getBlockByNumber",
  "eth_getHeaderByNumber",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getRawTransactionByBlockNumberAndIndex",
  "eth_getUncleCountByBlockNumber",
  "eth_getUncleByBlockNumberAndIndex",
]);

/** Lookups by hash that answer `null` for what the node has not seen, and name their block. */
const BY_HASH: ReadonlySet<string> = new Set([
  "eth_getBlockByHash",
  "eth_getHeaderByHash",
  "eth_getBlockReceipts",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
]);

/** Whether an answer of `method` may be held back: its request needs a fresh served head. */
export function mayBeHeldBack(method: string): boolean {
  return BY_NUMBER.has(method) || BY_HASH.has(method);
}

const NOT_SEEN_YET = '{"jsonrpc":"2.0","id":null,"result":null}';
const QUOTED_QUANTITY = /^"0x[0-9a-f]{1,64}"$/i;

/**
 * Replaces the answers of `open` that show a block above the served head `latest` is pinned
 * to with `null`, counts them, and returns how many; nothing while `latest` is not pinned to
 * it (no served head, pinning off, a chain position too stale to pin to, no candidate that
 * has reached it): `latest` is then the provider's, and the gateway presents no head of its
 * own; held below a copy that no longer moves (DynamoDB unreadable), a receipt would wait for
 * as long as the outage lasts.
 */
export function holdBackAboveServedHead(
  open: readonly OpenCall[],
  network: Network,
  pin: PinnedTags | null,
  telemetry: Telemetry,
): number {
  const servedHead = pin?.latest ?? null;
  if (servedHead === null || !network.settings.pin_block_tags) return 0;
  let held = 0;
  for (const entry of open) {
    if (entry.answer === null) continue;
    const block = blockShown(entry);
    if (block === null || block <= servedHead || isNullResult(entry.answer)) continue;
    entry.answer = NOT_SEEN_YET;
    held++;
  }
  if (held > 0) telemetry.count("answers_held_back", { network: network.name }, held);
  return held;
}

/**
 * A response with an answer held back is true only until the served head moves: never to be
 * cached by a CDN in GET mode, whatever the class of the answer the provider gave.
 */
export function uncachedWhenHeld(response: GatewayResponse, held: number): GatewayResponse {
  return held === 0 ? response : { ...response, cacheClass: "never" };
}

function isNullResult(text: string): boolean {
  const span = memberValueSpan(text, "result");
  return span !== null && text.slice(span.start, span.end) === "null";
}

/** The block an answer shows, for the lookups above; null for anything else. */
function blockShown(entry: OpenCall): number | null {
  const { method, params } = entry.info;
  const byNumber = BY_NUMBER.has(method);
  if (!byNumber && !BY_HASH.has(method)) return null;
  const ref = blockRefOf(method, params);
  // A tag (`latest` pinned or not, `pending`, `earliest`) is never held: the call is not about
  // a block the caller named.
  if (ref?.kind === "number") return byNumber ? ref.number : null;
  if (ref !== null && ref.kind !== "hash") return null;
  return BY_HASH.has(method) ? blockNamedIn(entry.answer ?? "") : null;
}

/**
 * The block number an answer's result names, read from its text without parsing it (a block
 * with its transactions can be large): `blockNumber` (a transaction, a receipt; the first of a
 * list) or `number` (a block, a header).
 */
function blockNamedIn(text: string): number | null {
  const resultSpan = memberValueSpan(text, "result");
  if (resultSpan === null) return null;
  let result = text.slice(resultSpan.start, resultSpan.end);
  if (result.startsWith("[")) {
    const first = arrayElementSpans(result)[0];
    if (first === undefined) return null;
    result = result.slice(first.start, first.end);
  }
  if (!result.startsWith("{")) return null;
  const span = memberValueSpan(result, "blockNumber") ?? memberValueSpan(result, "number");
  if (span === null) return null;
  const quantity = result.slice(span.start, span.end);
  if (!QUOTED_QUANTITY.test(quantity)) return null;
  // A number past 2^53 (or written with leading zeros) still names a block: above any head.
  const number = Number.parseInt(quantity.slice(1, -1), 16);
  return Number.isSafeInteger(number) ? number : Number.POSITIVE_INFINITY;
}
