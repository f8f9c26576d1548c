import {
  arrayElementSpans,
  memberValueSpan,
  parseJsonOrUndefined,
  withId,
} from "../../../jsonrpc/json-raw.ts";
import type { Upstream, UpstreamRequest, UpstreamResult } from "../../../ports.ts";
import { quantity } from "../logs-range.ts";
import { type BlockHeader, headerOf } from "./logs-headers.ts";

/**
 * Headers asked in the same breath as a log query (docs/behaviour.md §12.12): the query and
 * `eth_getBlockByNumber(n, false)` (or `eth_getBlockByHash`) for the blocks its check needs go
 * to the provider as one batch. A batch goes to one backend, so the header of `toBlock` there
 * proves the backend that answered the query had that block, which a separate call cannot
 * (a load balancer may send it elsewhere); and the blooms come back in the same round trip.
 * Providers bill each member of a batch: the headers asked are bounded per query.
 */

/** A header a check asks for: by height, or by hash (a `blockHash` filter). */
export type HeaderAsk =
  | { readonly kind: "number"; readonly block: number }
  | { readonly kind: "hash"; readonly hash: string };

export function askKey(ask: HeaderAsk): string {
  return ask.kind === "number" ? `n:${ask.block}` : `h:${ask.hash}`;
}

/** The call text of one header ask, with `id` (raw JSON). */
export function headerCall(ask: HeaderAsk, id: string): string {
  return ask.kind === "number"
    ? `{"jsonrpc":"2.0","id":${id},"method":"eth_getBlockByNumber","params":["${quantity(ask.block)}",false]}`
    : `{"jsonrpc":"2.0","id":${id},"method":"eth_getBlockByHash","params":["${ask.hash}",false]}`;
}

/**
 * The header a provider answered for an ask: the block, only if it is the one asked (its
 * number, or its hash); null for none (null, an error, another block).
 */
export function headerFor(ask: HeaderAsk, member: unknown): BlockHeader | null {
  const header = headerOf((member as { result?: unknown } | null)?.result);
  if (header === null) return null;
  const same = ask.kind === "number" ? header.number === ask.block : header.hash === ask.hash;
  return same ? header : null;
}

/** What a provider showed in the batch of its last answer: each ask's header, or null. */
export type Shown = ReadonlyMap<string, BlockHeader | null>;

/**
 * An upstream that sends a lone call with the headers asked beside it, as one batch, and hands
 * the attempt loop the call's own answer as if it had gone alone (its id restored), keeping
 * what the provider showed for the check. A provider whose batches are too small gets the
 * headers that fit (none: the call goes alone); an answer that is not a batch of members (an
 * error for the request, a non-200) goes to the loop as it came, with nothing shown.
 */
export class CompanionUpstream implements Upstream {
  readonly #inner: Upstream;
  readonly #asks: readonly HeaderAsk[];
  readonly #room: (url: string) => number;
  readonly #shown = new Map<string, Map<string, BlockHeader | null>>();
  /** Providers that answered a batch with something else: their calls go alone from now on. */
  readonly #noBatches = new Set<string>();
  /** Header members sent beside the calls (each billed by providers). */
  members = 0;
  /** Calls sent again alone after a provider refused the batch: upstream calls of their own. */
  resent = 0;

  /** `room`: how many headers fit beside the call in one batch to the provider at `url`. */
  constructor(inner: Upstream, asks: readonly HeaderAsk[], room: (url: string) => number) {
    this.#inner = inner;
    this.#asks = asks;
    this.#room = room;
  }

  /** What the provider at `url` showed beside its last answer; null when no batch came back. */
  shownBy(url: string): Shown | null {
    return this.#shown.get(url) ?? null;
  }

  async send(request: UpstreamRequest): Promise<UpstreamResult> {
    this.#shown.delete(request.url);
    const room = this.#noBatches.has(request.url) ? 0 : this.#room(request.url);
    const asks = this.#asks.slice(0, Math.max(0, room));
    const idSpan = memberValueSpan(request.body, "id");
    if (asks.length === 0 || idSpan === null || request.body.trimStart().startsWith("[")) {
      return this.#inner.send(request);
    }
    const callId = request.body.slice(idSpan.start, idSpan.end);
    const batch = [
      withId(request.body, '"q"'),
      ...asks.map((ask, index) => headerCall(ask, `"h${index}"`)),
    ];
    this.members += asks.length;
    const result = await this.#inner.send({ ...request, body: `[${batch.join(",")}]` });
    if (!result.ok || result.status !== 200) return result;
    const members = arrayElementSpans(result.body).map((span) => {
      const text = result.body.slice(span.start, span.end);
      const id = memberValueSpan(text, "id");
      return { text, id: id === null ? null : text.slice(id.start, id.end) };
    });
    const own = members.find((member) => member.id === '"q"');
    if (members.length === 0) {
      // A batch refused as a whole (an error object, a page): the call goes again alone.
      this.#noBatches.add(request.url);
      this.resent++;
      return this.#inner.send(request);
    }
    // The call's own answer missing, or no object: the loop judges the answer as it came.
    if (own === undefined || !own.text.trimStart().startsWith("{")) return result;
    const shown = new Map<string, BlockHeader | null>();
    asks.forEach((ask, index) => {
      const member = members.find((candidate) => candidate.id === `"h${index}"`);
      shown.set(
        askKey(ask),
        member === undefined ? null : headerFor(ask, parseJsonOrUndefined(member.text)),
      );
    });
    this.#shown.set(request.url, shown);
    return { ...result, body: withId(own.text, callId) };
  }
}
