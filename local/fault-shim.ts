import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, type Dispatcher } from "undici";

/** What the shim does to the requests it receives; `null` passes everything through. */
export type Fault =
  /** Reset the connection (TCP RST) without answering. */
  | { kind: "refuse" }
  /** Stop listening: new connections are refused. Any other fault (or null) listens again on the same port. */
  | { kind: "down" }
  /** Never answer; the request is released only when the shim closes. */
  | { kind: "hang" }
  /** Wait, then forward. */
  | { kind: "slow"; ms: number }
  /** Wait, then forward, for every `every`-th request from the fault on (a tail: 10 → 10 %). */
  | { kind: "slow_some"; ms: number; every: number }
  /** Answer with this HTTP response instead of forwarding (429, 503, 520–524 pages, …). */
  | { kind: "http"; status: number; body?: string; headers?: Record<string, string> }
  /** Answer every call (single or batch member) with this JSON-RPC error and the caller's id. */
  | { kind: "jsonrpc_error"; code: number; message: string; data?: unknown }
  /** Answer every call with this result and the caller's id. */
  | { kind: "result"; value: unknown }
  /** Forward, then send only the first half of the body and close the connection (premature EOF). */
  | { kind: "truncate" }
  /** Answer 200 with a body that is not JSON. */
  | { kind: "malformed" }
  /** Forward, but answer the head (eth_blockNumber, eth_getBlockByNumber("latest")) with the block that was latest when the fault was set. */
  | { kind: "stuck_head" }
  /** Forward, but answer eth_chainId with this chain id. */
  | { kind: "chain_id"; id: number }
  /**
   * Forward a single call of `method` (the work is done upstream), then reset the connection
   * instead of answering: an answer lost after the fact. Other calls pass through.
   */
  | { kind: "lose_answer"; method: string }
  /**
   * Refuse a batch of more than `max` calls as providers do: by default HTTP 200 with one
   * JSON-RPC error (id null, "batch size too large"); `status` and `body` give another
   * refusal (e.g. a 413 page). Single calls and smaller batches are forwarded.
   */
  | { kind: "batch_limit"; max: number; status?: number; body?: string }
  /** Apply `fault` (not `down`) only to requests with a call of `method`; forward the rest. */
  | { kind: "for_method"; method: string; fault: Fault };

/** A request whose body the shim read: a single call (`batch: null`) or a batch of n calls. */
export interface ReceivedRequest {
  readonly batch: number | null;
  readonly methods: readonly string[];
}

export interface FaultShim {
  readonly url: string;
  readonly port: number;
  /** HTTP requests received so far, faulted ones included. */
  readonly requests: number;
  /**
   * The requests whose body the shim read, in order: all but those a `refuse`, `hang` or
   * `down` fault turned away unread; none with `keepReceived: false` (a long-running front).
   */
  readonly received: readonly ReceivedRequest[];
  readonly fault: Fault | null;
  /** Resolves once the fault is in force (for `down`: the port is closed; for `stuck_head`: the head is captured). */
  setFault(fault: Fault | null): Promise<void>;
  close(): Promise<void>;
}

interface JsonRpcCall {
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

interface UpstreamAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

const HOST = "127.0.0.1";
// Hop-by-hop headers describe one connection and must not be copied to the next one; the
// length is recomputed because bodies are re-sent whole (or deliberately cut).
const NOT_RELAYED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "content-length",
]);

export async function startFaultShim(
  upstreamUrl: string,
  { port: wanted = 0, keepReceived = true }: { port?: number; keepReceived?: boolean } = {},
): Promise<FaultShim> {
  const upstream = new URL(upstreamUrl);
  const upstreamPath = `${upstream.pathname}${upstream.search}`;
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const shutdown = new AbortController();
  let fault: Fault | null = null;
  let frozenHead: { number: unknown } | undefined;
  let requests = 0;
  const received: ReceivedRequest[] = [];
  /** Requests since the fault was set, for `slow_some`. */
  let sinceFault = 0;
  let listening = false;

  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    requests++;
    // An unreachable upstream (or a shutdown) becomes a reset, as if the caller had hit the dead
    // upstream directly.
    handle(req, res).catch(() => req.socket.resetAndDestroy());
  });

  async function listen(port: number): Promise<number> {
    server.listen(port, HOST);
    await once(server, "listening");
    listening = true;
    return (server.address() as AddressInfo).port;
  }

  async function stopListening(): Promise<void> {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  const port = await listen(wanted);

  async function forward(
    method: string,
    headers: IncomingHttpHeaders,
    body: Buffer | string,
  ): Promise<UpstreamAnswer> {
    const response = await agent.request({
      origin: upstream.origin,
      path: upstreamPath,
      method: method as Dispatcher.HttpMethod,
      headers: endToEndHeaders(headers),
      body: method === "GET" || method === "HEAD" ? undefined : body,
      signal: shutdown.signal,
    });
    const bytes = Buffer.from(await response.body.arrayBuffer());
    return {
      status: response.statusCode,
      headers: endToEndHeaders(response.headers),
      body: bytes,
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const active = fault;
    sinceFault++;
    if (active?.kind === "refuse") {
      req.socket.resetAndDestroy();
      return;
    }
    if (active?.kind === "hang") return;
    const body = await readBody(req);
    if (keepReceived) received.push(describe(body));
    return apply(active, req, res, body);
  }

  async function apply(
    active: Fault | null,
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
  ): Promise<void> {
    const method = req.method ?? "POST";
    switch (active?.kind) {
      case "refuse":
        req.socket.resetAndDestroy();
        return;
      case "hang":
        return;
      case "slow":
        await sleep(active.ms, undefined, { signal: shutdown.signal });
        return relay(res, await forward(method, req.headers, body));
      case "slow_some":
        if (sinceFault % active.every === 0) {
          await sleep(active.ms, undefined, { signal: shutdown.signal });
        }
        return relay(res, await forward(method, req.headers, body));
      case "http":
        res.writeHead(active.status, active.headers ?? {});
        res.end(active.body ?? "");
        return;
      case "malformed":
        return sendJson(res, "{not json");
      case "truncate": {
        const answer = await forward(method, req.headers, body);
        res.writeHead(answer.status, { ...answer.headers, "content-length": answer.body.length });
        res.write(answer.body.subarray(0, Math.floor(answer.body.length / 2)), () => res.destroy());
        return;
      }
      case "batch_limit": {
        const calls = describe(body).batch ?? 1;
        if (calls <= active.max) return relay(res, await forward(method, req.headers, body));
        const refusal =
          active.body ??
          JSON.stringify({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32600, message: `batch size too large: at most ${active.max} calls` },
          });
        res.writeHead(active.status ?? 200, {
          "content-type": active.body === undefined ? "application/json" : "text/plain",
          "content-length": Buffer.byteLength(refusal),
        });
        res.end(refusal);
        return;
      }
      case "for_method":
        return apply(
          describe(body).methods.includes(active.method) ? active.fault : null,
          req,
          res,
          body,
        );
      case "jsonrpc_error":
      case "result":
      case "stuck_head":
      case "chain_id":
        return answerCalls(active, req, res, body);
      case "lose_answer": {
        const answer = await forward(method, req.headers, body);
        const call = parseJson(body) as JsonRpcCall | undefined;
        if (call?.method === active.method) {
          req.socket.resetAndDestroy();
          return;
        }
        return relay(res, answer);
      }
      default:
        return relay(res, await forward(method, req.headers, body));
    }
  }

  /** The answer the fault gives to one call, or undefined to let the upstream answer it. */
  function syntheticAnswer(active: Fault, call: JsonRpcCall): object | undefined {
    const id = call.id ?? null;
    switch (active.kind) {
      case "jsonrpc_error": {
        const { code, message, data } = active;
        return {
          jsonrpc: "2.0",
          id,
          error: data === undefined ? { code, message } : { code, message, data },
        };
      }
      case "result":
        return { jsonrpc: "2.0", id, result: active.value };
      case "chain_id":
        return call.method === "eth_chainId"
          ? { jsonrpc: "2.0", id, result: `0x${active.id.toString(16)}` }
          : undefined;
      case "stuck_head":
        if (call.method === "eth_blockNumber") {
          return { jsonrpc: "2.0", id, result: frozenHead?.number };
        }
        if (
          call.method === "eth_getBlockByNumber" &&
          Array.isArray(call.params) &&
          call.params[0] === "latest"
        ) {
          return { jsonrpc: "2.0", id, result: frozenHead };
        }
        return undefined;
      default:
        return undefined;
    }
  }

  async function answerCalls(
    active: Fault,
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
  ): Promise<void> {
    const method = req.method ?? "POST";
    const parsed = parseJson(body);
    const calls = (Array.isArray(parsed) ? parsed : [parsed ?? {}]) as JsonRpcCall[];
    const answers = calls.map((call) => syntheticAnswer(active, call));
    if (answers.every((answer) => answer === undefined)) {
      return relay(res, await forward(method, req.headers, body));
    }
    if (!Array.isArray(parsed)) return sendJson(res, JSON.stringify(answers[0]));
    const forwarded = calls.filter((_, index) => answers[index] === undefined);
    const upstreamAnswers = new Map<string, unknown>();
    if (forwarded.length > 0) {
      const upstreamAnswer = await forward(method, req.headers, JSON.stringify(forwarded));
      const members = parseJson(upstreamAnswer.body);
      // Not a batch answer (e.g. an HTTP error page): the upstream's failure is the answer.
      if (!Array.isArray(members)) return relay(res, upstreamAnswer);
      for (const member of members as JsonRpcCall[]) {
        upstreamAnswers.set(JSON.stringify(member.id ?? null), member);
      }
    }
    const merged = calls
      .map((call, index) => answers[index] ?? upstreamAnswers.get(JSON.stringify(call.id ?? null)))
      .filter((answer) => answer !== undefined);
    return sendJson(res, JSON.stringify(merged));
  }

  async function captureHead(): Promise<{ number: unknown }> {
    const answer = await forward(
      "POST",
      { "content-type": "application/json" },
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}',
    );
    const block = (parseJson(answer.body) as { result?: { number: unknown } } | undefined)?.result;
    if (!block) throw new Error(`stuck_head: ${upstreamUrl} returned no latest block`);
    return block;
  }

  return {
    url: `http://${HOST}:${port}`,
    port,
    get requests() {
      return requests;
    },
    received,
    get fault() {
      return fault;
    },
    async setFault(next) {
      const inner = next?.kind === "for_method" ? next.fault : next;
      if (inner?.kind === "stuck_head") frozenHead = await captureHead();
      fault = next;
      sinceFault = 0;
      if (next?.kind === "down") await stopListening();
      else if (!listening) await listen(port);
    },
    async close() {
      shutdown.abort();
      await stopListening();
      await agent.destroy();
    },
  };
}

function endToEndHeaders(
  headers: IncomingHttpHeaders | Record<string, unknown>,
): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NOT_RELAYED.has(name.toLowerCase())) continue;
    kept[name] = value as string | string[];
  }
  return kept;
}

function relay(res: ServerResponse, answer: UpstreamAnswer): void {
  res.writeHead(answer.status, { ...answer.headers, "content-length": answer.body.length });
  res.end(answer.body);
}

function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function describe(body: Buffer): ReceivedRequest {
  const parsed = parseJson(body);
  const calls = (Array.isArray(parsed) ? parsed : [parsed]) as Array<JsonRpcCall | null>;
  return {
    batch: Array.isArray(parsed) ? parsed.length : null,
    methods: calls.map((call) => (typeof call?.method === "string" ? call.method : "")),
  };
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}
