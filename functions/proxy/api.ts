import { createHash, timingSafeEqual } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { Gateway, RpcOptions } from "../core/gateway.ts";
import { ErrorCode, errorResponse } from "../core/jsonrpc.ts";
import type { GatewayModel } from "../core/network-model.ts";
import { cacheControlFor, getModeBody, matchRoute } from "../core/routes.ts";
import type { NetworkStatus } from "../core/status.ts";
import { statusPage } from "./status-page.ts";

/**
 * API Gateway HTTP API (payload 2.0) events in, results out: the whole HTTP surface of
 * docs/behaviour.md §2 and the API-key check of §8. The same object serves Lambda and the local server.
 */
export interface ApiDeps {
  readonly gateway: Gateway;
  readonly model: () => GatewayModel;
  readonly status: (network: string) => Promise<NetworkStatus>;
  readonly clock: () => number;
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": "content-type, x-api-key",
  "access-control-allow-methods": "GET, POST, OPTIONS",
};

function json(
  status: number,
  body: string,
  extra: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { "content-type": "application/json", ...CORS, ...extra },
    body,
  };
}

function rpcError(
  status: number,
  code: number,
  message: string,
): APIGatewayProxyStructuredResultV2 {
  return json(status, errorResponse("null", code, message));
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Constant-time check of a caller's key against the configured SHA-256 hashes. */
export function apiKeyAccepted(key: string | undefined, hashes: readonly string[]): boolean {
  if (hashes.length === 0) return true;
  if (key === undefined || key.length === 0 || key.length > 256) return false;
  const digest = sha256(key);
  let accepted = false;
  for (const hash of hashes) {
    if (timingSafeEqual(digest, Buffer.from(hash, "hex"))) accepted = true;
  }
  return accepted;
}

function decodeBody(event: APIGatewayProxyEventV2): string {
  if (event.body === undefined) return "";
  return event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
}

export async function handleEvent(
  event: APIGatewayProxyEventV2,
  deps: ApiDeps,
  timing: RpcOptions = {},
): Promise<APIGatewayProxyStructuredResultV2> {
  const route = matchRoute(event.requestContext?.http?.method ?? "GET", event.rawPath ?? "/");
  switch (route.kind) {
    case "preflight":
      return { statusCode: 204, headers: { ...CORS, "access-control-max-age": "86400" } };
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
        headers: { "content-type": "application/json", allow: route.allow, ...CORS },
      };
    case "bad_path":
      return rpcError(400, ErrorCode.parse, route.message);
  }
  const model = deps.model();
  // An empty header must not hide a key given in the query.
  const key = event.headers?.["x-api-key"] || event.queryStringParameters?.key;
  if (!apiKeyAccepted(key, model.apiKeySha256)) {
    return rpcError(
      401,
      ErrorCode.unauthorized,
      "unauthorized: send a valid API key in the x-api-key header or ?key=",
    );
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
      const statuses = await Promise.all(names.map((name) => deps.status(name)));
      const wantsHtml = (event.headers?.accept ?? "").includes("text/html");
      if (route.network === null && wantsHtml) {
        return {
          statusCode: 200,
          headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
          body: statusPage(statuses, new Date(deps.clock()).toISOString()),
        };
      }
      const body = route.network === null ? { networks: statuses } : statuses[0];
      return json(200, JSON.stringify(body), { "cache-control": "no-store" });
    }
    case "get": {
      const built = getModeBody(route.method, route.params);
      if ("error" in built) return rpcError(400, ErrorCode.invalidRequest, built.error);
      const answer = await deps.gateway.handleRpc(route.network, built.body, timing);
      return json(answer.status, answer.body, {
        ...answer.headers,
        "cache-control": cacheControlFor(route.method, answer.body, answer.status),
      });
    }
    case "rpc": {
      const answer = await deps.gateway.handleRpc(route.network, decodeBody(event), timing);
      return json(answer.status, answer.body, answer.headers);
    }
  }
}
