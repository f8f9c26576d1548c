import { once } from "node:events";
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import {
  corsResponseHeaders,
  DEFAULT_CORS_ORIGINS,
  isPreflight,
  preflightHeaders,
} from "../functions/core/http/cors.ts";
import {
  API_ROUTES,
  INTEGRATION_TIMEOUT_SECONDS,
  PROXY_FUNCTION_TIMEOUT_SECONDS,
  routeKeyOf,
} from "../functions/core/http/http-api.ts";
import {
  fitsSerialized,
  LAMBDA_REQUEST_LIMIT_BYTES,
  LAMBDA_RESPONSE_LIMIT_BYTES,
} from "../functions/core/http/payload-limit.ts";
import { InvocationDeadlines } from "./apigw-deadlines.ts";
import { buildEvent, decodeHttpApiPath } from "./apigw-event.ts";
import { apiRequestId } from "./apigw-ids.ts";
import { routerFor } from "./apigw-routing.ts";
import {
  type Container,
  ContainerPool,
  type Containers as PoolContainers,
} from "./container-pool.ts";
import {
  functionIdentity,
  type Invocation,
  invoke,
  type LambdaHandler,
  type Timeout,
} from "./lambda-invoke.ts";
import { startWebSocketSide, type WebSocketSideOptions } from "./websocket/websocket-side.ts";

/**
 * What a Lambda handler may return: payload format 2.0 reads an object with a `statusCode` as
 * a structured result and anything else as a JSON body.
 */
export type ApiGatewayHandler = LambdaHandler<APIGatewayProxyEventV2>;

/** N Lambda runtimes ("containers"), each made by `create` with state of its own. */
export type Containers = PoolContainers<ApiGatewayHandler>;

interface CommonOptions {
  /** 0 or undefined picks a free port. */
  port?: number;
  host?: string;
  /** API Gateway's integration timeout, after which it answers 503 (30 s unless a test needs less). */
  integrationTimeoutMs?: number;
  /** The function's timeout, after which Lambda fails it and API Gateway answers 500 (29 s). */
  functionTimeoutMs?: number;
  functionName?: string;
  /** The API's route keys (`GET /{proxy+}`, `$default`); the deployed stack's by default. */
  routes?: readonly string[];
  /** The CORS policy's allowed origins (the config's `cors_origins`); `["*"]` by default. */
  corsOrigins?: readonly string[];
  /**
   * The WebSocket API on the same port (`ws://host:port/<stage>`, and its management API at
   * `/<stage>/@connections/{id}`), in front of the socket function; none without it.
   */
  webSocket?: WebSocketSideOptions;
}

export type StartApiGatewayOptions = CommonOptions &
  (
    | { /** One runtime for every request. */ handler: ApiGatewayHandler; containers?: never }
    | {
        /**
         * A runtime per container. A request goes to the next idle container in turn (to the
         * next one in turn when all are busy), and a container whose invocation timed out is
         * replaced by a fresh one, as Lambda resets the runtime of a timed-out function.
         */
        containers: Containers;
        handler?: never;
      }
  );

export interface ApiGatewayEmulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** HTTP API payload quota. */
export const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
/** HTTP API quota on the request line and headers together. */
export const MAX_REQUEST_LINE_AND_HEADERS_BYTES = 10_240;
/** Connection-level headers a result may not set: API Gateway frames its own answer. */
const HOP_BY_HOP = new Set([
  "connection",
  "content-length",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * An API Gateway HTTP API (payload format 2.0, `$default` stage) in front of a Lambda function.
 * Reproduces what a caller and the function can observe of the real services: the route
 * table, CORS preflights, path decoding, body encoding, the size quotas of API Gateway and
 * Lambda, both timeouts and API Gateway's own error answers.
 */
export async function startApiGateway(
  options: StartApiGatewayOptions,
): Promise<ApiGatewayEmulator> {
  const host = options.host ?? "127.0.0.1";
  const functionTimeoutMs = options.functionTimeoutMs ?? PROXY_FUNCTION_TIMEOUT_SECONDS * 1000;
  const integrationTimeoutMs = options.integrationTimeoutMs ?? INTEGRATION_TIMEOUT_SECONDS * 1000;
  // Only the earlier of the two timeouts can end the wait (the function's on a tie).
  const invocation: Invocation = {
    identity: functionIdentity(options.functionName ?? "gateway-proxy"),
    functionTimeoutMs,
    deadlines:
      functionTimeoutMs <= integrationTimeoutMs
        ? new InvocationDeadlines<Timeout>(functionTimeoutMs, "function_timeout")
        : new InvocationDeadlines<Timeout>(integrationTimeoutMs, "integration_timeout"),
  };
  /** Lambda's own timeouts of functions still running after API Gateway answered 503. */
  const lateFunctionTimers = new Set<NodeJS.Timeout>();
  const route = routerFor(options.routes ?? API_ROUTES.map(routeKeyOf));
  const corsOrigins = options.corsOrigins ?? DEFAULT_CORS_ORIGINS;
  const pool = new ContainerPool<ApiGatewayHandler>(
    options.containers === undefined
      ? { handler: options.handler }
      : { containers: options.containers },
  );
  let port = 0;

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    serve(req, res).catch((error: unknown) => {
      // A caller that hung up before its body ended is nobody to answer or to log about.
      if (req.destroyed && !req.complete) return;
      console.error("[apigw-emulator] request failed:", error);
      if (res.headersSent) res.destroy();
      else sendMessage(res, 500, "Internal Server Error", "");
    });
  });
  const sockets = options.webSocket ? startWebSocketSide(server, options.webSocket) : null;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = apiRequestId();
    if (requestLineAndHeadersBytes(req) > MAX_REQUEST_LINE_AND_HEADERS_BYTES) {
      req.resume();
      return sendMessage(res, 431, "Request Header Fields Too Large", requestId);
    }
    const body = await readBody(req);
    if (body === undefined) return sendMessage(res, 413, "Request Entity Too Large", requestId);
    const target = req.url ?? "/";
    const queryStart = target.indexOf("?");
    const path = decodeHttpApiPath(queryStart === -1 ? target : target.slice(0, queryStart));
    if (path === undefined) return sendMessage(res, 400, "Bad Request", requestId);
    if (sockets?.isManagement(path)) return sockets.serveManagement(req, res, path, body);
    const method = req.method ?? "GET";
    const origin = headerValue(req, "origin");
    const matched = route(method, path);
    if (matched === null) {
      if (isPreflight(method, corsRequestHeaders(req))) {
        return send(res, 204, preflightHeaders(corsOrigins, origin), "", requestId);
      }
      return sendMessage(res, 404, "Not Found", requestId);
    }
    const event = buildEvent(req, { path, target, queryStart, body, requestId, port, matched });
    if (!fitsSerialized(event, LAMBDA_REQUEST_LIMIT_BYTES)) {
      // Lambda refuses the invocation; REST APIs were seen answering this, HTTP APIs do not
      // document it. Either way the function never runs.
      return sendMessage(res, 413, "Request Too Long", requestId);
    }
    const container = pool.pick();
    container.inFlight++;
    const outcome = await invoke(container.handler, event, invocation);
    switch (outcome.kind) {
      case "integration_timeout":
        keepBusyUntilTheFunctionEnds(container, outcome.running);
        return sendMessage(res, 503, "Service Unavailable", requestId);
    }
    container.inFlight--;
    switch (outcome.kind) {
      case "function_timeout":
        pool.reset(container);
        return sendMessage(res, 500, "Internal Server Error", requestId);
      case "error":
        console.error("[apigw-emulator] handler failed:", outcome.error);
        return sendMessage(res, 500, "Internal Server Error", requestId);
    }
    const result = asStructuredResult(outcome.value);
    if (result === null || !fitsSerialized(outcome.value ?? null, LAMBDA_RESPONSE_LIMIT_BYTES)) {
      console.error("[apigw-emulator] the function's result is malformed or over 6 MB");
      return sendMessage(res, 500, "Internal Server Error", requestId);
    }
    writeResult(res, result, corsOrigins, origin, requestId);
  }

  /**
   * After API Gateway's 503 Lambda keeps running the function, and its container stays busy,
   * until the function settles or reaches its own timeout, where Lambda fails it and resets
   * the runtime.
   */
  function keepBusyUntilTheFunctionEnds(
    container: Container<ApiGatewayHandler>,
    running: Promise<unknown>,
  ): void {
    const handler = container.handler;
    let ended = false;
    const end = (timedOut: boolean) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      lateFunctionTimers.delete(timer);
      container.inFlight--;
      if (timedOut) pool.reset(container, handler);
    };
    const timer = setTimeout(() => end(true), functionTimeoutMs - integrationTimeoutMs);
    lateFunctionTimers.add(timer);
    running.then(
      () => end(false),
      () => end(false),
    );
  }

  server.listen(options.port ?? 0, host);
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      await sockets?.close();
      await new Promise<void>((resolve) => {
        invocation.deadlines.close();
        for (const timer of lateFunctionTimers) clearTimeout(timer);
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

function corsRequestHeaders(req: IncomingMessage): Record<string, string | undefined> {
  return {
    origin: headerValue(req, "origin"),
    "access-control-request-method": headerValue(req, "access-control-request-method"),
  };
}

function requestLineAndHeadersBytes(req: IncomingMessage): number {
  let total = Buffer.byteLength(`${req.method} ${req.url} HTTP/${req.httpVersion}`);
  for (const part of req.rawHeaders) total += Buffer.byteLength(part);
  return total;
}

/** The body, or undefined when it exceeds the payload cap (the rest is drained, not kept). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = declared > MAX_PAYLOAD_BYTES;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PAYLOAD_BYTES) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on("end", () => {
      if (tooLarge) resolve(undefined);
      // Most bodies arrive in one chunk, which is the caller's own to keep: no copy.
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    req.on("error", reject);
  });
}

/**
 * The result as payload format 2.0 reads it: an object with a `statusCode` is structured
 * (null when the status is not a valid HTTP status: API Gateway answers 500); anything else is
 * a 200 JSON answer whose body is the value (a string as is, others as JSON).
 */
function asStructuredResult(value: unknown): APIGatewayProxyStructuredResultV2 | null {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    if ("statusCode" in value) {
      const { statusCode } = value as { statusCode: unknown };
      const valid = Number.isInteger(statusCode) && Number(statusCode) >= 100;
      return valid && Number(statusCode) <= 599
        ? (value as APIGatewayProxyStructuredResultV2)
        : null;
    }
  }
  return {
    statusCode: 200,
    headers: { "content-type": "application/json" },
    body: typeof value === "string" ? value : JSON.stringify(value ?? null),
  };
}

/**
 * Writes the function's answer as API Gateway would: connection-level headers dropped, the
 * function's own CORS headers replaced by the API's CORS policy (applied when the request has
 * an `Origin`), cookies as `set-cookie` headers, a base64 body decoded.
 */
function writeResult(
  res: ServerResponse,
  result: APIGatewayProxyStructuredResultV2,
  corsOrigins: readonly string[],
  origin: string | undefined,
  requestId: string,
): void {
  const headers: OutgoingHttpHeaders = {};
  const resultHeaders = result.headers;
  if (resultHeaders !== undefined && resultHeaders !== null) {
    for (const name of Object.keys(resultHeaders)) {
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || lower.startsWith("access-control-")) continue;
      headers[name] = String(resultHeaders[name]);
    }
  }
  if (origin) {
    const cors = corsResponseHeaders(corsOrigins, origin);
    for (const name of Object.keys(cors)) {
      if (name.startsWith("access-control-")) headers[name] = cors[name];
    }
  }
  if (result.cookies !== undefined && result.cookies.length > 0) {
    headers["set-cookie"] = result.cookies;
  }
  const body =
    result.body === undefined
      ? ""
      : result.isBase64Encoded
        ? Buffer.from(result.body, "base64")
        : result.body;
  send(res, result.statusCode ?? 200, headers, body, requestId);
}

/** Sends an answer; `headers` is the caller's own object, completed here with the framing. */
function send(
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | Buffer,
  requestId: string,
): void {
  headers["content-length"] = Buffer.byteLength(body);
  headers["apigw-requestid"] = requestId;
  res.writeHead(status, headers);
  res.end(body);
}

/** API Gateway's own error answers: `{"message": "..."}`. */
function sendMessage(
  res: ServerResponse,
  status: number,
  message: string,
  requestId: string,
): void {
  send(res, status, { "content-type": "application/json" }, JSON.stringify({ message }), requestId);
}
