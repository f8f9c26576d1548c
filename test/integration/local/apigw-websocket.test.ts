import { once } from "node:events";
import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  GoneException,
  PayloadTooLargeException,
  PostToConnectionCommand,
} from "@aws-sdk/client-apigatewaymanagementapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ApiGatewayConnectionPush } from "../../../functions/adapters/subscriptions/connection-push.ts";
import {
  WEBSOCKET_FRAME_BYTES,
  WEBSOCKET_MESSAGE_BYTES,
} from "../../../functions/core/subscriptions/websocket-quotas.ts";
import type { WebSocketEvent } from "../../../functions/socket/socket-event.ts";
import { type ApiGatewayEmulator, startApiGateway } from "../../../local/apigw-emulator.ts";
import { FrameSizeWatch } from "../../../local/websocket/websocket-frames.ts";

/**
 * The emulator's WebSocket side against what API Gateway WebSocket APIs do, with a real `ws`
 * client and the real management API client: `$connect` deciding the upgrade, one `$default`
 * per message with the reply as the route's response, `$disconnect` after every close, the
 * 32 KB frame and 128 KB message quotas (1009), binary frames refused (1003), the idle and
 * whole-life limits (1001, shortened here), replies framed in 32 KB, and `@connections`.
 */

const CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

let api: ApiGatewayEmulator;
let wsUrl: string;
const events: WebSocketEvent[] = [];
/** What the socket function does with each event (the test swaps it). */
let behaviour: (event: WebSocketEvent) => Promise<unknown> = async () => ({ statusCode: 200 });

beforeAll(async () => {
  api = await startApiGateway({
    handler: async () => ({ statusCode: 404 }),
    webSocket: {
      containers: {
        count: 2,
        create: () => async (event: WebSocketEvent) => {
          events.push(event);
          return behaviour(event);
        },
      },
      stages: ["net"],
      idleTimeoutMs: 400,
      maxConnectionMs: 1500,
    },
  });
  wsUrl = api.url.replace("http://", "ws://");
});
afterAll(() => api.close());

const echo = async (event: WebSocketEvent) =>
  event.requestContext.eventType === "MESSAGE"
    ? { statusCode: 200, body: `echo:${event.body}` }
    : { statusCode: 200 };

function open(path = "/net?key=k1", headers: Record<string, string> = {}): Promise<WebSocket> {
  const socket = new WebSocket(`${wsUrl}${path}`, { headers, perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(socket));
    socket.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body }),
        ),
      );
    });
    socket.once("error", reject);
  });
}

const nextMessage = (socket: WebSocket) =>
  once(socket, "message").then(([data]) => (data as Buffer).toString());
const closed = (socket: WebSocket) =>
  once(socket, "close").then(([code, reason]) => ({
    code: code as number,
    reason: (reason as Buffer).toString(),
  }));
const eventsOf = (type: string, connectionId?: string) =>
  events.filter(
    (event) =>
      event.requestContext.eventType === type &&
      (connectionId === undefined || event.requestContext.connectionId === connectionId),
  );
async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("$connect", () => {
  it("is an event as API Gateway sends it, and its 2xx opens the socket", async () => {
    behaviour = echo;
    const socket = await open("/net?key=k1&key=k2", {
      "X-Api-Key": "secret",
      "User-Agent": "test-agent",
    });
    const [connect] = eventsOf("CONNECT").slice(-1);
    expect(connect?.requestContext).toMatchObject({
      routeKey: "$connect",
      eventType: "CONNECT",
      messageDirection: "IN",
      stage: "net",
      apiId: "local",
      identity: { sourceIp: expect.any(String), userAgent: "test-agent" },
      connectionId: expect.stringMatching(/^[A-Za-z0-9_-]{15}=$/),
      connectedAt: expect.any(Number),
      requestTime: expect.stringMatching(/^\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d \+0000$/),
    });
    // Header names as the client wrote them; a repeated query key's last value.
    expect(connect?.headers).toMatchObject({ "X-Api-Key": "secret", "X-Forwarded-Proto": "http" });
    expect(connect?.queryStringParameters).toEqual({ key: "k2" });
    expect(api.url).toBeDefined();
    socket.close();
    await closed(socket);
  });

  it("a refusal is the handshake's status with the function's body; another path is API Gateway's 403", async () => {
    behaviour = async () => ({ statusCode: 401, body: '{"error":"no key"}' });
    await expect(open()).rejects.toMatchObject({ status: 401, body: '{"error":"no key"}' });
    behaviour = async () => {
      throw new Error("boom");
    };
    await expect(open()).rejects.toMatchObject({
      status: 500,
      body: '{"message":"Internal server error"}',
    });
    behaviour = echo;
    await expect(open("/other")).rejects.toMatchObject({
      status: 403,
      body: '{"message":"Forbidden"}',
    });
    await expect(open("/net/deeper")).rejects.toMatchObject({ status: 403 });
  });
});

describe("messages", () => {
  it("each is one $default event; its body is the reply; a reply without one sends nothing", async () => {
    behaviour = async (event) =>
      event.requestContext.eventType === "MESSAGE" && event.body !== "quiet"
        ? { statusCode: 200, body: `echo:${event.body}` }
        : { statusCode: 200 };
    const socket = await open();
    socket.send("quiet");
    socket.send("hello");
    expect(await nextMessage(socket)).toBe("echo:hello");
    const messages = eventsOf("MESSAGE").slice(-2);
    expect(messages.map((event) => event.body)).toEqual(["quiet", "hello"]);
    expect(messages[1]?.requestContext).toMatchObject({
      routeKey: "$default",
      messageId: expect.any(String),
      stage: "net",
    });
    socket.close();
    await closed(socket);
  });

  it("a function that fails answers API Gateway's own error message", async () => {
    behaviour = async (event) => {
      if (event.requestContext.eventType === "MESSAGE") throw new Error("boom");
      return { statusCode: 200 };
    };
    const socket = await open();
    socket.send("x");
    expect(JSON.parse(await nextMessage(socket))).toMatchObject({
      message: "Internal server error",
      connectionId: expect.any(String),
    });
    socket.close();
    await closed(socket);
  });

  it("a message under 128 KB sent in frames of 32 KB arrives whole; a reply over 32 KB comes in 32 KB frames", async () => {
    behaviour = async (event) =>
      event.requestContext.eventType === "MESSAGE"
        ? { statusCode: 200, body: (event.body ?? "").repeat(2) }
        : { statusCode: 200 };
    const socket = await open();
    const frames = new FrameSizeWatch(WEBSOCKET_FRAME_BYTES);
    let oversized = false;
    (socket as unknown as { _socket: NodeJS.EventEmitter })._socket.on("data", (chunk: Buffer) => {
      if (frames.over(chunk)) oversized = true;
    });
    const part = "a".repeat(WEBSOCKET_FRAME_BYTES);
    socket.send(part, { fin: false });
    socket.send(part, { fin: true });
    const reply = await nextMessage(socket);
    expect(reply.length).toBe(4 * WEBSOCKET_FRAME_BYTES);
    expect(oversized).toBe(false);
    socket.close();
    await closed(socket);
  });

  it.each([
    [
      "a frame over 32 KB, though its message is under 128 KB",
      (socket: WebSocket) => socket.send("b".repeat(WEBSOCKET_FRAME_BYTES + 1)),
      1009,
    ],
    [
      "a message over 128 KB in 32 KB frames",
      (socket: WebSocket) => {
        for (let index = 0; index < 5; index++)
          socket.send("c".repeat(WEBSOCKET_FRAME_BYTES), { fin: index === 4 });
      },
      1009,
    ],
    [
      "a binary frame",
      (socket: WebSocket) => socket.send(Buffer.from([1, 2, 3]), { binary: true }),
      1003,
    ],
  ])("%s closes the connection (%i) and reaches no function", async (_name, sendIt, code) => {
    behaviour = echo;
    const socket = await open();
    const before = eventsOf("MESSAGE").length;
    sendIt(socket);
    expect((await closed(socket)).code).toBe(code);
    expect(eventsOf("MESSAGE").length).toBe(before);
    expect(WEBSOCKET_MESSAGE_BYTES).toBe(4 * WEBSOCKET_FRAME_BYTES);
  });
});

describe("closes", () => {
  it("a client's close is followed by $disconnect with its code and reason", async () => {
    behaviour = echo;
    const socket = await open();
    const id = eventsOf("CONNECT").at(-1)?.requestContext.connectionId as string;
    socket.close(4000, "bye now");
    await closed(socket);
    await until(() => eventsOf("DISCONNECT", id).length === 1);
    expect(eventsOf("DISCONNECT", id)[0]?.requestContext).toMatchObject({
      routeKey: "$disconnect",
      disconnectStatusCode: 4000,
      disconnectReason: "bye now",
    });
  });

  it("idle past the idle timeout closes with 1001; messages keep it open, up to the whole-life limit", async () => {
    behaviour = echo;
    const idle = await open();
    const started = Date.now();
    expect((await closed(idle)).code).toBe(1001);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);

    const busy = await open();
    const opened = Date.now();
    const ping = setInterval(() => busy.readyState === busy.OPEN && busy.send("keep-alive"), 100);
    const end = await closed(busy);
    clearInterval(ping);
    expect(end.code).toBe(1001);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(1400);
  });
});

describe("the management API, through the real client", () => {
  const client = () =>
    new ApiGatewayManagementApiClient({
      endpoint: `${api.url}/net`,
      region: "us-east-1",
      credentials: CREDENTIALS,
    });

  it("PostToConnection reaches the client (and counts as activity); GetConnection describes it; DeleteConnection closes it with 1000", async () => {
    behaviour = echo;
    const socket = await open("/net", { "User-Agent": "ua-1" });
    const id = eventsOf("CONNECT").at(-1)?.requestContext.connectionId as string;
    const management = client();
    const received = nextMessage(socket);
    await management.send(
      new PostToConnectionCommand({
        ConnectionId: id,
        Data: new TextEncoder().encode('{"pushed":1}'),
      }),
    );
    expect(await received).toBe('{"pushed":1}');
    const described = await management.send(new GetConnectionCommand({ ConnectionId: id }));
    expect(described.ConnectedAt).toBeInstanceOf(Date);
    expect(described.Identity?.UserAgent).toBe("ua-1");
    const end = closed(socket);
    await management.send(new DeleteConnectionCommand({ ConnectionId: id }));
    expect((await end).code).toBe(1000);
    await until(() => eventsOf("DISCONNECT", id).length === 1);
    expect(eventsOf("DISCONNECT", id)[0]?.requestContext.disconnectReason).toBe(
      "Connection Closed Normally",
    );
    await expect(
      management.send(new PostToConnectionCommand({ ConnectionId: id, Data: new Uint8Array([1]) })),
    ).rejects.toBeInstanceOf(GoneException);
    management.destroy();
  });

  it("a push over 128 KB is PayloadTooLarge; another stage's or an unknown connection is Gone; a push during $connect is Gone", async () => {
    let release: () => void = () => undefined;
    let pushed: Promise<unknown> = Promise.resolve();
    const management = client();
    behaviour = async (event) => {
      if (event.requestContext.eventType !== "CONNECT") return { statusCode: 200 };
      pushed = management
        .send(
          new PostToConnectionCommand({
            ConnectionId: event.requestContext.connectionId,
            Data: new Uint8Array([1]),
          }),
        )
        .catch((error: unknown) => error);
      await new Promise<void>((resolve) => {
        release = resolve;
        setTimeout(resolve, 300);
      });
      return { statusCode: 200 };
    };
    const socket = await open();
    release();
    expect(await pushed).toBeInstanceOf(GoneException);
    const id = eventsOf("CONNECT").at(-1)?.requestContext.connectionId as string;
    await expect(
      management.send(
        new PostToConnectionCommand({
          ConnectionId: id,
          Data: new Uint8Array(WEBSOCKET_MESSAGE_BYTES + 1),
        }),
      ),
    ).rejects.toBeInstanceOf(PayloadTooLargeException);
    const other = new ApiGatewayManagementApiClient({
      endpoint: `${api.url}/elsewhere`,
      region: "us-east-1",
      credentials: CREDENTIALS,
    });
    await expect(
      other.send(new PostToConnectionCommand({ ConnectionId: id, Data: new Uint8Array([1]) })),
    ).rejects.toBeInstanceOf(GoneException);
    other.destroy();
    management.destroy();
    socket.close();
    await closed(socket);
  });

  it("an unsigned request is refused as API Gateway refuses it", async () => {
    const response = await fetch(`${api.url}/net/@connections/abc`, { method: "POST", body: "x" });
    expect(response.status).toBe(403);
    expect(response.headers.get("x-amzn-errortype")).toBe("ForbiddenException");
    expect(await response.json()).toEqual({ message: "Missing Authentication Token" });
  });

  it("the ConnectionPush adapter: ok, then gone once the client left; close of a gone connection is quiet", async () => {
    behaviour = echo;
    const socket = await open();
    const id = eventsOf("CONNECT").at(-1)?.requestContext.connectionId as string;
    const push = new ApiGatewayConnectionPush({ baseUrl: api.url, credentials: CREDENTIALS });
    const received = nextMessage(socket);
    expect(await push.post("net", id, '{"n":1}')).toBe("ok");
    expect(await received).toBe('{"n":1}');
    socket.close();
    await closed(socket);
    await until(() => eventsOf("DISCONNECT", id).length === 1);
    expect(await push.post("net", id, '{"n":2}')).toBe("gone");
    await push.close("net", id, "done");
    push.destroy();
  });
});
