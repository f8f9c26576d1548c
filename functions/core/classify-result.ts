/**
 * Method-aware judgement of a JSON-RPC `result` (docs/behaviour.md §4.5): a `null`, or
 * text such as "You've been rate limited", where the method must return a value is a
 * failure of the provider (`no_result`), not an answer to pass on.
 */

import { isRecord } from "./classify-envelope.ts";
import type { CallInfo, ClassifyContext, Verdict } from "./verdict.ts";

type Shape = "quantity" | "data" | "version" | "array" | "object";

/**
 * When `null` is a valid answer: `never`; `always` (a receipt of a pending transaction, an
 * unknown hash); or `unsettled-block`, when the block named by the first param may not
 * exist yet (a number above the quorum head, "pending", a block hash).
 */
type NullWhen = "never" | "always" | "unsettled-block";

interface ResultRule {
  readonly shape: Shape;
  readonly nullWhen: NullWhen;
}

const SHAPE_TESTS: Readonly<Record<Shape, (result: unknown) => boolean>> = {
  quantity: (result) => typeof result === "string" && /^0x[0-9a-f]+$/i.test(result),
  data: (result) => typeof result === "string" && /^0x[0-9a-f]*$/i.test(result),
  version: (result) => typeof result === "string" && /^(\d+|0x[0-9a-f]+)$/i.test(result),
  array: Array.isArray,
  object: isRecord,
};

const value = (shape: Shape): ResultRule => ({ shape, nullWhen: "never" });

/** Methods not listed here accept any result. */
const RESULT_RULES: ReadonlyMap<string, ResultRule> = new Map<string, ResultRule>([
  ["eth_blockNumber", value("quantity")],
  ["eth_chainId", value("quantity")],
  ["eth_gasPrice", value("quantity")],
  ["eth_maxPriorityFeePerGas", value("quantity")],
  ["eth_blobBaseFee", value("quantity")],
  ["eth_getBalance", value("quantity")],
  ["eth_getTransactionCount", value("quantity")],
  ["eth_estimateGas", value("quantity")],
  ["eth_getCode", value("data")],
  ["eth_call", value("data")],
  ["eth_getStorageAt", value("data")],
  ["eth_sendRawTransaction", value("data")],
  ["net_version", value("version")],
  ["eth_getLogs", value("array")],
  ["eth_feeHistory", value("object")],
  ["eth_getBlockByNumber", { shape: "object", nullWhen: "unsettled-block" }],
  ["eth_getBlockReceipts", { shape: "array", nullWhen: "unsettled-block" }],
  ["eth_getBlockByHash", { shape: "object", nullWhen: "always" }],
  ["eth_getTransactionByHash", { shape: "object", nullWhen: "always" }],
  ["eth_getTransactionReceipt", { shape: "object", nullWhen: "always" }],
]);

/** Tags whose block always exists on a healthy node ("pending" may not). */
const SETTLED_TAGS = new Set(["latest", "safe", "finalized", "earliest"]);
const HEX_NUMBER = /^0x[0-9a-f]{1,16}$/i;

/** Whether the block named by `params[0]` must exist on a provider that is in quorum. */
function blockMustExist(params: unknown, quorumHead: number | null): boolean {
  const block = Array.isArray(params) ? params[0] : undefined;
  if (typeof block === "string" && SETTLED_TAGS.has(block)) return true;
  const number = blockNumberOf(block);
  return number !== undefined && quorumHead !== null && number <= quorumHead;
}

/** A hex number, or an EIP-1898 `{blockNumber}`; a hash or "pending" names no number. */
function blockNumberOf(block: unknown): number | undefined {
  if (isRecord(block)) return blockNumberOf(block.blockNumber);
  if (typeof block === "string" && HEX_NUMBER.test(block)) return Number.parseInt(block, 16);
  return undefined;
}

function nullAllowed(rule: ResultRule, call: CallInfo, context: ClassifyContext): boolean {
  switch (rule.nullWhen) {
    case "never":
      return false;
    case "always":
      return true;
    case "unsettled-block":
      return !blockMustExist(call.params, context.quorumHead);
  }
}

export function judgeResult(result: unknown, call: CallInfo, context: ClassifyContext): Verdict {
  const rule = RESULT_RULES.get(call.method);
  if (rule === undefined) return { outcome: "ok" };
  if (result === null || result === undefined) {
    return nullAllowed(rule, call, context)
      ? { outcome: "ok" }
      : noResult(`${call.method} returned no result where a value is required`);
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
  return { outcome: "ok" };
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
