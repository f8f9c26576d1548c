import { ALREADY_KNOWN, NONCE_TOO_LOW } from "../../classify/classify-patterns.ts";
import { ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import type { Upstream } from "../../ports.ts";
import type { OpenCall } from "../vocabulary.ts";
import { readRawTransaction } from "./transactions.ts";

/**
 * `eth_sendRawTransaction` never reports a sent transaction as failed (docs/behaviour.md
 * §4.12). A provider may take a transaction and lose its answer (a timeout, a reset), and
 * the next one then says it knows it already: that is the success it looks like, answered
 * with the transaction's hash. "nonce too low" and "no answer at all" are successes only if a
 * provider knows the transaction by its hash; otherwise the caller's error stands.
 */

export const SEND_RAW_TRANSACTION = "eth_sendRawTransaction";

export function isSend(entry: { readonly info: { readonly method: string } }): boolean {
  return entry.info.method === SEND_RAW_TRANSACTION;
}

/** -32602 for a transaction signed for another chain: the caller's error, sent nowhere. */
export function wrongChainAnswer(call: OpenCall["call"], chainId: number): string | null {
  if (call.method !== SEND_RAW_TRANSACTION) return null;
  const params = call.params;
  const tx = readRawTransaction(Array.isArray(params) ? params[0] : undefined);
  if (tx === null || tx.chainId === null || tx.chainId === chainId) return null;
  return errorResponse(
    call.rawId ?? "null",
    ErrorCode.invalidParams,
    `invalid params: the transaction is signed for chain ${tx.chainId}, and this network is chain ${chainId}`,
  );
}

/**
 * Settles the request's sends: "already known" becomes the hash; for "nonce too low" or no
 * answer, `known(call, hash)` asks providers whether they hold the transaction.
 */
export async function settleSentTransactions(
  open: readonly OpenCall[],
  known: (call: OpenCall, hash: string) => Promise<boolean>,
): Promise<void> {
  await Promise.all(
    open
      .filter((entry) => entry.info.method === SEND_RAW_TRANSACTION)
      .map(async (entry) => {
        const params = entry.info.params;
        const tx = readRawTransaction(Array.isArray(params) ? params[0] : undefined);
        if (tx === null) return;
        const text = entry.answer ?? entry.fallback?.text ?? null;
        const message = text === null ? null : errorMessageOf(text);
        if (message !== null && ALREADY_KNOWN.test(message)) {
          entry.answer = hashAnswer(tx.hash);
          return;
        }
        const unsettled = text === null || (message !== null && NONCE_TOO_LOW.test(message));
        if (unsettled && (await known(entry, tx.hash))) entry.answer = hashAnswer(tx.hash);
      }),
  );
}

/** The success answer to a send; respond puts the caller's id in. */
function hashAnswer(hash: string): string {
  return `{"jsonrpc":"2.0","id":null,"result":"${hash}"}`;
}

function errorMessageOf(text: string): string | null {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    const message = parsed?.error?.message;
    return typeof message === "string" ? message : null;
  } catch {
    return null;
  }
}

/**
 * Whether a provider the call went to (or would have) holds the transaction `hash`: asked of
 * the first two in its order, at once, within `timeoutMs` (what is left of the deadline).
 */
export async function providerKnowsTransaction(
  upstream: Upstream,
  call: OpenCall,
  hash: string,
  limits: { readonly timeoutMs: number; readonly maxResponseBytes: number },
): Promise<boolean> {
  if (limits.timeoutMs <= 0) return false;
  const body = `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["${hash}"]}`;
  const asked = call.order.slice(0, 2).map(async ({ provider }) => {
    const result = await upstream.send({
      url: provider.url,
      body,
      timeoutMs: Math.floor(limits.timeoutMs),
      maxResponseBytes: limits.maxResponseBytes,
      idempotent: true,
    });
    return result.ok && lookupFound(result.status, result.body);
  });
  return (await Promise.all(asked)).some(Boolean);
}

/** Whether a lookup answer names a transaction (a non-null result object). */
function lookupFound(status: number, body: string): boolean {
  if (status !== 200) return false;
  try {
    const parsed = JSON.parse(body) as { result?: unknown };
    return typeof parsed?.result === "object" && parsed.result !== null;
  } catch {
    return false;
  }
}
