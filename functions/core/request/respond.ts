import type { Network } from "../config/network-model.ts";
import { withId } from "../jsonrpc/json-raw.ts";
import {
  type AcceptedRequest,
  callsOf,
  ErrorCode,
  errorResponse,
  isCall,
} from "../jsonrpc/jsonrpc.ts";
import type { Telemetry } from "../ports.ts";
import type { GatewayResponse, OpenCall } from "./vocabulary.ts";

export const JSON_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
};

export interface ResponseParts {
  readonly network: Network;
  readonly request: AcceptedRequest;
  readonly open: readonly OpenCall[];
  readonly immediate: ReadonlyMap<number, string>;
  /** Providers that answered, in order of use. */
  readonly used: readonly string[];
  readonly attempts: number;
  /** The served head the request's tags were pinned to, or null (`x-gateway-head`). */
  readonly servedHead: number | null;
}

export interface ResponderDeps {
  readonly telemetry: Telemetry;
  /** Removes secrets from any text that may leave the process. */
  readonly scrub: (text: string) => string;
  /** Masks secret values in an answer to the caller (an upstream may echo its own URL). */
  readonly scrubAnswer: (text: string) => string;
}

/**
 * An answer's headers: the content type, and under `diagnostic_headers` the providers whose
 * answers the caller gets, the upstream calls made, and the served head the answer was pinned
 * to (`x-gateway-head`, hex like a block number; absent while there is none).
 */
export function answerHeaders(
  network: Network,
  providers: readonly string[],
  attempts: number,
  servedHead: number | null,
): Record<string, string> {
  const headers: Record<string, string> = { ...JSON_HEADERS };
  if (network.settings.diagnostic_headers) {
    headers["x-gateway-provider"] = providers.join(",");
    headers["x-gateway-attempts"] = String(attempts);
    if (servedHead !== null) headers["x-gateway-head"] = `0x${servedHead.toString(16)}`;
  }
  return headers;
}

/** A request to a network the config does not have: 404, naming the ones it has. */
export function unknownNetwork(name: string, configured: readonly string[]): GatewayResponse {
  return {
    status: 404,
    headers: { ...JSON_HEADERS },
    body: errorResponse(
      "null",
      ErrorCode.invalidRequest,
      `unknown network "${name.slice(0, 64)}"; configured: ${configured.join(", ")}`,
    ),
  };
}

/**
 * The answer to the caller (docs/behaviour.md §2): each call's upstream text with the caller's
 * id, or the last upstream error kept for it, or the gateway's own -32603 naming the last
 * error; a batch in the caller's order, notifications left out; the diagnostic headers.
 */
export function assembleResponse(parts: ResponseParts, deps: ResponderDeps): GatewayResponse {
  const { network, request, open, attempts } = parts;
  const providers = [...parts.used];
  const answers = new Map(parts.immediate);
  let failed = 0;
  for (const entry of open) {
    // A kept answer the gateway wrote itself (docs/behaviour.md §16.5) names no provider.
    const keptFrom = entry.answer === null ? (entry.fallback?.provider ?? "") : "";
    if (keptFrom !== "" && !providers.includes(keptFrom)) providers.push(keptFrom);
    const upstreamText = entry.answer ?? entry.fallback?.text ?? null;
    if (upstreamText !== null) {
      const text = deps.scrubAnswer(upstreamText);
      answers.set(
        entry.call.position,
        entry.call.rawId === null ? text : withId(text, entry.call.rawId),
      );
      continue;
    }
    failed++;
    deps.telemetry.log("error", "all providers failed", {
      network: network.name,
      method: entry.info.method,
      last_error: entry.lastError,
    });
    answers.set(
      entry.call.position,
      errorResponse(
        entry.call.rawId ?? "null",
        ErrorCode.internal,
        `all providers failed for ${entry.info.method}; last error: ${deps.scrub(entry.lastError)}`,
      ),
    );
  }
  const headers = answerHeaders(network, providers, attempts, parts.servedHead);
  const allFailed = open.length > 0 && failed === open.length;
  if (request.kind === "single") {
    // A notification gets no answer (JSON-RPC 2.0 §4.1), only the HTTP status.
    if (request.call.rawId === null && !allFailed) return { status: 204, headers, body: "" };
    return { status: allFailed ? 502 : 200, headers, body: answers.get(0) ?? "" };
  }
  const ordered = callsOf(request).flatMap((member) => {
    // Notifications get no answer (JSON-RPC 2.0 §6).
    if (isCall(member) && member.rawId === null) return [];
    const text = answers.get(member.position);
    return text === undefined ? [] : [text];
  });
  const status = allFailed && parts.immediate.size === 0 ? 502 : 200;
  // A batch of notifications only gets no answer, as a lone notification does (204).
  if (ordered.length === 0) return { status: status === 200 ? 204 : status, headers, body: "" };
  return { status, headers, body: `[${ordered.join(",")}]` };
}
