/**
 * Which block a call is about (docs/behaviour.md §9), read from its params at the place the
 * method catalogue names. Reads any input without throwing: params a node would refuse give
 * `null`, as does a method about no block.
 */

import { isRecord } from "../jsonrpc/envelope.ts";
import { methodSpec } from "./catalogue.ts";
import type { BlockParam, BlockTag } from "./method-spec.ts";

export type BlockPoint =
  | { readonly kind: "tag"; readonly tag: BlockTag }
  | { readonly kind: "number"; readonly number: number };

export type BlockRef =
  | BlockPoint
  /** A block hash, in lower case. */
  | { readonly kind: "hash"; readonly hash: string }
  /** A log filter's blocks, both ends included. */
  | { readonly kind: "range"; readonly from: BlockPoint; readonly to: BlockPoint };

const TAGS: ReadonlySet<string> = new Set<BlockTag>([
  "latest",
  "safe",
  "finalized",
  "earliest",
  "pending",
]);
// At most 64 bits, as nodes take them; a number past 2^53 is refused below.
const QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;
const LATEST: BlockPoint = { kind: "tag", tag: "latest" };

/** The block `params` name for a call of `method`, or `null`. */
export function blockRefOf(method: string, params: unknown): BlockRef | null {
  const where = methodSpec(method).block;
  if (where.kind === "none" || !Array.isArray(params)) return null;
  // Fewer params than the block's position: the block was left out, and so was anything
  // required before it.
  if (params.length < where.at) return null;
  const given: unknown = params[where.at];
  switch (where.kind) {
    case "hash":
      return hashRef(given);
    case "filter":
      return filterRef(given);
    case "number-or-tag":
    case "number-tag-or-hash":
      if (!isGiven(given)) return omitted(where);
      return (
        pointOf(given) ??
        eip1898Ref(given) ??
        (where.kind === "number-tag-or-hash" ? hashRef(given) : null)
      );
  }
}

type NumberParam = Extract<BlockParam, { kind: "number-or-tag" | "number-tag-or-hash" }>;

function omitted(where: NumberParam): BlockRef | null {
  return where.whenOmitted === undefined ? null : { kind: "tag", tag: where.whenOmitted };
}

/** A tag or a hex block number. */
function pointOf(value: unknown): BlockPoint | null {
  if (typeof value !== "string") return null;
  if (TAGS.has(value)) return { kind: "tag", tag: value as BlockTag };
  if (!QUANTITY.test(value)) return null;
  const number = Number.parseInt(value.slice(2), 16);
  return Number.isSafeInteger(number) ? { kind: "number", number } : null;
}

function hashRef(value: unknown): BlockRef | null {
  return typeof value === "string" && HASH.test(value)
    ? { kind: "hash", hash: value.toLowerCase() }
    : null;
}

/** `{blockNumber}` with a hex number, or `{blockHash, requireCanonical?}`: one, not both. */
function eip1898Ref(value: unknown): BlockRef | null {
  if (!isRecord(value)) return null;
  const { blockNumber, blockHash, requireCanonical } = value;
  if (isGiven(blockNumber) && isGiven(blockHash)) return null;
  if (isGiven(blockNumber)) {
    const point = pointOf(blockNumber);
    return point?.kind === "number" ? point : null;
  }
  if (isGiven(requireCanonical) && typeof requireCanonical !== "boolean") return null;
  return hashRef(blockHash);
}

/** `{blockHash}`, or `{fromBlock?, toBlock?}` whose absent ends mean "latest". */
function filterRef(value: unknown): BlockRef | null {
  if (!isRecord(value)) return null;
  const { blockHash, fromBlock, toBlock } = value;
  // Nodes refuse a filter naming both a hash and a range.
  if (isGiven(blockHash)) return isGiven(fromBlock) || isGiven(toBlock) ? null : hashRef(blockHash);
  const from = isGiven(fromBlock) ? pointOf(fromBlock) : LATEST;
  const to = isGiven(toBlock) ? pointOf(toBlock) : LATEST;
  return from !== null && to !== null ? { kind: "range", from, to } : null;
}

/** JSON `null` stands for an absent member, as nodes read it. */
function isGiven(value: unknown): boolean {
  return value !== undefined && value !== null;
}
