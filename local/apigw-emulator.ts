import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";

export type ApiGatewayHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

export interface StartApiGatewayOptions {
  handler: ApiGatewayHandler;
  /** 0 or undefined picks a free port. */
  port?: number;
  host?: string;
  /** API Gateway's integration timeout; 30 s (its maximum) unless a test needs it shorter. */
  integrationTimeoutMs?: number;
  functionName?: string;
}

export interface ApiGatewayEmulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** HTTP API payload quota. */
export const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
const DEFAULT_INTEGRATION_TIMEOUT_MS = 30_000;
const ACCOUNT_ID = "123456789012";
const API_ID = "local";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * An API Gateway HTTP API (payload format 2.0, `$default` route, `$default` stage) in front of
 * a Lambda handler. Reproduces what the handler can observe of the real service, including
 * its path decoding, payload cap, integration timeout and error bodies.
 */
export async function startApiGateway(
  options: StartApiGatewayOptions,
): Promise<ApiGatewayEmulator> {
  const host = options.host ?? "127.0.0.1";
  const timeoutMs = options.integrationTimeoutMs ?? DEFAULT_INTEGRATION_TIMEOUT_MS;
  const functionName = options.functionName ?? "gateway-proxy";
  let port = 0;

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    serve(req, res).catch((error: unknown) => {
      console.error("[apigw-emulator] request failed:", error);
      if (res.headersSent) res.destroy();
      else sendMessage(res, 500, "Internal Server Error", "");
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // randomUUID draws from a cached pool; randomBytes per request cost tens of µs under load.
    const requestId = randomUUID().slice(0, 15);
    const body = await readBody(req);
    if (body === undefined) return sendMessage(res, 413, "Request Entity Too Large", requestId);
    const event = buildEvent(req, body, requestId, port);
    if (event === undefined) return sendMessage(res, 400, "Bad Request", requestId);
    const outcome = await invoke(
      options.handler,
      event,
      lambdaContext(functionName, timeoutMs),
      timeoutMs,
    );
    if (outcome === "timeout") return sendMessage(res, 503, "Service Unavailable", requestId);
    if (outcome instanceof Error) {
      console.error("[apigw-emulator] handler failed:", outcome);
      return sendMessage(res, 500, "Internal Server Error", requestId);
    }
    writeResult(res, outcome, requestId);
  }

  server.listen(options.port ?? 0, host);
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
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
    req.on("end", () => resolve(tooLarge ? undefined : Buffer.concat(chunks, size)));
    req.on("error", reject);
  });
}

/**
 * HTTP APIs hand the function a *decoded* path (rawPath and http.path alike), observed in live
 * captures (hotsock/voker `vokerhttp/testdata/ingress-paths.json`): the path is decoded, cut at
 * a decoded "?", then decoded again (`%252F` arrives as "/"), and a path whose second decoding
 * fails (`%25zz`) is rejected before the function runs. Undefined means "reject".
 */
function decodeHttpApiPath(rawTarget: string): string | undefined {
  try {
    const decodedOnce = decodeURIComponent(rawTarget);
    const question = decodedOnce.indexOf("?");
    return decodeURIComponent(question === -1 ? decodedOnce : decodedOnce.slice(0, question));
  } catch {
    return undefined;
  }
}

function buildEvent(
  req: IncomingMessage,
  body: Buffer,
  requestId: string,
  port: number,
): APIGatewayProxyEventV2 | undefined {
  const target = req.url ?? "/";
  const queryStart = target.indexOf("?");
  const path = decodeHttpApiPath(queryStart === -1 ? target : target.slice(0, queryStart));
  if (path === undefined) return undefined;
  const rawQueryString = queryStart === -1 ? "" : target.slice(queryStart + 1);

  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  const raw = req.rawHeaders;
  for (let index = 0; index < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    const value = raw[index + 1] as string;
    // Format 2.0 moves cookies out of the headers into `cookies`, one entry per cookie.
    if (name === "cookie") {
      cookies ??= [];
      for (const cookie of value.split(";")) {
        const trimmed = cookie.trim();
        if (trimmed !== "") cookies.push(trimmed);
      }
      continue;
    }
    const previous = headers[name];
    headers[name] = previous === undefined ? value : `${previous},${value}`;
  }
  const sourceIp = clientIp(req);
  const forwardedFor = headers["x-forwarded-for"];
  headers["x-forwarded-for"] =
    forwardedFor === undefined ? sourceIp : `${forwardedFor}, ${sourceIp}`;
  headers["x-forwarded-port"] = String(port);
  headers["x-forwarded-proto"] = "http";
  headers["x-amzn-trace-id"] ??= traceId();

  const now = new Date();
  const domainName = (headers.host ?? "localhost").replace(/:\d+$/, "");
  const event: APIGatewayProxyEventV2 = {
    version: "2.0",
    routeKey: "$default",
    rawPath: path,
    rawQueryString,
    headers,
    requestContext: {
      accountId: ACCOUNT_ID,
      apiId: API_ID,
      domainName,
      domainPrefix: domainName.split(".")[0] ?? domainName,
      http: {
        method: req.method ?? "GET",
        path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId,
      routeKey: "$default",
      stage: "$default",
      time: clfTime(now),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
  };
  if (cookies !== undefined) event.cookies = cookies;
  if (rawQueryString !== "") event.queryStringParameters = parseQuery(rawQueryString);
  if (body.length > 0) {
    if (isUtf8(body)) {
      event.body = body.toString("utf8");
    } else {
      event.body = body.toString("base64");
      event.isBase64Encoded = true;
    }
  }
  return event;
}

/** Query values arrive decoded ("+" is a space), repeated keys joined with ",". */
function parseQuery(rawQueryString: string): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const pair of rawQueryString.split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    const key = decodeQueryComponent(equals === -1 ? pair : pair.slice(0, equals));
    const value = equals === -1 ? "" : decodeQueryComponent(pair.slice(equals + 1));
    const previous = parameters[key];
    parameters[key] = previous === undefined ? value : `${previous},${value}`;
  }
  return parameters;
}

function decodeQueryComponent(component: string): string {
  const spaced = component.replaceAll("+", " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

function clientIp(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? "127.0.0.1";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

function traceId(): string {
  const epochSeconds = Math.floor(Date.now() / 1000).toString(16);
  return `Root=1-${epochSeconds}-${randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/** "12/Mar/2020:19:03:58 +0000", the format of requestContext.time. */
function clfTime(date: Date): string {
  const pad = (value: number): string => String(value).padStart(2, "0");
  return `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
}

function lambdaContext(functionName: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  const callbackStyleUnsupported = (): never => {
    throw new Error("done/fail/succeed are not supported: return a promise from the handler");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:us-east-1:${ACCOUNT_ID}:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: callbackStyleUnsupported,
    fail: callbackStyleUnsupported,
    succeed: callbackStyleUnsupported,
  };
}

/** The handler's result, the error it threw, or "timeout". A timed-out handler keeps running, as in Lambda. */
async function invoke(
  handler: ApiGatewayHandler,
  event: APIGatewayProxyEventV2,
  context: Context,
  timeoutMs: number,
): Promise<APIGatewayProxyStructuredResultV2 | Error | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(resolve, timeoutMs, "timeout");
  });
  const handled = Promise.resolve()
    .then(() => handler(event, context))
    .then(
      (result) =>
        typeof result === "object" && result !== null
          ? result
          : new Error(`handler returned ${String(result)}, not a result object`),
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    );
  try {
    return await Promise.race([handled, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

function writeResult(
  res: ServerResponse,
  result: APIGatewayProxyStructuredResultV2,
  requestId: string,
): void {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) {
    // The length is the one of the body actually sent (base64 decoding changes it).
    if (name.toLowerCase() !== "content-length") headers[name] = String(value);
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
  headers["content-length"] = Buffer.byteLength(body);
  headers["apigw-requestid"] = requestId;
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

/** API Gateway's own error answers: `{"message": "..."}`. */
function sendMessage(
  res: ServerResponse,
  status: number,
  message: string,
  requestId: string,
): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "apigw-requestid": requestId,
  });
  res.end(body);
}
