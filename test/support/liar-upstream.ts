import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A provider in front of a real node that lies on cue, for the attacks on log queries and
 * hedged reads: each call is answered by the test's `lie` (a made-up answer member, an answer
 * held back, or a whole HTTP answer that is no JSON-RPC at all), else forwarded to the node.
 * It keeps every call it got.
 */

export interface Call {
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

/**
 * What a lying provider does with one call: `text` replaces the node's answer member (the id
 * is the caller's unless the text carries one), `delayMs` holds the answer back; undefined
 * forwards the call to the node. `raw` answers the whole HTTP request instead (HTML pages).
 */
export type Lie = (
  call: Call,
) => { readonly text?: string; readonly delayMs?: number; readonly raw?: string } | undefined;

export interface Liar {
  readonly url: string;
  readonly calls: Call[];
  lie: Lie;
  close(): Promise<void>;
}

export async function startLiar(nodeUrl: string): Promise<Liar> {
  const liar = { calls: [] as Call[], lie: (() => undefined) as Lie };
  const member = async (call: Call): Promise<{ text: string; raw?: string }> => {
    liar.calls.push(call);
    const told = liar.lie(call);
    if (told?.delayMs !== undefined) await new Promise((r) => setTimeout(r, told.delayMs));
    if (told?.raw !== undefined) return { text: "", raw: told.raw };
    if (told?.text !== undefined) {
      const parsed = JSON.parse(told.text) as Record<string, unknown>;
      return { text: JSON.stringify({ jsonrpc: "2.0", id: call.id ?? null, ...parsed }) };
    }
    const response = await fetch(nodeUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", ...call }),
    });
    return { text: await response.text() };
  };
  const server: Server = createServer((req, res) => {
    // The node gone (the stack still polls while the suite tears down) is a reset, as the
    // node itself would give, never a rejection nobody handles.
    answer(req, res).catch(() => req.socket.destroy());
  });
  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Call | Call[];
    const answers = await Promise.all((Array.isArray(parsed) ? parsed : [parsed]).map(member));
    const raw = answers.find((answer) => answer.raw !== undefined)?.raw;
    const text =
      raw ??
      (Array.isArray(parsed)
        ? `[${answers.map((a) => a.text).join(",")}]`
        : (answers[0]?.text ?? ""));
    res.writeHead(200, {
      "content-type": raw === undefined ? "application/json" : "text/html",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  };
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return Object.assign(liar, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
