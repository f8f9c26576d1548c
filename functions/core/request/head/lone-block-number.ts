import { publicationDelayMs } from "../../chain/chain-head.ts";
import type { Network } from "../../config/network-model.ts";
import { withId } from "../../jsonrpc/json-raw.ts";
import type { AcceptedRequest } from "../../jsonrpc/jsonrpc.ts";
import { methodPermitted } from "../../jsonrpc/jsonrpc.ts";
import type { Telemetry } from "../../ports.ts";
import type { NetworkState } from "../../routing/network-state.ts";
import { planCall } from "../cache/cache-class.ts";
import { openCall } from "../open-call.ts";
import { reportRequest } from "../report.ts";
import { answerHeaders } from "../respond.ts";
import type { GatewayResponse, OpenCall } from "../vocabulary.ts";
import { answerFromServedHead, servedHeadView } from "./served-head.ts";

/**
 * The short path for the commonest call a gateway gets: a lone `eth_blockNumber` that the
 * served head answers (docs/behaviour.md §10.3). Such a request makes no upstream call, so
 * ranking the providers, walking attempt orders, pinning tags and settling attempts do nothing
 * for it; skipping them takes about a third of the gateway's CPU per such request. Admission
 * stays exact: the call is taken here only when the full pipeline would answer it from the
 * served head too (the method permitted, some provider configured to serve it).
 */
const BLOCK_NUMBER = "eth_blockNumber";

/** The lone call, answered, and the served head it was answered with. */
export interface LoneCall {
  readonly entry: OpenCall;
  readonly servedHead: number;
}

export function loneServedHeadCall(
  request: AcceptedRequest,
  network: Network,
  state: NetworkState,
  now: number,
): LoneCall | null {
  if (request.kind !== "single" || request.call.method !== BLOCK_NUMBER) return null;
  const { settings } = network;
  if (!methodPermitted(BLOCK_NUMBER, settings.methods_deny, settings.methods_allow)) return null;
  // With no provider configured to serve it, the pipeline answers "not served" instead.
  const served = network.providers.some((provider) =>
    methodPermitted(BLOCK_NUMBER, provider.methodsDeny ?? [], provider.methodsAllow),
  );
  if (!served) return null;
  const view = servedHeadView(
    state.head,
    now,
    publicationDelayMs(settings.head_cache_ms),
    settings.block_time_seconds * 1000,
  );
  const entry = openCall(request.call, []);
  if (view.answer === null || answerFromServedHead([entry], view).size !== 1) return null;
  return { entry, servedHead: view.answer };
}

export interface LoneAnswerDeps {
  readonly telemetry: Telemetry;
  readonly clock: () => number;
}

/**
 * The response to that call, as the pipeline assembles it: the served head's answer with the
 * caller's id (a notification: 204 and no body), no provider, no attempt, the answer cache
 * bypassed (the served head's number is never cached), the class the method catalogue gives
 * the answer (GET mode's Cache-Control), and the request's metrics.
 */
export function answerLoneCall(
  parts: {
    readonly network: Network;
    readonly alone: LoneCall;
    readonly state: NetworkState;
    readonly started: number;
  },
  deps: LoneAnswerDeps,
): GatewayResponse {
  const { network, alone, state, started } = parts;
  const { entry } = alone;
  const { rawId, method, params } = entry.call;
  const headers = answerHeaders(network, [], 0, alone.servedHead);
  // The served head's number is never cached (x-gateway-cache as the answer cache words it).
  if (network.settings.diagnostic_headers) headers["x-gateway-cache"] = "bypass";
  const plan = planCall(method, params, state.head);
  const cacheClass = plan.kind === "known" ? plan.class : "never";
  const response: GatewayResponse =
    rawId === null
      ? { status: 204, headers, body: "", cacheClass }
      : { status: 200, headers, body: withId(entry.answer ?? "", rawId), cacheClass };
  reportRequest(deps.telemetry, {
    network,
    calls: 1,
    open: [entry],
    routing: null,
    used: [],
    attempts: 0,
    status: response.status,
    elapsedMs: deps.clock() - started,
  });
  return response;
}
