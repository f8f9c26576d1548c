import { type ChainHead, highestKnownBlock } from "../../chain/chain-head.ts";
import { isRecord } from "../../jsonrpc/envelope.ts";
import { type BlockPoint, blockRefOf } from "../../methods/block-ref.ts";
import { methodSpec } from "../../methods/catalogue.ts";
import { QUORUM_STALE_INTERVALS } from "../../policies.ts";
import type { AnswerClass } from "../vocabulary.ts";

/**
 * How long a call's answer may be served again (docs/behaviour.md §11), read from the method
 * catalogue, the block the call names and the chain position:
 * - `immutable`: it can never change: a static method, or a block at or below the finalized
 *   one (by number, `earliest`, a range whose both ends are, or a hash whose answer names
 *   such a block);
 * - `unfinalized`: about a block above the finalized one but at or below the served head: kept
 *   in memory for at most a block time, and dropped when a reorg may have replaced it;
 * - `realtime`: about the tip (gas price, a block tag): kept in memory for about a block time;
 * - `never`: writes, filters, node-local answers, `pending`, errors, a `null` not about a
 *   finalized block, and any block at all while the finality is unknown.
 */
export const ANSWER_CLASSES: readonly AnswerClass[] = [
  "immutable",
  "unfinalized",
  "realtime",
  "never",
];

/** What can be said of a call's answer before it is asked for. */
export type CallPlan =
  /** Never served from cache, whatever the answer. */
  | { readonly kind: "never" }
  /** The class is known from the call; `height` is the (highest) block it is about. */
  | {
      readonly kind: "known";
      readonly class: Exclude<AnswerClass, "never">;
      readonly height: number | null;
      /** About one block (not a range): the answer, when it names a block, must name it. */
      readonly oneBlock: boolean;
      /**
       * The answer is the block itself, its receipts or a transaction in it, which always name
       * their block: one that names none is broken or cut short.
       */
      readonly answerNamesBlock: boolean;
    }
  /**
   * Named by a hash: the answer says which block holds it, so its class comes with the answer.
   * `blockHash` is the block the call names, for calls by block hash.
   */
  | { readonly kind: "by-answer"; readonly blockHash: string | null };

const NEVER: CallPlan = { kind: "never" };
const REALTIME: CallPlan = {
  kind: "known",
  class: "realtime",
  height: null,
  oneBlock: false,
  answerNamesBlock: false,
};

/** Methods about one block whose answer, unless null or empty, names that block. */
const ANSWERS_NAMING_THEIR_BLOCK: ReadonlySet<string> = new Set([
  "eth_getBlockByNumber",
  "eth_getHeaderByNumber",
  "eth_getBlockReceipts",
  "eth_getTransactionByBlockNumberAndIndex",
]);

/**
 * The chain position when finality is known: the head item, unless it is missing or older
 * than three check intervals (a stalled monitor): then nothing about a block is cached.
 */
export function knownFinality(
  head: ChainHead | null,
  now: number,
  checkIntervalSeconds: number,
): ChainHead | null {
  if (head === null) return null;
  return now - head.updatedAt <= QUORUM_STALE_INTERVALS * checkIntervalSeconds * 1000 ? head : null;
}

/** The class a call's answer can have, from the call alone (its params as they go upstream). */
export function planCall(method: string, params: unknown, head: ChainHead | null): CallPlan {
  const spec = methodSpec(method);
  switch (spec.cache) {
    case "static":
      return {
        kind: "known",
        class: "immutable",
        height: null,
        oneBlock: false,
        answerNamesBlock: false,
      };
    case "realtime":
      return REALTIME;
    case "never":
      return NEVER;
    case "by-hash":
    case "by-block":
      return head === null ? NEVER : planByBlock(method, params, head);
  }
}

function planByBlock(method: string, params: unknown, head: ChainHead): CallPlan {
  const spec = methodSpec(method);
  if (spec.cache === "by-hash" && spec.hashKeyed === "tx") {
    return { kind: "by-answer", blockHash: null };
  }
  const ref = blockRefOf(method, params);
  if (ref === null) return NEVER;
  switch (ref.kind) {
    case "hash":
      return { kind: "by-answer", blockHash: ref.hash };
    case "tag":
    case "number": {
      const number = pointNumber(ref);
      if (number === null) return tagPlan(ref, ref);
      return numberPlan(number, true, head, ANSWERS_NAMING_THEIR_BLOCK.has(method));
    }
    case "range": {
      const from = pointNumber(ref.from);
      const to = pointNumber(ref.to);
      if (from === null) return tagPlan(ref.from, ref.to);
      if (to === null) return tagPlan(ref.to, ref.from);
      return numberPlan(Math.max(from, to), false, head, false);
    }
  }
}

/** A block number, `earliest` as block 0; null for a tag that moves. */
function pointNumber(point: BlockPoint): number | null {
  if (point.kind === "number") return point.number;
  return point.tag === "earliest" ? 0 : null;
}

/** A call still naming a moving tag: realtime at best, never when about `pending`. */
function tagPlan(point: BlockPoint, other: BlockPoint): CallPlan {
  const pending = (p: BlockPoint) => p.kind === "tag" && p.tag === "pending";
  return pending(point) || pending(other) ? NEVER : REALTIME;
}

function numberPlan(
  height: number,
  oneBlock: boolean,
  head: ChainHead,
  answerNamesBlock: boolean,
): CallPlan {
  const finalized = head.finalized?.number ?? -1;
  if (height <= finalized) {
    return { kind: "known", class: "immutable", height, oneBlock, answerNamesBlock };
  }
  // Above the served head the block may not exist yet: its answer (often null) says nothing.
  if (height <= highestKnownBlock(head))
    return { kind: "known", class: "unfinalized", height, oneBlock, answerNamesBlock };
  return NEVER;
}

/** What an answer is, for the cache: its class, and the block it is about when it says. */
export interface AnswerVerdict {
  readonly class: AnswerClass;
  readonly height: number | null;
  /** The hash of the block the answer is about, when it names one. */
  readonly blockHash: string | null;
}

const NOT_CACHED: AnswerVerdict = { class: "never", height: null, blockHash: null };

/**
 * The class of an upstream answer (one JSON-RPC response object, parsed) to a call planned as
 * `plan`: an error, a `null` not about a finalized block, or an answer that contradicts the
 * call (another block than the one asked for) is never cached.
 */
export function classifyAnswer(
  plan: CallPlan,
  member: unknown,
  head: ChainHead | null,
): AnswerVerdict {
  if (plan.kind === "never" || !isResultMember(member)) return NOT_CACHED;
  const { result } = member;
  if (plan.kind === "known") {
    if (result === null || result === undefined) {
      return plan.class === "immutable" && plan.height !== null
        ? { class: "immutable", height: plan.height, blockHash: null }
        : NOT_CACHED;
    }
    const named = blockNamedBy(result);
    // A block (or its receipts, or one of its transactions) that names no block is garbage.
    const emptyList = Array.isArray(result) && result.length === 0;
    if (plan.answerNamesBlock && named === null && !emptyList) return NOT_CACHED;
    if (plan.height === null || !plan.oneBlock || named === null) {
      return { class: plan.class, height: plan.height, blockHash: null };
    }
    // An answer about another block than the one asked for is nobody's to keep.
    if (named.number !== plan.height || contradictsHead(head, named)) return NOT_CACHED;
    return { class: plan.class, height: plan.height, blockHash: named.hash };
  }
  const named = blockNamedBy(result);
  if (named === null || head === null || contradictsHead(head, named)) return NOT_CACHED;
  if (plan.blockHash !== null && named.hash !== plan.blockHash) return NOT_CACHED;
  const finalized = head.finalized?.number ?? -1;
  if (named.number <= finalized) {
    return { class: "immutable", height: named.number, blockHash: named.hash };
  }
  if (named.number <= highestKnownBlock(head)) {
    return { class: "unfinalized", height: named.number, blockHash: named.hash };
  }
  return NOT_CACHED;
}

/** The chain position names another block at that height (the answer is from a replaced one). */
export function contradictsHead(
  head: ChainHead | null,
  block: { readonly number: number; readonly hash: string },
): boolean {
  if (head === null) return false;
  return [head.latest, head.safe, head.finalized].some(
    (position) =>
      position !== null &&
      position.number === block.number &&
      position.hash !== null &&
      position.hash.toLowerCase() !== block.hash,
  );
}

const QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;

/**
 * The block an answer names: `blockNumber` and `blockHash` (a transaction, a receipt, a
 * trace), else `number` and `hash` (a block); for a list, its first element's (a block's
 * receipts or traces all name the same block). A pending transaction names none.
 */
export function blockNamedBy(result: unknown): { number: number; hash: string } | null {
  const first = Array.isArray(result) ? result[0] : result;
  if (!isRecord(first)) return null;
  const pair =
    "blockNumber" in first || "blockHash" in first
      ? [first.blockNumber, first.blockHash]
      : [first.number, first.hash];
  const [number, hash] = pair;
  if (typeof number !== "string" || typeof hash !== "string") return null;
  if (!QUANTITY.test(number) || !HASH.test(hash)) return null;
  const parsed = Number.parseInt(number.slice(2), 16);
  return Number.isSafeInteger(parsed) ? { number: parsed, hash: hash.toLowerCase() } : null;
}

/** A JSON-RPC answer carrying a result (no error): the only kind ever kept. */
export function isResultMember(
  member: unknown,
): member is Readonly<Record<string, unknown>> & { readonly result: unknown } {
  return isRecord(member) && "result" in member && !("error" in member);
}

/** The key of a call's answer in both tiers: the chain, the method and its params as sent. */
export function answerKey(
  chainId: number,
  method: string,
  params: unknown,
  generation = 0,
): string {
  const key = `${chainId}\n${method}\n${JSON.stringify(params ?? null)}`;
  // After a finality break or a reset of the chain position, nothing kept before is found again.
  return generation > 0 ? `${key}\n@${generation}` : key;
}
