import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP JSON-RPC provider in front of a real node, for attack tests: each call of a request
 * (single or batch) is answered by `answer`, which may forward it to the node, rewrite the
 * node's answer, or make one up. Answers keep the caller's id.
 */

export interface FrontCall {
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

/** One answer member as the node would send it (`result` or `error`). */
export interface FrontAnswer {
  result?: unknown;
  error?: unknown;
}

/**
 * `forward` sends the call to the node as it came, or `instead` of it when given; `request`
 * is the HTTP request the call came in (numbered from 0 at this front, a batch's members
 * sharing one), for fronts whose answer depends on the request, as a load balancer's does.
 */
export type AnswerCall = (
  call: FrontCall,
  forward: (instead?: FrontCall) => Promise<FrontAnswer>,
  request: { readonly index: number },
) => FrontAnswer | Promise<FrontAnswer>;

export interface LyingFront {
  readonly url: string;
  close(): Promise<void>;
}

/** `nodeUrl`: the node calls are forwarded to, or a function naming it at each call. */
export async function startLyingFront(
  nodeUrl: string | (() => string),
  answer: AnswerCall,
): Promise<LyingFront> {
  let requests = 0;
  const member = async (call: FrontCall, request: { readonly index: number }) => {
    const forward = async (instead: FrontCall = call): Promise<FrontAnswer> => {
      const response = await fetch(typeof nodeUrl === "string" ? nodeUrl : nodeUrl(), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", ...instead }),
      });
      return (await response.json()) as FrontAnswer;
    };
    const { result, error } = await answer(call, forward, request);
    return {
      jsonrpc: "2.0",
      id: call.id ?? null,
      ...(error === undefined ? { result } : { error }),
    };
  };
  const handleRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as FrontCall | FrontCall[];
    const request = { index: requests++ };
    const answers = await Promise.all(
      (Array.isArray(parsed) ? parsed : [parsed]).map((call) => member(call, request)),
    );
    const text = JSON.stringify(Array.isArray(parsed) ? answers : answers[0]);
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  };
  // A request whose forwarding fails (the node gone while the suite tears down) ends in a
  // reset, as the node itself would give, never a rejection nobody handles.
  const server: Server = createServer((req, res) => {
    handleRequest(req, res).catch(() => req.socket.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A call as a node front rewrites it (the params are an array). */
export interface NodeCall {
  readonly id: unknown;
  readonly method: string;
  readonly params: unknown[];
}

export interface NodeFront extends LyingFront {
  /** Where the front forwards from now on. */
  target: { readonly url: string };
}

/**
 * A front that forwards every call (lone or batched) to `target`, which a test may switch to
 * another node; `rewrite` may change a call's result (an error answer passes as it is).
 */
export async function startNodeFront<Target extends { readonly url: string }>(
  target: Target,
  rewrite: (call: NodeCall, result: unknown) => unknown = (_call, result) => result,
): Promise<NodeFront & { target: Target }> {
  const front = { target };
  const lying = await startLyingFront(
    () => front.target.url,
    async (call, forward) => {
      const answer = await forward();
      if (answer.error !== undefined) return answer;
      const params = Array.isArray(call.params) ? call.params : [];
      return { result: rewrite({ id: call.id, method: call.method, params }, answer.result) };
    },
  );
  return Object.assign(front, lying);
}

/**
 * A provider that stands at `head()` in front of a node further on, as anvil and older reth
 * do: `eth_blockNumber` says its head, a block above it is answered by `aboveHead` (null by
 * default: it has no such block), and an `eth_getLogs` whose `toBlock` is above it gets the
 * logs up to its head and no error. `seen` counts the calls it receives, by method.
 */
export function startClampingFront(
  nodeUrl: string,
  head: () => number,
  options: {
    readonly seen?: Map<string, number>;
    readonly aboveHead?: (asked: number, forward: () => Promise<FrontAnswer>) => AnswerOrPromise;
  } = {},
): Promise<LyingFront> {
  const hex = (n: number) => `0x${n.toString(16)}`;
  return startLyingFront(nodeUrl, (call, forward) => {
    options.seen?.set(call.method, (options.seen.get(call.method) ?? 0) + 1);
    const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
    if (call.method === "eth_blockNumber") return { result: hex(head()) };
    if (call.method === "eth_getBlockByNumber" && typeof params[0] === "string") {
      const asked = params[0] === "latest" ? head() : Number(params[0]);
      if (asked > head()) return (options.aboveHead ?? (() => ({ result: null })))(asked, forward);
    }
    if (call.method === "eth_getLogs") {
      const filter = params[0] as Record<string, unknown>;
      const to = Number(filter.toBlock);
      const clamped = Number.isNaN(to) ? filter : { ...filter, toBlock: hex(Math.min(to, head())) };
      return forward({ ...call, params: [clamped] });
    }
    return forward();
  });
}

type AnswerOrPromise = FrontAnswer | Promise<FrontAnswer>;
