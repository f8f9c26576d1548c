import { publicationDelayMs } from "../chain-head.ts";
import { methodPermitted } from "../jsonrpc.ts";
import type { GatewayModel, Network } from "../network-model.ts";
import type { NetworkState } from "../network-state.ts";
import type { AcceptedRequest } from "./admit.ts";
import { type AnswerCache, withCacheOutcome } from "./answer-cache.ts";
import { type OpenCall, openCall } from "./open-call.ts";
import { reportRequest } from "./report.ts";
import { assembleResponse, type GatewayResponse, type ResponderDeps } from "./respond.ts";
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

export function loneServedHeadCall(
  request: AcceptedRequest,
  network: Network,
  state: NetworkState,
  now: number,
): OpenCall | null {
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
    publicationDelayMs(settings.state_cache_ms),
    settings.block_time_seconds * 1000,
  );
  const entry = openCall(request.call, []);
  return answerFromServedHead([entry], view).size === 1 ? entry : null;
}

export interface LoneAnswerDeps extends ResponderDeps {
  readonly answers: AnswerCache;
  readonly clock: () => number;
}

/** The response to that call, with the same headers, cache outcome and metrics as the pipeline's. */
export async function answerLoneCall(
  parts: {
    readonly model: GatewayModel;
    readonly network: Network;
    readonly request: AcceptedRequest;
    readonly entry: OpenCall;
    readonly state: NetworkState;
    readonly started: number;
  },
  deps: LoneAnswerDeps,
): Promise<GatewayResponse> {
  const { model, network, request, entry, state, started } = parts;
  const open = [entry];
  const cached = await deps.answers.lookup(model, network, request, open, state.head);
  deps.answers.store(model, cached);
  const response = withCacheOutcome(
    assembleResponse({ network, request, open, immediate: new Map(), used: [], attempts: 0 }, deps),
    cached,
    request,
  );
  reportRequest(deps.telemetry, {
    network,
    calls: 1,
    open,
    routing: null,
    used: [],
    attempts: 0,
    status: response.status,
    elapsedMs: deps.clock() - started,
  });
  return response;
}
