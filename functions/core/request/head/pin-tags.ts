import { arrayElementSpans, memberValueSpan, type Span } from "../../jsonrpc/json-raw.ts";
import type { Call } from "../../jsonrpc/jsonrpc.ts";
import { methodSpec } from "../../methods/catalogue.ts";
import type { PinnedTags } from "../vocabulary.ts";

/**
 * Block tags pinned to numbers (docs/behaviour.md §10, `pin_block_tags`): `latest`, `safe` and
 * `finalized` in a call's block parameter (or a log filter's `fromBlock`/`toBlock`) are
 * rewritten to the blocks the gateway vouches for before the call goes upstream, so every
 * provider answers about the same block and the answer can be cached. Only the tag's text
 * changes; everything else of the call goes upstream as the caller wrote it.
 */

const PINNABLE = new Set(["latest", "safe", "finalized"]);

/** The call with its tags pinned, or the same call when there is nothing to pin. */
export function pinBlockTags(call: Call, tags: PinnedTags): Call {
  const where = methodSpec(call.method).block;
  if (
    where.kind !== "number-or-tag" &&
    where.kind !== "number-tag-or-hash" &&
    where.kind !== "filter"
  ) {
    return call;
  }
  const paramsSpan = memberValueSpan(call.raw, "params");
  if (paramsSpan === null || !Array.isArray(call.params)) return call;
  const paramsText = call.raw.slice(paramsSpan.start, paramsSpan.end);
  const element = arrayElementSpans(paramsText)[where.at];
  if (element === undefined) return call;
  const edits: Array<{ span: Span; text: string }> = [];
  // The params as the pinned text parses, made from the caller's without parsing it again.
  const params = [...call.params];
  const given: unknown = call.params[where.at];
  if (where.kind === "filter") {
    if (typeof given !== "object" || given === null) return call;
    const filter = paramsText.slice(element.start, element.end);
    const pinnedFilter: Record<string, unknown> = { ...given };
    for (const end of ["fromBlock", "toBlock"]) {
      const span = memberValueSpan(filter, end);
      const number =
        span === null ? null : pinnedNumber((given as Record<string, unknown>)[end], tags);
      if (span !== null && number !== null) {
        edits.push({
          span: { start: element.start + span.start, end: element.start + span.end },
          text: quantity(number),
        });
        pinnedFilter[end] = hex(number);
      }
    }
    params[where.at] = pinnedFilter;
  } else {
    const number = pinnedNumber(given, tags);
    if (number !== null) {
      edits.push({ span: element, text: quantity(number) });
      params[where.at] = hex(number);
    }
  }
  if (edits.length === 0) return call;
  let pinned = paramsText;
  for (const { span, text } of edits.sort((a, b) => b.span.start - a.span.start)) {
    pinned = `${pinned.slice(0, span.start)}${text}${pinned.slice(span.end)}`;
  }
  return {
    ...call,
    raw: `${call.raw.slice(0, paramsSpan.start)}${pinned}${call.raw.slice(paramsSpan.end)}`,
    params,
  };
}

function pinnedNumber(value: unknown, tags: PinnedTags): number | null {
  if (typeof value !== "string" || !PINNABLE.has(value)) return null;
  return tags[value as keyof PinnedTags];
}

function hex(number: number): string {
  return `0x${number.toString(16)}`;
}

/** The number as a JSON quantity. */
function quantity(number: number): string {
  return `"${hex(number)}"`;
}
