import type { IncomingMessage } from "node:http";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { randomHex } from "./apigw-ids.ts";
import type { RouteMatch } from "./apigw-routing.ts";

/**
 * The payload format 2.0 event an HTTP API hands a Lambda function for a request, with what
 * the real service does to it: the path decoded, cookies moved out of the headers, repeated
 * headers and query keys joined, forwarding headers added, the body base64-encoded unless its
 * content type is text.
 */

export const ACCOUNT_ID = "123456789012";
const API_ID = "local";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
/** Only these content types reach the function as text; every other body arrives base64. */
const TEXT_CONTENT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
]);

/**
 * HTTP APIs hand the function a *decoded* path (rawPath and http.path alike), observed in live
 * captures (hotsock/voker `vokerhttp/testdata/ingress-paths.json`): the path is decoded, cut at
 * a decoded "?", then decoded again (`%252F` arrives as "/"), and a path whose second decoding
 * fails (`%25zz`) is rejected before the function runs. Undefined means "reject".
 */
export function decodeHttpApiPath(rawTarget: string): string | undefined {
  // Without a "%" or a "?" both decodings and the cut leave the path as it is.
  if (!rawTarget.includes("%") && !rawTarget.includes("?")) return rawTarget;
  try {
    const decodedOnce = decodeURIComponent(rawTarget);
    const question = decodedOnce.indexOf("?");
    return decodeURIComponent(question === -1 ? decodedOnce : decodedOnce.slice(0, question));
  } catch {
    return undefined;
  }
}

/**
 * HTTP APIs pass a body as text only for `text/*`, `application/json`, `application/xml` and
 * `application/javascript` (parameters such as charset ignored); any other type, or none
 * (curl's `-d` sends application/x-www-form-urlencoded), arrives base64-encoded. Observed
 * against live HTTP APIs (ministackorg/ministack#766); the UTF-8 validity of the bytes plays
 * no part.
 */
function isTextContentType(contentType: string | undefined): boolean {
  if (contentType === "application/json") return true;
  const type = (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
  return type.startsWith("text/") || TEXT_CONTENT_TYPES.has(type);
}

export interface EventParts {
  readonly path: string;
  readonly target: string;
  readonly queryStart: number;
  readonly body: Buffer;
  readonly requestId: string;
  readonly port: number;
  readonly matched: RouteMatch;
}

export function buildEvent(req: IncomingMessage, parts: EventParts): APIGatewayProxyEventV2 {
  const { path, target, queryStart, body, requestId, port, matched } = parts;
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
  const now = Date.now();
  headers["x-amzn-trace-id"] ??= traceId(now);

  const { domainName, domainPrefix } = domainOf(headers.host ?? "localhost");
  const event: APIGatewayProxyEventV2 = {
    version: "2.0",
    routeKey: matched.routeKey,
    rawPath: path,
    rawQueryString,
    headers,
    requestContext: {
      accountId: ACCOUNT_ID,
      apiId: API_ID,
      domainName,
      domainPrefix,
      http: {
        method: req.method ?? "GET",
        path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId,
      routeKey: matched.routeKey,
      stage: "$default",
      time: clfTime(now),
      timeEpoch: now,
    },
    isBase64Encoded: false,
  };
  if (cookies !== undefined) event.cookies = cookies;
  if (rawQueryString !== "") event.queryStringParameters = parseQuery(rawQueryString);
  if (matched.pathParameters !== undefined) event.pathParameters = matched.pathParameters;
  if (body.length > 0) {
    if (isTextContentType(headers["content-type"])) {
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

interface Domain {
  readonly host: string;
  readonly domainName: string;
  readonly domainPrefix: string;
}

/** Callers send the same Host header request after request: the last one's parts are kept. */
let lastDomain: Domain = { host: "", domainName: "", domainPrefix: "" };

/** requestContext.domainName is the Host header without its port; domainPrefix its first label. */
function domainOf(host: string): Domain {
  if (host !== lastDomain.host) {
    const domainName = host.replace(/:\d+$/, "");
    lastDomain = { host, domainName, domainPrefix: domainName.split(".")[0] ?? domainName };
  }
  return lastDomain;
}

function clientIp(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? "127.0.0.1";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/** An X-Ray trace header as API Gateway adds it: `Root=1-<epoch seconds hex>-<24 hex digits>`. */
function traceId(epochMs: number): string {
  return `Root=1-${Math.floor(epochMs / 1000).toString(16)}-${randomHex(24)}`;
}

/** requestContext.time changes once a second: it is formatted once a second, not per request. */
let clfSecond = Number.NaN;
let clfText = "";

/** "12/Mar/2020:19:03:58 +0000", the format of requestContext.time. */
function clfTime(epochMs: number): string {
  const second = Math.floor(epochMs / 1000);
  if (second !== clfSecond) {
    const date = new Date(second * 1000);
    const pad = (value: number): string => String(value).padStart(2, "0");
    clfText = `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
    clfSecond = second;
  }
  return clfText;
}
