import type { Call } from "../jsonrpc/jsonrpc.ts";
import type { AttemptSlot } from "../routing/selection.ts";
import type { OpenCall } from "./vocabulary.ts";

export function openCall(
  call: Call,
  order: readonly AttemptSlot[],
  unpinned: Call | null = null,
): OpenCall {
  return {
    call,
    unpinned,
    sentUnpinned: false,
    answeredBy: null,
    info: { method: call.method, params: call.params },
    order,
    next: 0,
    attempts: 0,
    answer: null,
    fallback: null,
    lastError: "no attempt was made",
    failures: [],
  };
}
