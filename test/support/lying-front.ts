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

export type AnswerCall = (
  call: FrontCall,
  forward: () => Promise<FrontAnswer>,
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
  const member = async (call: FrontCall) => {
    const forward = async (): Promise<FrontAnswer> => {
      const response = await fetch(typeof nodeUrl === "string" ? nodeUrl : nodeUrl(), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", ...call }),
      });
      return (await response.json()) as FrontAnswer;
    };
    const { result, error } = await answer(call, forward);
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
    const answers = await Promise.all((Array.isArray(parsed) ? parsed : [parsed]).map(member));
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
