import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Agent from "undici/lib/dispatcher/agent.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ExchangeRequest,
  exchange,
} from "../../../../functions/adapters/upstream/undici-exchange.ts";

/**
 * The bounded exchange both undici users share (provider calls, the secrets extension's GETs),
 * against a real local HTTP server. The adapters' own tests cover how each reads the outcomes.
 */

type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;
const behaviours = new Map<string, Behaviour>();
let server: Server;
let origin: string;
let closedConnections = 0;
let openedConnections = 0;
const agent = new Agent({ connections: 1, headersTimeout: 0, bodyTimeout: 0 });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      (behaviours.get(req.url ?? "") ?? ((_, r) => r.writeHead(404).end()))(req, res),
    );
  });
  server.on("connection", (socket) => {
    openedConnections++;
    socket.on("close", () => closedConnections++);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await agent.destroy();
  server.closeAllConnections();
  server.close();
});

const get = (path: string): ExchangeRequest => ({ origin, path, method: "GET", headers: {} });

describe("a bounded exchange on undici", () => {
  it("gives the final answer after an interim 1xx one, with its headers and exact bytes", async () => {
    behaviours.set("/hints", (_req, res) => {
      res.writeEarlyHints({ link: "</x>; rel=preload" });
      res.writeHead(200, { "retry-after": "7" }).end(Buffer.from([0x7b, 0xff, 0x7d]));
    });
    const outcome = await exchange(agent, get("/hints"), { timeoutMs: 2000, maxBytes: 100 });
    expect(outcome).toMatchObject({ kind: "answer", status: 200 });
    if (outcome.kind !== "answer") return;
    expect(outcome.headers["retry-after"]).toBe("7");
    expect([...outcome.body]).toEqual([0x7b, 0xff, 0x7d]);
  });

  it("a timeout says whether the request had started: one waiting for a busy connection never had", async () => {
    behaviours.set("/hang", () => undefined);
    const hanging = exchange(agent, get("/hang"), { timeoutMs: 300, maxBytes: 100 });
    // The agent has one connection, held by the hanging request: this one waits for it.
    const queued = exchange(agent, get("/hang"), { timeoutMs: 100, maxBytes: 100 });
    expect(await queued).toEqual({ kind: "timeout", started: false });
    expect(await hanging).toEqual({ kind: "timeout", started: true });
  });

  it("regression: a request that timed out while queued for a connection destroyed the healthy keep-alive connection it was later handed; now it leaves the queue at once", async () => {
    let received = 0;
    behaviours.set("/counted", (_req, res) => {
      received++;
      setTimeout(() => res.end("ok"), 150);
    });
    const ownAgent = new Agent({ connections: 1, headersTimeout: 0, bodyTimeout: 0 });
    try {
      const openedBefore = openedConnections;
      const holding = exchange(ownAgent, get("/counted"), { timeoutMs: 2000, maxBytes: 100 });
      // The one connection is busy: this request waits for it and runs out of time there.
      const queued = exchange(ownAgent, get("/counted"), { timeoutMs: 50, maxBytes: 100 });
      expect(await queued).toEqual({ kind: "timeout", started: false });
      expect(await holding).toMatchObject({ kind: "answer", status: 200 });
      const next = await exchange(ownAgent, get("/counted"), { timeoutMs: 2000, maxBytes: 100 });
      expect(next).toMatchObject({ kind: "answer", status: 200 });
      // The queued request was never sent, and the next one reused the first connection.
      expect(received).toBe(2);
      expect(openedConnections - openedBefore).toBe(1);
    } finally {
      await ownAgent.destroy();
    }
  });

  it("regression: a request aborted while it waited for the connection (a hedge's loser) closed the connection it was later handed; now it leaves the queue, unsent", async () => {
    let received = 0;
    behaviours.set("/counted-fast", (_req, res) => {
      received++;
      res.end("ok");
    });
    const ownAgent = new Agent({ connections: 1, headersTimeout: 0, bodyTimeout: 0 });
    try {
      const openedBefore = openedConnections;
      const controller = new AbortController();
      const first = exchange(ownAgent, get("/counted-fast"), { timeoutMs: 2000, maxBytes: 100 });
      const loser = exchange(ownAgent, get("/counted-fast"), {
        timeoutMs: 2000,
        maxBytes: 100,
        signal: controller.signal,
      });
      controller.abort("hedge won");
      expect(await loser).toEqual({ kind: "aborted", reason: "hedge won" });
      expect(await first).toMatchObject({ kind: "answer" });
      const next = await exchange(ownAgent, get("/counted-fast"), {
        timeoutMs: 2000,
        maxBytes: 100,
      });
      expect(next).toMatchObject({ kind: "answer" });
      expect(received).toBe(2);
      expect(openedConnections - openedBefore).toBe(1);
    } finally {
      await ownAgent.destroy();
    }
  });

  it("an answer declared or streamed over the limit is refused and its connection closed", async () => {
    behaviours.set("/declared", (_req, res) => {
      res.writeHead(200, { "content-length": "5000" });
      res.write("x".repeat(10));
    });
    behaviours.set("/streamed", (_req, res) => {
      res.writeHead(200);
      res.write("x".repeat(60));
      setTimeout(() => res.end("y".repeat(60)), 20);
    });
    const closedBefore = closedConnections;
    expect(await exchange(agent, get("/declared"), { timeoutMs: 2000, maxBytes: 100 })).toEqual({
      kind: "too_large",
    });
    expect(await exchange(agent, get("/streamed"), { timeoutMs: 2000, maxBytes: 100 })).toEqual({
      kind: "too_large",
    });
    await expect.poll(() => closedConnections - closedBefore).toBeGreaterThanOrEqual(2);
  });

  it("an abort ends it with the signal's reason, before or during the exchange", async () => {
    behaviours.set("/slow", (_req, res) => setTimeout(() => res.end("late"), 2000));
    const already = AbortSignal.abort(new Error("caller gone"));
    const before = await exchange(agent, get("/slow"), {
      timeoutMs: 2000,
      maxBytes: 100,
      signal: already,
    });
    expect(before).toMatchObject({ kind: "aborted", reason: { message: "caller gone" } });
    const controller = new AbortController();
    const during = exchange(agent, get("/slow"), {
      timeoutMs: 2000,
      maxBytes: 100,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort("hedge won"), 50);
    expect(await during).toEqual({ kind: "aborted", reason: "hedge won" });
  });

  it("a transport failure says whether the status line had come (a body cut short)", async () => {
    behaviours.set("/cut", (_req, res) => {
      res.writeHead(200, { "content-length": "50" });
      res.write("partial");
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const cut = await exchange(agent, get("/cut"), { timeoutMs: 2000, maxBytes: 100 });
    expect(cut).toMatchObject({ kind: "failed", answered: true });
    const refused = await exchange(
      agent,
      { ...get("/"), origin: "http://127.0.0.1:1" },
      { timeoutMs: 2000, maxBytes: 100 },
    );
    expect(refused).toMatchObject({ kind: "failed", answered: false });
  });
});
