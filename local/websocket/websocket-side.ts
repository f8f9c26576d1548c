import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import {
  SOCKET_FUNCTION_TIMEOUT_SECONDS,
  WEBSOCKET_FRAME_BYTES,
  WEBSOCKET_IDLE_MS,
  WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS,
  WEBSOCKET_MAX_CONNECTION_MS,
  WEBSOCKET_MESSAGE_BYTES,
} from "../../functions/core/subscriptions/websocket-quotas.ts";
import type { WebSocketEvent } from "../../functions/socket/socket-event.ts";
import { InvocationDeadlines } from "../apigw-deadlines.ts";
import { ContainerPool, type Containers } from "../container-pool.ts";
import {
  functionIdentity,
  type Invocation,
  invoke,
  type LambdaHandler,
  type Outcome,
  type Timeout,
} from "../lambda-invoke.ts";
import {
  type ConnectionContext,
  connectEvent,
  connectionIdOf,
  disconnectEvent,
  messageEvent,
} from "./websocket-events.ts";
import { FrameSizeWatch } from "./websocket-frames.ts";
import { isManagementPath, type OpenConnection, serveManagement } from "./websocket-management.ts";

/**
 * The WebSocket API beside the emulator's HTTP API, on the same port (docs/behaviour.md
 * "Subscriptions over WebSocket"): `ws://host:port/<stage>` in front of the socket function,
 * with API Gateway's behaviour as a client and the function can observe it: `$connect` decides
 * the upgrade (its status is the handshake's), each text message is one `$default` invocation
 * (concurrent, as API Gateway's are) whose body is the reply, and `$disconnect` follows every
 * close. The quotas are the real ones (websocket-quotas.ts): 32 KB client frames and 128 KB
 * messages (1009 beyond), binary frames refused (1003), 10 minutes idle and 2 hours in all
 * (1001); replies over 32 KB go out in 32 KB frames. Tests shorten the two timeouts.
 */

export type WebSocketHandler = LambdaHandler<WebSocketEvent>;

export interface WebSocketSideOptions {
  /** The socket function: one runtime, or warm containers. */
  readonly handler?: WebSocketHandler;
  readonly containers?: Containers<WebSocketHandler>;
  /** The stages (networks) the API has; a socket to another path is refused (403). */
  readonly stages?: readonly string[];
  /** No message either way for this long closes a connection (10 minutes). */
  readonly idleTimeoutMs?: number;
  /** A connection's longest life (2 hours). */
  readonly maxConnectionMs?: number;
  readonly functionTimeoutMs?: number;
  readonly integrationTimeoutMs?: number;
  readonly functionName?: string;
}

export interface WebSocketSide {
  isManagement(path: string): boolean;
  serveManagement(req: IncomingMessage, res: ServerResponse, path: string, body: Buffer): void;
  /** Connections open now. */
  readonly open: number;
  /** Closes every connection (1001) and waits for their `$disconnect`s. */
  close(): Promise<void>;
}

/** What AWS answers a message whose integration failed or timed out. */
const INTERNAL_ERROR = "Internal server error";
const TIMED_OUT = "Endpoint request timed out";

export function startWebSocketSide(server: Server, options: WebSocketSideOptions): WebSocketSide {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: WEBSOCKET_MESSAGE_BYTES,
    // API Gateway negotiates no compression: a frame's size is its message's bytes.
    perMessageDeflate: false,
  });
  const pool = new ContainerPool<WebSocketHandler>(
    options.containers
      ? { containers: options.containers }
      : { handler: options.handler as WebSocketHandler },
  );
  const functionTimeoutMs = options.functionTimeoutMs ?? SOCKET_FUNCTION_TIMEOUT_SECONDS * 1000;
  const integrationTimeoutMs =
    options.integrationTimeoutMs ?? WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS * 1000;
  const invocation: Invocation = {
    identity: functionIdentity(options.functionName ?? "gateway-socket"),
    functionTimeoutMs,
    deadlines:
      functionTimeoutMs <= integrationTimeoutMs
        ? new InvocationDeadlines<Timeout>(functionTimeoutMs, "function_timeout")
        : new InvocationDeadlines<Timeout>(integrationTimeoutMs, "integration_timeout"),
  };
  const idleMs = options.idleTimeoutMs ?? WEBSOCKET_IDLE_MS;
  const maxMs = options.maxConnectionMs ?? WEBSOCKET_MAX_CONNECTION_MS;
  const stages = options.stages === undefined ? null : new Set(options.stages);
  const connections = new Map<string, OpenConnection>();
  /** Connections whose `$connect` runs: pushes to them are 410, as API Gateway's. */
  const pending = new Set<string>();
  const goodbyes = new Set<Promise<unknown>>();

  async function run(event: WebSocketEvent): Promise<Outcome> {
    const container = pool.pick();
    container.inFlight++;
    const outcome = await invoke(container.handler, event, invocation);
    container.inFlight--;
    if (outcome.kind !== "result" && outcome.kind !== "error") pool.reset(container);
    if (outcome.kind === "error")
      console.error("[apigw-emulator] socket handler failed:", outcome.error);
    return outcome;
  }

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgrade(req, socket, head).catch((error: unknown) => {
      console.error("[apigw-emulator] upgrade failed:", error);
      refuseUpgrade(socket, 500, JSON.stringify({ message: INTERNAL_ERROR }));
    });
  });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = new URL(req.url ?? "/", "http://local").pathname.replace(/\/$/, "");
    const stage = decodeURIComponent(path.slice(1));
    if (stage === "" || stage.includes("/") || (stages !== null && !stages.has(stage))) {
      return refuseUpgrade(socket, 403, JSON.stringify({ message: "Forbidden" }));
    }
    const context: ConnectionContext = {
      connectionId: connectionIdOf(),
      stage,
      connectedAt: Date.now(),
      domainName: req.headers.host ?? "127.0.0.1",
      sourceIp: req.socket.remoteAddress ?? "127.0.0.1",
      userAgent: req.headers["user-agent"] ?? "",
    };
    pending.add(context.connectionId);
    const outcome = await run(
      connectEvent(req, context, (server.address() as { port: number }).port),
    );
    pending.delete(context.connectionId);
    const result =
      outcome.kind === "result"
        ? (outcome.value as { statusCode?: number; body?: string } | null)
        : null;
    const status = result?.statusCode ?? (outcome.kind === "result" ? 200 : 500);
    if (status < 200 || status > 299) {
      return refuseUpgrade(
        socket,
        status,
        result?.body ?? JSON.stringify({ message: INTERNAL_ERROR }),
      );
    }
    if (socket.destroyed) {
      // The client left while `$connect` ran: API Gateway still says goodbye.
      goodbye(context, 1006, "Going away");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, socket, context));
  }

  function accept(ws: WebSocket, socket: Duplex, context: ConnectionContext): void {
    const connection: OpenConnection = {
      context,
      lastActiveAt: Date.now(),
      send: (data) => {
        touch();
        sendInFrames(ws, data);
      },
      close: (code, reason) => ws.close(code, reason),
    };
    connections.set(context.connectionId, connection);
    let idle: NodeJS.Timeout | undefined;
    const touch = () => {
      connection.lastActiveAt = Date.now();
      clearTimeout(idle);
      idle = setTimeout(() => ws.close(1001, "Going away"), idleMs);
    };
    touch();
    const lifetime = setTimeout(() => ws.close(1001, "Going away"), maxMs);
    const frames = new FrameSizeWatch(WEBSOCKET_FRAME_BYTES);
    // Before `ws` reads the bytes, so an oversized frame closes before it is a message.
    socket.prependListener("data", (chunk: Buffer) => {
      if (frames.over(chunk) && ws.readyState === ws.OPEN) ws.close(1009, "Message too big");
    });
    ws.on("message", (data, isBinary) => {
      if (ws.readyState !== ws.OPEN) return;
      if (isBinary) {
        ws.close(1003, "Binary frames are not supported");
        return;
      }
      touch();
      void reply(connection, ws, data.toString());
    });
    ws.on("error", () => undefined);
    ws.on("close", (code, reason) => {
      clearTimeout(idle);
      clearTimeout(lifetime);
      connections.delete(context.connectionId);
      goodbye(context, code, reason.toString() || closeReason(code));
    });
  }

  async function reply(connection: OpenConnection, ws: WebSocket, body: string): Promise<void> {
    const event = messageEvent(connection.context, body);
    const outcome = await run(event);
    if (ws.readyState !== ws.OPEN) return;
    if (outcome.kind !== "result") {
      const message = outcome.kind === "error" ? INTERNAL_ERROR : TIMED_OUT;
      connection.send(
        JSON.stringify({
          message,
          connectionId: connection.context.connectionId,
          requestId: event.requestContext.requestId,
        }),
      );
      return;
    }
    const text = (outcome.value as { body?: unknown } | null)?.body;
    if (typeof text !== "string" || text === "") return;
    if (Buffer.byteLength(text) > WEBSOCKET_MESSAGE_BYTES) {
      console.error("[apigw-emulator] a reply over 128 KB was not sent");
      return;
    }
    connection.send(text);
  }

  function goodbye(context: ConnectionContext, code: number, reason: string): void {
    const running = run(disconnectEvent(context, code, reason));
    goodbyes.add(running);
    void running.finally(() => goodbyes.delete(running));
  }

  return {
    isManagement: isManagementPath,
    serveManagement: (req, res, path, body) =>
      serveManagement(req, res, path, body, { connections, pending }),
    get open() {
      return connections.size;
    },
    async close() {
      for (const connection of connections.values()) connection.close(1001, "Going away");
      for (const client of wss.clients) client.terminate();
      wss.close();
      // Each close event starts a goodbye; wait for them, then for any that started late.
      await new Promise((resolve) => setImmediate(resolve));
      while (goodbyes.size > 0) await Promise.allSettled([...goodbyes]);
      invocation.deadlines.close();
    },
  };
}

/** A message as API Gateway sends it: in frames of at most 32 KB. */
function sendInFrames(ws: WebSocket, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= WEBSOCKET_FRAME_BYTES) {
    ws.send(bytes, { binary: false });
    return;
  }
  for (let start = 0; start < bytes.length; start += WEBSOCKET_FRAME_BYTES) {
    const end = Math.min(bytes.length, start + WEBSOCKET_FRAME_BYTES);
    ws.send(bytes.subarray(start, end), { binary: false, fin: end === bytes.length });
  }
}

function refuseUpgrade(socket: Duplex, status: number, body: string): void {
  if (socket.destroyed) return;
  socket.end(
    `HTTP/1.1 ${status} ${statusText(status)}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function statusText(status: number): string {
  return (
    (
      {
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not Found",
        429: "Too Many Requests",
        503: "Service Unavailable",
      } as Record<number, string>
    )[status] ?? (status >= 500 ? "Internal Server Error" : "Bad Request")
  );
}

/** How `$disconnect` words a close without a reason of its own. */
function closeReason(code: number): string {
  if (code === 1000) return "Connection Closed Normally";
  if (code === 1001) return "Going away";
  if (code === 1005) return "Client-side close frame status not set";
  if (code === 1006) return "Client-side close without a close frame";
  return `Close code ${code}`;
}
