import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  brotliCompressSync,
  deflateRawSync,
  deflateSync,
  gzipSync,
  zstdCompressSync,
} from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createUpstream,
  type UpstreamClient,
} from "../../../../functions/adapters/upstream/upstream.ts";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";

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
  it("refuses an answer whose Content-Length is over the cap without waiting for its body", async () => {
    behaviours.set("/huge-declared", (_req, res) => {
      // Declares 50 MB, sends a little and then nothing: only the header can end this early.
      res.writeHead(200, { "content-length": 50_000_000 });
      res.write("z".repeat(100));
    });
    const result = await upstream.send(request("/huge-declared", { timeoutMs: 5_000 }));
    expect(result).toMatchObject({ ok: false, tooLarge: true, limit: 1000 });
    expect(result.elapsedMs).toBeLessThan(1_000);
  });

  it("stops reading a streamed answer at the cap", async () => {
    let written = 0;
    behaviours.set("/endless", (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => {
        if (res.destroyed) {
          clearInterval(timer);
          return;
        }
        res.write("w".repeat(300));
        written += 300;
      }, 1);
      res.on("close", () => clearInterval(timer));
    });
    const result = await upstream.send(request("/endless", { timeoutMs: 5_000 }));
    expect(result).toMatchObject({ ok: false, tooLarge: true, limit: 1000 });
    expect(result.elapsedMs).toBeLessThan(1_000);
    expect(written).toBeLessThan(100_000);
  });

  it("times out an answer whose body trickles in past the attempt's timeout", async () => {
    behaviours.set("/trickle", (_req, res) => {
      res.writeHead(200, { "content-length": 50 });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write("t")), 40);
      res.on("close", () => clearInterval(timer));
    });
    const result = await upstream.send(request("/trickle", { timeoutMs: 200 }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "timeout" } });
    expect(result.elapsedMs).toBeGreaterThanOrEqual(190);
    expect(result.elapsedMs).toBeLessThan(1_000);
  });

  it("a timed-out attempt closes its connection instead of returning it to the pool", async () => {
    let closed = false;
    behaviours.set("/hang-then-watch", (req) => {
      req.socket.on("close", () => {
        closed = true;
      });
    });
    await upstream.send(request("/hang-then-watch", { timeoutMs: 100 }));
    await expect.poll(() => closed, { timeout: 2_000 }).toBe(true);
  });

  it("an abort signal ends the attempt at once and closes its connection", async () => {
    let closed = false;
    behaviours.set("/hang-abort", (req) => {
      req.socket.on("close", () => {
        closed = true;
      });
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("the hedge won")), 50);
    const result = await upstream.send(
      request("/hang-abort", { timeoutMs: 5_000, signal: controller.signal }),
    );
    expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
    expect(!result.ok && "failure" in result && result.failure.message).toMatch(/^aborted/);
    expect(result.elapsedMs).toBeLessThan(1_000);
    await expect.poll(() => closed, { timeout: 2_000 }).toBe(true);
  });

  it("an already aborted signal sends nothing", async () => {
    let served = 0;
    behaviours.set("/never", (_req, res) => {
      served++;
      res.end("{}");
    });
    const result = await upstream.send(request("/never", { signal: AbortSignal.abort() }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(served).toBe(0);
  });

  it("sends credentials in the URL as Basic auth, and keeps the path and query", async () => {
    behaviours.set("/auth?key=k1", (req, res) => {
      res.end(JSON.stringify({ auth: req.headers.authorization ?? null }));
    });
    const url = `${base.replace("http://", "http://us%40er:p%3Ass@")}/auth?key=k1`;
    const result = await upstream.send(request("", { url }));
    expect(result.ok && JSON.parse(result.body)).toEqual({
      auth: `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`,
    });
  });

  it.each([
    ["not a URL", "::nonsense"],
    ["another protocol", "ftp://127.0.0.1/"],
  ])("a provider URL that is %s is a connection failure, not a throw", async (_name, url) => {
    expect(await upstream.send(request("", { url }))).toMatchObject({
      ok: false,
      failure: { kind: "connection" },
    });
  });
});

describe("answers with a Content-Encoding", () => {
  const answer = '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}';
  const encodedBy = (encoding: string, body: Buffer): Behaviour => {
    return (_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json", "content-encoding": encoding })
        .end(body);
  };

  it("asks for no content coding", async () => {
    behaviours.set("/accept-encoding", (req, res) => {
      res.end(JSON.stringify({ acceptEncoding: req.headers["accept-encoding"] ?? null }));
    });
    const result = await upstream.send(request("/accept-encoding"));
    expect(result.ok && JSON.parse(result.body)).toEqual({ acceptEncoding: "identity" });
  });

  it.each([
    ["gzip", gzipSync(answer)],
    ["x-gzip", gzipSync(answer)],
    ["deflate", deflateSync(answer)],
    ["deflate", deflateRawSync(answer)],
    ["br", brotliCompressSync(answer)],
    ["gzip, br", brotliCompressSync(gzipSync(answer))],
    ["GZIP ", gzipSync(answer)],
    ["zstd", zstdCompressSync(answer)],
  ])(
    "regression: a %s answer the provider encoded unasked was handed on as its compressed bytes (the provider then blacklisted as not JSON-RPC); now it is decoded",
    async (encoding, body) => {
      behaviours.set("/encoded", encodedBy(encoding, body));
      expect(await upstream.send(request("/encoded"))).toMatchObject({
        ok: true,
        status: 200,
        body: answer,
      });
    },
  );

  it("an encoded answer whose decoded size is over the cap is too large (a small bomb is no way around the limit)", async () => {
    const bomb = gzipSync(Buffer.alloc(5_000_000, 0x20));
    expect(bomb.length).toBeLessThan(10_000);
    behaviours.set("/bomb", encodedBy("gzip", bomb));
    expect(await upstream.send(request("/bomb", { maxResponseBytes: 10_000 }))).toMatchObject({
      ok: false,
      tooLarge: true,
      limit: 10_000,
    });
  });

  it("a refusal whose body cannot be decoded is still that refusal: its status and Retry-After count, not the body", async () => {
    behaviours.set("/refused-undecodable", (_req, res) =>
      res
        .writeHead(429, { "content-encoding": "zstd", "retry-after": "7" })
        .end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd])),
    );
    expect(await upstream.send(request("/refused-undecodable"))).toMatchObject({
      ok: true,
      status: 429,
      body: "",
      retryAfter: "7",
    });
  });

  it.each([
    ["corrupt gzip", "gzip", Buffer.from("not gzip at all"), /gzip encoding is corrupt/],
    [
      "a coding the gateway does not decode",
      "compress",
      Buffer.from([0x1f, 0x9d, 0x90, 0x7b]),
      /Content-Encoding compress/,
    ],
  ])(
    "an answer in %s is a connection failure naming it, not an answer",
    async (_name, encoding, body, message) => {
      behaviours.set("/undecodable", encodedBy(encoding, body));
      const result = await upstream.send(request("/undecodable"));
      expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
      expect(!result.ok && "failure" in result && result.failure.message).toMatch(message);
    },
  );
});

describe("a Content-Encoding that names no coding", () => {
  it.each(["utf-8", "UTF8", "json"])(
    "regression: an answer marked %s (a charset in the wrong header) over plain JSON failed as an undecodable coding; now it is taken as it came",
    async (encoding) => {
      const answer = '{"jsonrpc":"2.0","id":1,"result":"0x1"}';
      behaviours.set("/misnamed", (_req, res) =>
        res.writeHead(200, { "content-encoding": encoding }).end(`\n ${answer}`),
      );
      expect(await upstream.send(request("/misnamed"))).toMatchObject({
        ok: true,
        body: `\n ${answer}`,
      });
    },
  );

  it("regression: an answer gzip-encoded over a misnamed coding (Content-Encoding utf-8, gzip) failed although its gzip held plain JSON; now it is taken once gunzipped", async () => {
    const answer = '{"jsonrpc":"2.0","id":1,"result":"0x1"}';
    behaviours.set("/misnamed-then-gzip", (_req, res) =>
      res.writeHead(200, { "content-encoding": "utf-8, gzip" }).end(gzipSync(answer)),
    );
    expect(await upstream.send(request("/misnamed-then-gzip"))).toMatchObject({
      ok: true,
      body: answer,
    });
  });

  it("a misnamed coding over gzip bytes (Content-Encoding gzip, utf-8) is still no answer", async () => {
    behaviours.set("/gzip-then-misnamed", (_req, res) =>
      res
        .writeHead(200, { "content-encoding": "gzip, utf-8" })
        .end(gzipSync('{"jsonrpc":"2.0","id":1,"result":"0x1"}')),
    );
    expect(await upstream.send(request("/gzip-then-misnamed"))).toMatchObject({
      ok: false,
      failure: { kind: "connection" },
    });
  });
});

describe("a keep-alive socket that dies with a request on it", () => {
  /** Requests seen per server-side socket: the provider resets a socket's second request. */
  const seen = new WeakMap<Socket, number>();
  let received = 0;
  const resetReused: Behaviour = (req, res) => {
    received++;
    const count = (seen.get(req.socket) ?? 0) + 1;
    seen.set(req.socket, count);
    if (count > 1) req.socket.resetAndDestroy();
    else res.writeHead(200).end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
  };
  const resetAlways: Behaviour = (req) => {
    received++;
    req.socket.resetAndDestroy();
  };
  let client: UpstreamClient;

  beforeAll(() => {
    behaviours.set("/reset-reused", resetReused);
    behaviours.set("/reset-always", resetAlways);
  });

  /**
   * undici checks an idle socket for a pending close on the next turn of the event loop
   * before reusing it, and a request sent sooner takes another connection: wait a little so
   * the second request goes out on the first one's socket, as it would between invocations.
   */
  const idle = () => new Promise((resolve) => setTimeout(resolve, 20));
  // Each case starts with an empty pool, so "reused" means reused within the case.
  const fresh = async () => {
    await client?.close();
    client = createUpstream();
    received = 0;
  };
  afterAll(() => client?.close());

  it("is not re-sent when the request is not marked idempotent (it may be a transaction)", async () => {
    await fresh();
    expect((await client.send(request("/reset-reused"))).ok).toBe(true);
    await idle();
    const second = await client.send(request("/reset-reused"));
    expect(second).toMatchObject({ ok: false, failure: { kind: "connection" } });
    expect(received).toBe(2);
  });

  it("is re-sent once on a new connection when the request is idempotent", async () => {
    await fresh();
    expect((await client.send(request("/reset-reused", { idempotent: true }))).ok).toBe(true);
    await idle();
    const second = await client.send(request("/reset-reused", { idempotent: true }));
    expect(second).toMatchObject({ ok: true, status: 200 });
    expect(received).toBe(3);
  });

  it.each([
    [
      "an interim 100 Continue (undici takes it for a bad answer)",
      (res: ServerResponse) => {
        res.writeContinue();
        res.writeHead(200).end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
      },
    ],
    [
      "a Content-Length that is no number",
      (res: ServerResponse) => res.socket?.end("HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n{}"),
    ],
    [
      "half a status line, then a reset",
      (res: ServerResponse) => {
        res.socket?.write("HTTP/1.1 20");
        setTimeout(() => res.socket?.resetAndDestroy(), 10);
      },
    ],
  ])(
    "regression: an idempotent request the provider had begun to answer (%s) on a new connection was re-sent; now it is sent once",
    async (_what, answer) => {
      await fresh();
      behaviours.set("/malformed", (_req, res) => {
        received++;
        answer(res);
      });
      const result = await client.send(request("/malformed", { idempotent: true }));
      expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
      expect(received).toBe(1);
    },
  );

  it("regression: an idempotent request whose reused connection broke after part of its answer came was re-sent; now it is not", async () => {
    await fresh();
    let count = 0;
    behaviours.set("/half-on-reuse", (_req, res) => {
      received++;
      count++;
      if (count === 1) res.writeHead(200).end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
      else {
        res.socket?.write("HTTP/1.1 20");
        setTimeout(() => res.socket?.resetAndDestroy(), 10);
      }
    });
    expect((await client.send(request("/half-on-reuse", { idempotent: true }))).ok).toBe(true);
    await idle();
    const second = await client.send(request("/half-on-reuse", { idempotent: true }));
    expect(second).toMatchObject({ ok: false, failure: { kind: "connection" } });
    expect(received).toBe(2);
  });

  it("an idempotent request reset on a new connection is not re-sent (the provider refuses it)", async () => {
    await fresh();
    const result = await client.send(request("/reset-always", { idempotent: true }));
    expect(result).toMatchObject({ ok: false, failure: { kind: "connection" } });
    expect(received).toBe(1);
  });
});
