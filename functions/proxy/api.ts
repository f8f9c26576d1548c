import { createHash, timingSafeEqual } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { GatewayModel } from "../core/config/network-model.ts";
import { corsResponseHeaders, DEFAULT_CORS_ORIGINS, preflightHeaders } from "../core/http/cors.ts";
import {
  answerTooLargeBody,
  fitsSerialized,
  LAMBDA_RESPONSE_LIMIT_BYTES,
  serializedBytes,
} from "../core/http/payload-limit.ts";
import { cacheControlFor, getModeBody, matchRoute } from "../core/http/routes.ts";
import { ErrorCode, errorResponse, parseRequest } from "../core/jsonrpc/jsonrpc.ts";
import type { Gateway, RpcOptions } from "../core/request/gateway.ts";
import { ANY_NETWORK, type GuardCounts } from "../core/status/guards.ts";
import type { NetworkStatus } from "../core/status/status.ts";
import { STATUS_PAGE_HEADERS } from "./status-page.ts";

/**
/**
 * API Gateway HTTP API (payload 2.0) events in, results out: the whole HTTP surface of
 * docs/behaviour.md §2 and the API-key check of §8. The same object serves Lambda and the
 * local server.
 */
export interface ApiDeps {
  readonly gateway: Gateway;
  readonly model: () => GatewayModel;
  readonly status: (network: string) => Promise<NetworkStatus>;
  /** The status page of these networks (HTML), for a browser. */
  readonly statusPage: (networks: readonly string[]) => Promise<string>;
  /** Counts a request of a key with a `requests_per_minute`; false when its minute is used up. */
  readonly admitKey?: (key: {
    readonly name: string;
    readonly requestsPerMinute: number;
  }) => Promise<boolean>;
  /** Where a refused key is counted (`requests_per_minute`). */
  readonly guards?: GuardCounts;
}

type Result = APIGatewayProxyStructuredResultV2;

const JSON_TYPE = { "content-type": "application/json" };

/** Limits that never refuse: only the ids of a request are wanted here. */
const READ_IDS_ONLY = {
  maxBodyBytes: Number.POSITIVE_INFINITY,
  maxBatch: Number.POSITIVE_INFINITY,
};

function json(status: number, body: string, extra: Record<string, string> = {}): Result {
  return { statusCode: status, headers: { ...JSON_TYPE, ...extra }, body };
}

function rpcError(status: number, code: number, message: string): Result {
  return json(status, errorResponse("null", code, message));
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** The configured key whose hash the caller's key has (every hash compared, in constant time). */
export function matchingKey<T extends { readonly sha256: string }>(
  key: string | undefined,
  keys: readonly T[],
): T | null {
  if (key === undefined || key.length === 0 || key.length > 256) return null;
  const digest = sha256(key);
  let matched: T | null = null;
  for (const entry of keys) {
    if (timingSafeEqual(digest, Buffer.from(entry.sha256, "hex"))) matched = entry;
  }
  return matched;
}

function decodeBody(event: APIGatewayProxyEventV2): string {
  if (event.body === undefined) return "";
  return event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
}

/** The result with the CORS headers every answer carries, whatever produced it. */
function withCors(
  result: Result,
  event: APIGatewayProxyEventV2,
  origins: readonly string[],
): Result {
  return {
    ...result,
    headers: { ...result.headers, ...corsResponseHeaders(origins, event.headers?.origin) },
  };
}

/**
 * The answer when something failed inside the gateway: a JSON-RPC error with the caller's id
 * where the body can be read, never the error's text (it may hold a provider URL).
 */
export function internalErrorResult(
  event: APIGatewayProxyEventV2,
  origins: readonly string[] = DEFAULT_CORS_ORIGINS,
): Result {
  let rawId: string | null = "null";
  try {
    const parsed = parseRequest(decodeBody(event), READ_IDS_ONLY);
    if (parsed.kind === "single") rawId = parsed.call.rawId;
  } catch {
    // An unreadable body leaves the id null.
  }
  const body = errorResponse(rawId, ErrorCode.internal, "internal gateway error");
  // 503, not 500: what fails inside is mostly passing (a dependency, a container), and the
  // next try may land on another container; clients retry a 503 (subsquid's not a 500).
  return withCors(json(503, body), event, origins);
}

/**
 * Lambda refuses a result over its payload limit (API Gateway then answers a bare 500), so an
 * answer that would not fit is replaced by the gateway's own error asking for less.
 */
function withinLambdaLimit(result: Result, requestBody: string): Result {
  if (fitsSerialized(result, LAMBDA_RESPONSE_LIMIT_BYTES)) return result;
  const bytes = serializedBytes(result);
  const body = answerTooLargeBody(parseRequest(requestBody, READ_IDS_ONLY), bytes);
  // The answer is not what was asked for, so no cache may keep it.
  const headers = { ...result.headers, "cache-control": "no-store" };
  return { ...result, headers, body, isBase64Encoded: false };
}

export async function handleEvent(
  event: APIGatewayProxyEventV2,
  deps: ApiDeps,
  timing: RpcOptions = {},
): Promise<Result> {
  const model = deps.model();
  return withCors(await route(event, deps, model, timing), event, model.corsOrigins);
}

async function route(
  event: APIGatewayProxyEventV2,
  deps: ApiDeps,
  model: GatewayModel,
  timing: RpcOptions,
): Promise<Result> {
  const route = matchRoute(event.requestContext?.http?.method ?? "GET", event.rawPath ?? "/");
  switch (route.kind) {
    case "preflight":
      // API Gateway answers preflights before they reach the function; this serves callers
      // that reach the function some other way.
      return {
        statusCode: 204,
        headers: preflightHeaders(model.corsOrigins, event.headers?.origin),
      };
    case "health":
      return json(200, '{"status":"ok"}');
    case "not_found":
      return rpcError(
        404,
        ErrorCode.invalidRequest,
        "no such route: use POST /{network}, GET /{network}/get/{method}/{params}, GET /{network}/status, GET /status or GET /health",
      );
    case "method_not_allowed":
      return {
        ...rpcError(405, ErrorCode.invalidRequest, `method not allowed here; use ${route.allow}`),
        headers: { ...JSON_TYPE, allow: route.allow },
      };
    case "bad_path":
      return rpcError(400, ErrorCode.parse, route.message);
  }
  let caller: string | undefined;
  if (model.apiKeys.length > 0) {
    // An empty header must not hide a key given in the query.
    const key = matchingKey(
      event.headers?.["x-api-key"] || event.queryStringParameters?.key,
      model.apiKeys,
    );
    if (key === null) {
      return rpcError(
        401,
        ErrorCode.unauthorized,
        "unauthorized: send a valid API key in the x-api-key header or ?key=",
      );
    }
    caller = key.name;
    const limit = key.requestsPerMinute;
    if (
      limit !== null &&
      (await deps.admitKey?.({ name: key.name, requestsPerMinute: limit })) === false
    ) {
      // Only a configured network names the metric: a path is the caller's to choose.
      const network = route.network !== null && model.networks.has(route.network);
      deps.guards?.refused(
        network ? (route.network as string) : ANY_NETWORK,
        "requests_per_minute",
      );
      return rpcError(
        429,
        ErrorCode.limitExceeded,
        `API key "${key.name}" is over its requests_per_minute (${key.requestsPerMinute}): slow down`,
      );
    }
  }
  switch (route.kind) {
    case "status": {
      const names = route.network === null ? [...model.networks.keys()] : [route.network];
      if (route.network !== null && !model.networks.has(route.network)) {
        return rpcError(
          404,
          ErrorCode.invalidRequest,
          `unknown network "${route.network.slice(0, 64)}"`,
        );
      }
      if ((event.headers?.accept ?? "").includes("text/html")) {
        return {
          statusCode: 200,
          headers: { ...STATUS_PAGE_HEADERS },
          body: await deps.statusPage(names),
        };
      }
      const statuses = await Promise.all(names.map((name) => deps.status(name)));
      const body = route.network === null ? { networks: statuses } : statuses[0];
      return json(200, JSON.stringify(body), { "cache-control": "no-store" });
    }
    case "get": {
      const built = getModeBody(route.method, route.params);
      if ("error" in built) return rpcError(400, ErrorCode.invalidRequest, built.error);
      const answer = await deps.gateway.handleRpc(route.network, built.body, { ...timing, caller });
      const result = json(answer.status, answer.body, {
        ...answer.headers,
        "cache-control": cacheControlFor(answer.cacheClass ?? "never", answer.status, {
          blockTimeSeconds: model.networks.get(route.network)?.settings.block_time_seconds ?? 1,
          keyed: model.apiKeys.length > 0,
        }),
      });
      return withinLambdaLimit(result, built.body);
    }
    case "rpc": {
      const body = decodeBody(event);
      const answer = await deps.gateway.handleRpc(route.network, body, { ...timing, caller });
      return withinLambdaLimit(json(answer.status, answer.body, answer.headers), body);
    }
  }
}
