import { isRecord } from "../../jsonrpc/envelope.ts";

/**
 * Answers computed from what the caller sent rather than from the chain (docs/behaviour.md
 * §11.3): a call run over the caller's own state or block overrides, or over code that exists
 * on no chain (a call without `to` runs its data as creation code), a simulation of the
 * caller's own blocks, a trace under a tracer the caller wrote. Such an answer is as large and
 * as varied as the caller likes for a few bytes of request, and nobody else asks for it, so it
 * is kept in this container's memory only, never in the shared tier.
 */

/** Calls whose params are `[transaction, block, stateOverrides, blockOverrides]`. */
const CALLS_WITH_OVERRIDES: ReadonlySet<string> = new Set([
  "eth_call",
  "eth_estimateGas",
  "eth_createAccessList",
]);

/** Traces of mined transactions or blocks whose options (`params[1]`) name a tracer. */
const TRACES_WITH_OPTIONS: ReadonlySet<string> = new Set([
  "debug_traceTransaction",
  "debug_traceBlockByNumber",
  "debug_traceBlockByHash",
]);

/** A node's own tracer is named (`callTracer`, `prestateTracer`, …); anything else is code. */
const TRACER_NAME = /^[A-Za-z0-9_]{1,64}$/;

/** Whether the answer to this call is the caller's own computation (see above). */
export function computedFromCaller(method: string, params: unknown): boolean {
  if (method === "eth_simulateV1") return true;
  if (!Array.isArray(params)) return false;
  if (CALLS_WITH_OVERRIDES.has(method)) {
    return runsCreationCode(params[0]) || isOverride(params[2]) || isOverride(params[3]);
  }
  if (method === "debug_traceCall") {
    const options = params[2];
    return (
      runsCreationCode(params[0]) ||
      callersTracer(options) ||
      (isRecord(options) &&
        (isOverride(options.stateOverrides) || isOverride(options.blockOverrides)))
    );
  }
  if (TRACES_WITH_OPTIONS.has(method)) return callersTracer(params[1]);
  // Reth's trace_call takes state and block overrides after the block.
  if (method === "trace_call") {
    return runsCreationCode(params[0]) || isOverride(params[3]) || isOverride(params[4]);
  }
  if (method === "trace_callMany") {
    const calls = params[0];
    return (
      Array.isArray(calls) && calls.some((pair) => Array.isArray(pair) && runsCreationCode(pair[0]))
    );
  }
  return false;
}

/** An override object with at least one member (`{}` and `null` override nothing). */
function isOverride(value: unknown): boolean {
  return isRecord(value) ? Object.keys(value).length > 0 : value !== undefined && value !== null;
}

/** A transaction with no `to`: its data is creation code the caller wrote. */
function runsCreationCode(transaction: unknown): boolean {
  return isRecord(transaction) && (transaction.to === undefined || transaction.to === null);
}

/** Trace options naming a tracer that is not one of the node's own: JavaScript the caller wrote. */
function callersTracer(options: unknown): boolean {
  if (!isRecord(options) || options.tracer === undefined || options.tracer === null) return false;
  return typeof options.tracer !== "string" || !TRACER_NAME.test(options.tracer);
}
