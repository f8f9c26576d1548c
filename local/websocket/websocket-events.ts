import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { WebSocketEvent } from "../../functions/socket/socket-event.ts";
import { apiRequestId, randomHex } from "../apigw-ids.ts";

/**
 * The events API Gateway's WebSocket Lambda proxy integration hands the socket function
 * (its developer guide, "Setting up a WebSocket API integration request"): `$connect` with the
 * upgrade request's headers as the client wrote their names and its query string, `$default`
 * with one text message, `$disconnect` with the close code and reason; each with the
 * connection's requestContext.
 */

export const LOCAL_API_ID = "local";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A connection id as API Gateway writes them (`L0SM9cOFvHcCIhw=`): 11 random bytes. */
export function connectionIdOf(): string {
  return `${randomBytes(11).toString("base64url")}=`;
}

/** What every event of one connection shares. */
export interface ConnectionContext {
  readonly connectionId: string;
  readonly stage: string;
  readonly connectedAt: number;
  readonly domainName: string;
  readonly sourceIp: string;
  readonly userAgent: string;
}

/** `dd/Mon/yyyy:HH:mm:ss +0000`, as API Gateway writes requestTime. */
function requestTime(at: number): string {
  const date = new Date(at);
  const pad = (value: number) => String(value).padStart(2, "0");
  return `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
}

function requestContext(
  connection: ConnectionContext,
  routeKey: string,
  eventType: WebSocketEvent["requestContext"]["eventType"],
) {
  const now = Date.now();
  return {
    routeKey,
    eventType,
    extendedRequestId: apiRequestId(),
    requestTime: requestTime(now),
    messageDirection: "IN" as const,
    stage: connection.stage,
    connectedAt: connection.connectedAt,
    requestTimeEpoch: now,
    identity: { sourceIp: connection.sourceIp, userAgent: connection.userAgent },
    requestId: apiRequestId(),
    domainName: connection.domainName,
    connectionId: connection.connectionId,
    apiId: LOCAL_API_ID,
  };
}

export function connectEvent(
  req: IncomingMessage,
  connection: ConnectionContext,
  port: number,
): WebSocketEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    const name = req.rawHeaders[index] as string;
    const value = req.rawHeaders[index + 1] as string;
    const values = multiValueHeaders[name] ?? [];
    values.push(value);
    multiValueHeaders[name] = values;
    headers[name] = values.join(",");
  }
  // What API Gateway's front adds to every request.
  const forwarded = {
    "X-Amzn-Trace-Id": `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomHex(24)}`,
    "X-Forwarded-For": connection.sourceIp,
    "X-Forwarded-Port": String(port),
    "X-Forwarded-Proto": "http",
  };
  for (const [name, value] of Object.entries(forwarded)) {
    headers[name] = value;
    multiValueHeaders[name] = [value];
  }
  const query = new URL(req.url ?? "/", "http://local").searchParams;
  const queryStringParameters: Record<string, string> = {};
  const multiValueQueryStringParameters: Record<string, string[]> = {};
  for (const [name, value] of query) {
    multiValueQueryStringParameters[name] = [
      ...(multiValueQueryStringParameters[name] ?? []),
      value,
    ];
    queryStringParameters[name] = value;
  }
  const any = Object.keys(queryStringParameters).length > 0;
  return {
    headers,
    multiValueHeaders,
    queryStringParameters: any ? queryStringParameters : null,
    multiValueQueryStringParameters: any ? multiValueQueryStringParameters : null,
    requestContext: requestContext(connection, "$connect", "CONNECT"),
    isBase64Encoded: false,
  } as WebSocketEvent;
}

export function messageEvent(connection: ConnectionContext, body: string): WebSocketEvent {
  return {
    requestContext: {
      ...requestContext(connection, "$default", "MESSAGE"),
      messageId: apiRequestId(),
    },
    body,
    isBase64Encoded: false,
  };
}

export function disconnectEvent(
  connection: ConnectionContext,
  code: number,
  reason: string,
): WebSocketEvent {
  return {
    // What API Gateway sends with a goodbye: the host, and these few always empty.
    headers: {
      Host: connection.domainName,
      "x-api-key": "",
      "X-Forwarded-For": "",
      "x-restapi": "",
    },
    requestContext: {
      ...requestContext(connection, "$disconnect", "DISCONNECT"),
      disconnectStatusCode: code,
      disconnectReason: reason,
    },
    isBase64Encoded: false,
  };
}
