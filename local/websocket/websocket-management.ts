import type { IncomingMessage, ServerResponse } from "node:http";
import { WEBSOCKET_MESSAGE_BYTES } from "../../functions/core/subscriptions/websocket-quotas.ts";
import type { ConnectionContext } from "./websocket-events.ts";

/**
 * API Gateway's management API for WebSocket connections (`@connections`, 2018-11-29) on the
 * emulator's HTTP side, as `@aws-sdk/client-apigatewaymanagementapi` calls it with its
 * endpoint at `http://host:port/<stage>`: `POST /<stage>/@connections/{id}` sends the body as
 * one message, `GET` describes the connection, `DELETE` closes it (1000, no reason, as
 * API Gateway). A connection closed, never opened or still in its `$connect` is 410
 * GoneException. Requests must be SigV4-signed for `execute-api`, as the service requires; the
 * signature's secret is not checked (there are no real credentials locally).
 */

export interface OpenConnection {
  readonly context: ConnectionContext;
  lastActiveAt: number;
  /** Sends one message (a push counts as activity, as API Gateway counts it). */
  send(data: string): void;
  close(code: number, reason: string): void;
}

export interface ManagementState {
  readonly connections: ReadonlyMap<string, OpenConnection>;
  readonly pending: ReadonlySet<string>;
}

const MANAGEMENT_PATH = /^\/([^/]+)\/@connections\/([^/]+)$/;
const SIGNED =
  /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\/aws4_request, ?SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$/;

export function isManagementPath(path: string): boolean {
  return MANAGEMENT_PATH.test(path);
}

export function serveManagement(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  body: Buffer,
  state: ManagementState,
): void {
  const answer = answerOf(req, path, body, state);
  const text =
    answer.type === undefined ? answer.body : JSON.stringify({ message: answer.body || null });
  res.writeHead(answer.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    // An error as the SDK reads it: its type here, a `message` in the body.
    ...(answer.type === undefined ? {} : { "x-amzn-errortype": answer.type }),
  });
  res.end(text);
  answer.after?.();
}

interface Answer {
  readonly status: number;
  /** The body, or an error's message. */
  readonly body: string;
  /** The error's type (`GoneException`, …); absent for a success. */
  readonly type?: string;
  /** What happens once the answer is written. */
  readonly after?: () => void;
}

function answerOf(
  req: IncomingMessage,
  path: string,
  body: Buffer,
  state: ManagementState,
): Answer {
  const [, stage = "", id = ""] = MANAGEMENT_PATH.exec(path) ?? [];
  const signed = SIGNED.exec(req.headers.authorization ?? "");
  if (signed === null || req.headers["x-amz-date"] === undefined) {
    return { status: 403, type: "ForbiddenException", body: "Missing Authentication Token" };
  }
  if (signed[1] !== "execute-api") {
    return {
      status: 403,
      type: "ForbiddenException",
      body: "Credential should be scoped to correct service: 'execute-api'.",
    };
  }
  const connection = state.connections.get(id);
  if (connection === undefined || connection.context.stage !== stage || state.pending.has(id)) {
    return { status: 410, type: "GoneException", body: "" };
  }
  switch (req.method) {
    case "POST":
      if (body.length > WEBSOCKET_MESSAGE_BYTES) {
        return { status: 413, type: "PayloadTooLargeException", body: "Message too long" };
      }
      connection.send(body.toString("utf8"));
      return { status: 200, body: "" };
    case "GET":
      return {
        status: 200,
        body: JSON.stringify({
          connectedAt: new Date(connection.context.connectedAt).toISOString(),
          identity: {
            sourceIp: connection.context.sourceIp,
            userAgent: connection.context.userAgent,
          },
          lastActiveAt: new Date(connection.lastActiveAt).toISOString(),
        }),
      };
    case "DELETE":
      return { status: 204, body: "", after: () => connection.close(1000, "") };
    default:
      return { status: 404, type: "NotFoundException", body: "Not Found" };
  }
}
