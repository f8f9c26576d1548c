import { allowedOrigin } from "../core/http/cors.ts";
import { ErrorCode, errorResponse } from "../core/jsonrpc/jsonrpc.ts";
import type { SubscriptionStore, Telemetry } from "../core/ports.ts";
import { ANY_NETWORK } from "../core/status/guards.ts";
import type { ConnectionRecord } from "../core/subscriptions/subscription-records.ts";
import {
  CONNECTION_RECORD_MARGIN_MS,
  WEBSOCKET_MAX_CONNECTION_MS,
} from "../core/subscriptions/websocket-quotas.ts";
import { matchingKey } from "../proxy/api.ts";
import type { ProxyRuntime } from "../proxy/runtime.ts";
import { headerOf, type WebSocketEvent, type WebSocketResult } from "./socket-event.ts";

/** Who a connection's messages come from: its key's name, and that key's hash then. */
export interface KnownCaller {
  readonly name: string;
  readonly keySha256?: string;
}

/**
 * `$connect` and `$disconnect` (docs/behaviour.md "Subscriptions over WebSocket"): a socket is
 * let in with the same API keys and limits as HTTP (the key in `?key=` or `x-api-key`), from
 * an origin the CORS policy allows, within its key's connection bound, and registered so its
 * messages know their caller; its goodbye removes it and its subscriptions. A refusal is the
 * upgrade's HTTP status with a JSON-RPC error as its body, counted by reason.
 */

export interface ConnectionDeps {
  readonly proxy: ProxyRuntime;
  readonly store: SubscriptionStore;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /** Remembers (or forgets, with null) a connection's caller for its messages. */
  readonly remember: (network: string, connectionId: string, caller: KnownCaller | null) => void;
}

export type RefusalReason =
  | "unknown_network"
  | "unauthorized"
  | "origin"
  | "requests_per_minute"
  | "over_key"
  | "unavailable";

export async function connect(
  event: WebSocketEvent,
  deps: ConnectionDeps,
): Promise<WebSocketResult> {
  const { model } = await deps.proxy.current();
  const { stage, connectionId } = event.requestContext;
  const network = model.networks.get(stage);
  if (network === undefined) {
    return refuse(
      deps,
      ANY_NETWORK,
      "unknown_network",
      404,
      ErrorCode.invalidRequest,
      `unknown network "${stage.slice(0, 64)}"; configured: ${[...model.networks.keys()].join(", ")}`,
    );
  }
  const origin = headerOf(event, "origin");
  if (origin !== undefined && allowedOrigin(model.corsOrigins, origin) === null) {
    return refuse(
      deps,
      stage,
      "origin",
      403,
      ErrorCode.unauthorized,
      "this origin is not among the gateway's cors_origins",
    );
  }
  let caller = "";
  let keySha256: string | undefined;
  if (model.apiKeys.length > 0) {
    // An empty header must not hide a key given in the query, as over HTTP.
    const key = matchingKey(
      headerOf(event, "x-api-key") || event.queryStringParameters?.key,
      model.apiKeys,
    );
    if (key === null) {
      return refuse(
        deps,
        stage,
        "unauthorized",
        401,
        ErrorCode.unauthorized,
        "unauthorized: send a valid API key in the x-api-key header or ?key=",
      );
    }
    caller = key.name;
    keySha256 = key.sha256;
    const refusal = await deps.proxy.admitCaller(stage, caller);
    if (refusal !== null) {
      return refuse(
        deps,
        stage,
        "requests_per_minute",
        429,
        ErrorCode.limitExceeded,
        refusal.message,
      );
    }
  }
  const connectedAt = event.requestContext.connectedAt ?? deps.clock();
  const record: ConnectionRecord = {
    id: connectionId,
    caller,
    ...(keySha256 === undefined ? {} : { keySha256 }),
    connectedAt,
    expiresAt: connectedAt + WEBSOCKET_MAX_CONNECTION_MS + CONNECTION_RECORD_MARGIN_MS,
  };
  const max = network.settings.subscriptions.max_connections_per_key;
  let outcome: Awaited<ReturnType<SubscriptionStore["connect"]>>;
  try {
    outcome = await deps.store.connect(stage, record, max);
  } catch (error) {
    deps.telemetry.log("error", "connection not registered", {
      network: stage,
      error: error instanceof Error ? error.message : String(error),
    });
    return refuse(
      deps,
      stage,
      "unavailable",
      503,
      ErrorCode.internal,
      "connections cannot be registered right now: try again",
    );
  }
  if (outcome === "over_key") {
    return refuse(
      deps,
      stage,
      "over_key",
      429,
      ErrorCode.limitExceeded,
      `API key "${caller}" holds its most connections on ${stage} (subscriptions.max_connections_per_key ${max}): close one first`,
    );
  }
  deps.remember(stage, connectionId, {
    name: caller,
    ...(keySha256 === undefined ? {} : { keySha256 }),
  });
  return { statusCode: 200 };
}

export async function disconnect(
  event: WebSocketEvent,
  deps: ConnectionDeps,
): Promise<WebSocketResult> {
  const { stage, connectionId } = event.requestContext;
  deps.remember(stage, connectionId, null);
  try {
    await deps.store.disconnect(stage, connectionId);
  } catch (error) {
    // Left for its expiry (and the follower's sweep): nothing waits on a goodbye.
    deps.telemetry.log("warn", "connection not removed", {
      network: stage,
      error: error instanceof Error ? error.message : String(error),
    });
  }
  return { statusCode: 200 };
}

function refuse(
  deps: ConnectionDeps,
  network: string,
  reason: RefusalReason,
  status: number,
  code: number,
  message: string,
): WebSocketResult {
  deps.telemetry.count("socket_connections_refused", { network, reason });
  return {
    statusCode: status,
    headers: { "content-type": "application/json" },
    body: errorResponse("null", code, message),
  };
}
