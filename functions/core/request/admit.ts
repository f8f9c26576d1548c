import {
  type Call,
  ErrorCode,
  errorResponse,
  type InvalidMember,
  isCall,
  methodPermitted,
  type ParsedRequest,
} from "../jsonrpc.ts";
import type { Network, Provider } from "../network-model.ts";
import { attemptOrder, type SelectionContext } from "../selection.ts";
import { type OpenCall, openCall } from "./open-call.ts";
import { wrongChainAnswer } from "./sent-transactions.ts";

/** A request the parser accepted: one call or a batch. */
export type AcceptedRequest = Exclude<ParsedRequest, { kind: "error" }>;

export interface Admission {
  /** Calls that go upstream, each with its attempt order. */
  readonly open: OpenCall[];
  /** Answers settled before any upstream call, by position in the request. */
  readonly immediate: Map<number, string>;
}

/** Every member of the request in the caller's order. */
export function callsOf(request: AcceptedRequest): ReadonlyArray<Call | InvalidMember> {
  return request.kind === "single" ? [request.call] : request.members;
}

/**
 * Admits the calls of a request (docs/behaviour.md §2, §8): an invalid batch member, a method
 * the network's deny/allow lists refuse, or one no provider serves is answered at once with
 * the caller's id; every other call gets its attempt order.
 */
export function admitCalls(
  request: AcceptedRequest,
  network: Network,
  ranked: readonly Provider[],
  context: SelectionContext,
): Admission {
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
    if (!methodPermitted(member.method, deny, allow)) {
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
    const wrongChain = wrongChainAnswer(member, network.chainId);
    if (wrongChain !== null) {
      immediate.set(member.position, wrongChain);
      continue;
    }
    const order = attemptOrder(ranked, member.method, context);
    if (order.length === 0) {
      immediate.set(
        member.position,
        network.providers.length === 0
          ? errorResponse(
              member.rawId ?? "null",
              ErrorCode.internal,
              `no provider of ${network.name} is in service: every one is left out because a secret of its URL did not resolve (see GET /${network.name}/status)`,
            )
          : errorResponse(
              member.rawId ?? "null",
              ErrorCode.methodNotFound,
              `method ${member.method} is not served by any provider of ${network.name}`,
            ),
      );
      continue;
    }
    open.push(openCall(member, order));
  }
  return { open, immediate };
}
