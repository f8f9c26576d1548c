import type { Network, Provider } from "../config/network-model.ts";
import { historyNeedOf } from "../history/resources.ts";
import { unavailableEverywhere } from "../history/unavailable.ts";
import {
  type AcceptedRequest,
  type Call,
  callsOf,
  ErrorCode,
  errorResponse,
  isCall,
  methodRefusal,
} from "../jsonrpc/jsonrpc.ts";
import { blockRefOf } from "../methods/block-ref.ts";
import { type AttemptSlot, attemptOrder, type SelectionContext } from "../routing/selection.ts";
import type { GuardCounts } from "../status/guards.ts";
import { isRegistryMethod } from "../subscriptions/registry.ts";
import { pinBlockTags } from "./head/pin-tags.ts";
import { logQueryOf, spanOf } from "./logs/logs-range.ts";
import { pinnedLogRange } from "./logs/logs-tags.ts";
import { note, openCall } from "./open-call.ts";
import { wrongChainAnswer } from "./send/sent-transactions.ts";
import type { OpenCall, RequestScope } from "./vocabulary.ts";

export interface Admission {
  /** Calls that go upstream, each with its attempt order. */
  readonly open: OpenCall[];
  /** Answers settled before any upstream call, by position in the request. */
  readonly immediate: Map<number, string>;
}

/**
 * Admits the calls of a request (docs/behaviour.md §2, §8): an invalid batch member, a method
 * the network's deny/allow lists refuse (counted by `guards`), or one no provider serves is
 * answered at once with the caller's id; every other call gets its attempt order.
 */
export function admitCalls(
  request: AcceptedRequest,
  network: Network,
  scope: Pick<RequestScope, "ranked" | "context" | "pin">,
  guards: GuardCounts,
): Admission {
  const { ranked, context, pin } = scope;
  const { methods_deny: deny, methods_allow: allow } = network.settings;
  const open: OpenCall[] = [];
  const immediate = new Map<number, string>();
  for (const member of callsOf(request)) {
    if (!isCall(member)) {
      immediate.set(
        member.position,
        errorResponse(member.rawId, ErrorCode.invalidRequest, member.message),
      );
      continue;
    }
    const refusal = methodRefusal(member.method, deny, allow);
    if (refusal !== null) {
      guards.refused(network.name, refusal);
      immediate.set(
        member.position,
        errorResponse(
          member.rawId ?? "null",
          ErrorCode.methodNotFound,
          `method ${member.method} is not allowed by this gateway`,
        ),
      );
      continue;
    }
    if (isRegistryMethod(member.method)) {
      // The WebSocket API's registry answers these; a provider's HTTP endpoint cannot push, and
      // a subscription made there would die with its provider (docs/behaviour.md §15.5).
      immediate.set(member.position, overWebSocketOnly(member.rawId ?? "null", member.method));
      continue;
    }
    const wrongChain = wrongChainAnswer(member, network.chainId);
    if (wrongChain !== null) {
      immediate.set(member.position, wrongChain);
      continue;
    }
    const range = pinnedLogRange(
      member,
      pin === null ? member : pinBlockTags(member, pin),
      context,
    );
    if (range.kind === "refused") {
      immediate.set(member.position, range.text);
      continue;
    }
    const { call } = range;
    const need = historyNeedOf(call.method, call.params, context.numberOfHash);
    const order = attemptOrder(
      ranked,
      call.method,
      context,
      blockAbout(call),
      logSpanOf(call),
      need,
    );
    if (order.length === 0 && network.providers.length === 0) {
      // Every provider failed, none being in service: the gateway's "all providers failed"
      // (502, which every client retries), as when they are all down; a secret may resolve at
      // the next config load.
      const entry = openCall(call, order, call === member ? null : member);
      note(
        entry,
        `no provider of ${network.name} is in service: every one is left out because a secret of its URL did not resolve (see GET /${network.name}/status)`,
      );
      open.push(entry);
      continue;
    }
    // No provider keeps the block the call needs: one clear error, no upstream asked (§16.5).
    const unavailable =
      order.length === 0 && need !== null
        ? unavailableEverywhere(member.rawId ?? "null", network, call.method, need, context)
        : null;
    if (unavailable !== null) {
      immediate.set(member.position, unavailable);
      continue;
    }
    if (order.length === 0) {
      immediate.set(
        member.position,
        errorResponse(
          member.rawId ?? "null",
          ErrorCode.methodNotFound,
          `method ${member.method} is not served by any provider of ${network.name}`,
        ),
      );
      continue;
    }
    open.push(openCall(call, order, call === member ? null : member));
  }
  return { open, immediate };
}

/** An `eth_subscribe` or `eth_unsubscribe` that came over HTTP: geth's -32601, with the way. */
function overWebSocketOnly(rawId: string, method: string): string {
  return errorResponse(
    rawId,
    ErrorCode.methodNotFound,
    `notifications not supported over HTTP: ${method} is served by the gateway's WebSocket API (the same /{network} path on its WebSocket endpoint: wss:// in AWS, ws:// on npm start)`,
  );
}

/** The attempt order of a call as written, blocks unpinned (docs/behaviour.md §10.4). */
export function unpinnedOrder(
  call: Call,
  ranked: readonly Provider[],
  context: SelectionContext,
): readonly AttemptSlot[] {
  const need = historyNeedOf(call.method, call.params, context.numberOfHash);
  return attemptOrder(ranked, call.method, context, blockAbout(call), logSpanOf(call), need);
}

/** The blocks a log query spans, for routing it to a provider that takes them; else null. */
function logSpanOf(call: Call): number | null {
  const query = logQueryOf(call.method, call.params);
  return query === null ? null : spanOf(query);
}

/** The highest block number a call is about, for block-aware routing; null for none or a tag. */
function blockAbout(call: Call): number | null {
  const ref = blockRefOf(call.method, call.params);
  if (ref?.kind === "number") return ref.number;
  if (ref?.kind === "range" && ref.to.kind === "number") return ref.to.number;
  return null;
}
