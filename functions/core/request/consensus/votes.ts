import { PRUNED_HISTORY, PRUNED_HISTORY_CODE } from "../../classify/pruned-history.ts";
import { isRecord } from "../../jsonrpc/envelope.ts";
import { canonicalText, digestOf } from "./canonical.ts";

/**
 * What one provider's answer says, for the agreement rule (docs/behaviour.md §17.2): answers
 * are compared by class, not by the words a client chose.
 * - `value`: a result; agrees with another whose canonical form is the same.
 * - `revert`: the call reverted, whatever the code (3, -32603, -32015) and wording; with the
 *   revert data when the node gave it as hex, else agreeing with any revert.
 * - `failed`: the call ran and stopped without a revert (out of gas, an invalid opcode).
 * - `absent`: the node does not have it (yet): a `null`, pruned state, "not found". Never a
 *   vote against a provider that has it.
 * - `none`: nothing to compare: an error about the request or the node (invalid params, an
 *   unclassified error, an answer over the size limit).
 */
export type Vote =
  | { readonly kind: "value"; readonly key: string }
  | { readonly kind: "revert"; readonly key: string; readonly data: boolean }
  | { readonly kind: "failed"; readonly key: string }
  | { readonly kind: "absent" }
  | { readonly kind: "none"; readonly why: string };

/** A revert, as geth, reth, anvil, Erigon (3), Nethermind (-32015), Besu and HyperEVM (-32603) say it. */
const REVERT_CODES: ReadonlySet<number> = new Set([3, -32015]);
const REVERT_WORDS = /\brevert(ed)?\b|\bvm execution error\b|\bRevert\(/i;
/** Stopped without a revert: the call's own failure, said alike by every client. */
const EXECUTION_FAILED =
  /\bout of gas\b|\bgas required exceeds allowance\b|\binvalid opcode\b|\bstack (underflow|overflow)\b|\bintrinsic gas too low\b/i;
/** The node does not have what the call is about (yet). */
const NOT_FOUND = /\bnot found\b|\bunknown block\b|\bdoes not exist\b/i;
const REVERT_DATA = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * The vote of an answer member (`{result}` or `{error}`) to a call of `method`, with the
 * `ignored` paths (ignoredPaths) dropped from a result.
 */
export function voteOf(
  member: unknown,
  method: string,
  ignored: readonly (readonly string[])[],
): Vote {
  if (!isRecord(member)) return { kind: "none", why: "not a JSON-RPC answer" };
  if ("error" in member) return errorVote(member.error);
  if (!("result" in member)) return { kind: "none", why: "no result" };
  if (member.result === null) return { kind: "absent" };
  const text = canonicalText(member.result, method, ignored);
  if (text === null) return { kind: "none", why: "the result nests too deep to compare" };
  return { kind: "value", key: `value:${digestOf(text)}` };
}

function errorVote(error: unknown): Vote {
  if (!isRecord(error)) return { kind: "none", why: "an error that is not an object" };
  const code = typeof error.code === "number" ? error.code : null;
  const message = typeof error.message === "string" ? error.message : "";
  if ((code !== null && REVERT_CODES.has(code)) || REVERT_WORDS.test(message)) {
    const data = revertData(error.data);
    return data === null
      ? { kind: "revert", key: "revert", data: false }
      : { kind: "revert", key: `revert:${data}`, data: true };
  }
  if (EXECUTION_FAILED.test(message)) return { kind: "failed", key: "failed" };
  if (code === PRUNED_HISTORY_CODE || PRUNED_HISTORY.test(message) || NOT_FOUND.test(message))
    return { kind: "absent" };
  return { kind: "none", why: `error ${code ?? "without a code"}` };
}

/** The revert data as lower-case hex, where the node gave it as hex (some nest it one deeper). */
function revertData(data: unknown): string | null {
  const text = isRecord(data) ? data.data : data;
  return typeof text === "string" && REVERT_DATA.test(text) ? text.toLowerCase() : null;
}
