import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUpstream, type UpstreamClient } from "../../functions/adapters/upstream.ts";
import type { UpstreamRequest } from "../../functions/core/ports.ts";

/** The upstream adapter against a real local HTTP server doing what providers do. */

type Behaviour = (req: IncomingMessage, res: ServerResponse, body: string) => void;
const behaviours = new Map<string, Behaviour>();
let server: Server;
let base: string;
let upstream: UpstreamClient;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const behaviour = behaviours.get(req.url ?? "");
    if (!behaviour) {
      res.writeHead(404).end();
      return;
    }
    behaviour(req, res, Buffer.concat(chunks).toString("utf8"));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  upstream = createUpstream();
});

afterAll(async () => {
  await upstream.close();
  server.closeAllConnections();
  server.close();
});

const request = (path: string, overrides: Partial<UpstreamRequest> = {}): UpstreamRequest => ({
  url: `${base}${path}`,
  body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  timeoutMs: 2000,
  maxResponseBytes: 1000,
  ...overrides,
});

describe("upstream adapter", () => {
  it("posts the body as JSON and returns status and text", async () => {
    behaviours.set("/echo", (req, res, body) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ method: req.method, type: req.headers["content-type"], body }));
    });
    const result = await upstream.send(request("/echo"));
    expect(result.ok && result.status).toBe(200);
    expect(result.ok && JSON.parse(result.body)).toEqual({
      method: "POST",
      type: "application/json",
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    });
  });

  it("passes any status through", async () => {
    behaviours.set("/429", (_req, res) =>
      res.writeHead(429, { "retry-after": "5" }).end("slow down"),
    );
    const result = await upstream.send(request("/429"));
    expect(result).toMatchObject({ ok: true, status: 429, body: "slow down" });
  });

  it.each([
    [
      "declared length",
      (_req: IncomingMessage, res: ServerResponse) =>
        res.writeHead(200, { "content-length": 5000 }).end("x".repeat(5000)),
    ],
    [
      "chunked",
      (_req: IncomingMessage, res: ServerResponse) => {
        res.writeHead(200);
        for (let i = 0; i < 10; i++) res.write("y".repeat(200));
        res.end();
      },
    ],
  ])("caps the answer size (%s)", async (_name, behaviour) => {
    behaviours.set("/big", behaviour);
    expect(await upstream.send(request("/big"))).toMatchObject({
      ok: false,
      tooLarge: true,
      limit: 1000,
    });
  });

  it("times out a provider that never answers", async () => {
    behaviours.set("/hang", () => undefined);
    const result = await upstream.send(request("/hang", { timeoutMs: 150 }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "timeout" } });
    expect(result.elapsedMs).toBeGreaterThanOrEqual(140);
  });

  it("reports a refused connection", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const result = await upstream.send(request("/", { url: `http://127.0.0.1:${port}/` }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
    expect(!result.ok && "failure" in result && result.failure.message).toContain("ECONNREFUSED");
  });

  it("a body cut short is a connection failure, not an answer", async () => {
    behaviours.set("/cut", (_req, res) => {
      res.writeHead(200, { "content-length": 100 });
      res.write('{"jsonrpc":"2.0",');
      setImmediate(() => res.socket?.destroy());
    });
    expect(await upstream.send(request("/cut"))).toMatchObject({
      ok: false,
      failure: { kind: "connection" },
    });
  });

  it("TLS spoken to a plain HTTP port is a tls failure", async () => {
    const result = await upstream.send(request("/echo", { url: base.replace("http:", "https:") }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "tls" } });
  });

  it("a keep-alive socket the provider dropped does not fail the next request", async () => {
    let served = 0;
    behaviours.set("/ok", (_req, res) => {
      served++;
      res
        .writeHead(200, { "content-type": "application/json" })
        .end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
    });
    expect((await upstream.send(request("/ok"))).ok).toBe(true);
    // The provider closes idle connections without telling: reset every socket it holds.
    for (const socket of sockets) socket.resetAndDestroy();
    const result = await upstream.send(request("/ok"));
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(served).toBe(2);
  });
});
