/**
 * Method-aware judgement of a JSON-RPC `result` (docs/behaviour.md §4.5): a `null`, or
 * text such as "You've been rate limited", where the method must return a value is a
 * failure of the provider (`no_result`), not an answer to pass on. Each method's rule is
 * in the method catalogue (docs/behaviour.md §9); a method without one accepts any result.
 */

import { isRecord } from "../jsonrpc/envelope.ts";
import { blockRefOf } from "../methods/block-ref.ts";
import { methodSpec } from "../methods/catalogue.ts";
import type { ResultRule, ResultShape } from "../methods/method-spec.ts";
import { readRawTransaction } from "../request/send/transactions.ts";
import type { CallInfo, ClassifyContext, Verdict } from "./verdict.ts";

const SHAPE_TESTS: Readonly<Record<ResultShape, (result: unknown) => boolean>> = {
  quantity: (result) => typeof result === "string" && /^0x[0-9a-f]+$/i.test(result),
  data: (result) => typeof result === "string" && /^0x[0-9a-f]*$/i.test(result),
  version: (result) => typeof result === "string" && /^(\d+|0x[0-9a-f]+)$/i.test(result),
  array: Array.isArray,
  object: isRecord,
};

/**
 * Whether the block the call names must exist on a provider that is in quorum: a tag other
 * than "pending", or a number at or below the quorum head. A hash may name a block that
 * never was.
 */
function blockMustExist(call: CallInfo, quorumHead: number | null): boolean {
  const block = blockRefOf(call.method, call.params);
  if (block?.kind === "tag") return block.tag !== "pending";
  if (block?.kind === "number") return quorumHead !== null && block.number <= quorumHead;
  return false;
}

function nullAllowed(rule: ResultRule, call: CallInfo, context: ClassifyContext): boolean {
  switch (rule.nullWhen) {
    case "never":
      return false;
    case "always":
      return true;
    case "unsettled-block":
      return !blockMustExist(call, context.quorumHead);
  }
}

/** A null about a numbered block the known head covers: the provider has not reached it. */
function behindTheHead(call: CallInfo, context: ClassifyContext): boolean {
  const block = blockRefOf(call.method, call.params);
  return (
    block?.kind === "number" && context.quorumHead !== null && block.number <= context.quorumHead
  );
}

export function judgeResult(result: unknown, call: CallInfo, context: ClassifyContext): Verdict {
  const rule = methodSpec(call.method).result;
  if (rule === null) return { outcome: "ok" };
  if (result === null || result === undefined) {
    if (nullAllowed(rule, call, context)) return { outcome: "ok" };
    if (behindTheHead(call, context)) {
      return {
        outcome: "behind",
        detail: `${call.method} returned null for a block at or below the known head ${context.quorumHead}`,
      };
    }
    return noResult(`${call.method} returned no result where a value is required`);
  }
  if (!SHAPE_TESTS[rule.shape](result)) {
    return noResult(`${call.method} returned ${preview(result)} where ${rule.shape} is required`);
  }
  // A provider that moved to another chain must not hand callers that chain's id (nor, after
  // it, that chain's data): it is retried elsewhere until the monitor's next chain-id check.
  if (call.method === "eth_chainId" && context.chainId !== undefined) {
    const answered = Number.parseInt(result as string, 16);
    if (answered !== context.chainId) {
      return {
        outcome: "retry",
        kind: "no_result",
        reason: "wrong_chain",
        detail: `eth_chainId answered ${answered}, this network is chain ${context.chainId}`,
      };
    }
  }
  // The hash of a sent transaction is read from its signed bytes: a provider answering another
  // hash is not telling the caller where their transaction is, and the next provider is asked.
  if (call.method === "eth_sendRawTransaction") {
    const tx = readRawTransaction(Array.isArray(call.params) ? call.params[0] : undefined);
    if (tx !== null && (result as string).toLowerCase() !== tx.hash) {
      return noResult(
        `eth_sendRawTransaction answered ${preview(result)}, not the transaction's hash ${tx.hash}`,
      );
    }
  }
  if (call.method === "eth_feeHistory") {
    const last = feeHistoryShortOf(result, call, context);
    if (last !== null) {
      return {
        outcome: "behind",
        detail: `eth_feeHistory ended at block ${last}, before the newest block asked for, at or below the known head ${context.quorumHead}`,
      };
    }
  }
  if (call.method === "eth_blockNumber" && context.quorumHead !== null) {
    const answered = Number.parseInt(result as string, 16);
    const floor = context.quorumHead - (context.headToleranceBlocks ?? 0);
    if (answered < floor) {
      return {
        outcome: "behind",
        detail: `eth_blockNumber answered ${answered}, under the served head ${context.quorumHead}`,
      };
    }
  }
  return { outcome: "ok" };
}

/** A block count as nodes read it: a hex quantity, or a decimal number or string. */
function blockCountOf(value: unknown): number | null {
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : null;
  if (typeof value !== "string") return null;
  const count = /^0x[0-9a-f]{1,16}$/i.test(value)
    ? Number.parseInt(value.slice(2), 16)
    : /^[0-9]{1,16}$/.test(value)
      ? Number(value)
      : Number.NaN;
  return Number.isSafeInteger(count) ? count : null;
}

/**
 * The last block of a fee history that ends before the newest block the call names, when that
 * block is at or below the known head: a node that has not reached it clamps the newest block
 * to its own head (anvil, reth) instead of refusing, so its history silently lacks the blocks
 * asked for. A history cut at its old end (a node without old blocks) still ends at the newest
 * one. Null when the answer covers the newest block, or when nothing can be told.
 */
function feeHistoryShortOf(
  result: unknown,
  call: CallInfo,
  context: ClassifyContext,
): number | null {
  const block = blockRefOf(call.method, call.params);
  if (block?.kind !== "number" || context.quorumHead === null) return null;
  if (block.number > context.quorumHead) return null;
  const count = blockCountOf(Array.isArray(call.params) ? call.params[0] : undefined);
  if (count === null || count < 1 || !isRecord(result)) return null;
  const { oldestBlock, gasUsedRatio } = result;
  if (typeof oldestBlock !== "string" || !/^0x[0-9a-f]{1,16}$/i.test(oldestBlock)) return null;
  if (!Array.isArray(gasUsedRatio)) return null;
  const last = Number.parseInt(oldestBlock.slice(2), 16) + gasUsedRatio.length - 1;
  return last < block.number ? last : null;
}

function noResult(detail: string): Verdict {
  return { outcome: "retry", kind: "no_result", reason: "transient", detail };
}

const SNIPPET_LIMIT = 80;

function preview(result: unknown): string {
  if (typeof result !== "string") return Array.isArray(result) ? "an array" : typeof result;
  const text = result.replace(/\s+/g, " ").trim();
  return JSON.stringify(text.length > SNIPPET_LIMIT ? `${text.slice(0, SNIPPET_LIMIT)}…` : text);
}
