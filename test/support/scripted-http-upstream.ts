import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One JSON-RPC call as an upstream receives it (a batch member, or a single call). */
export interface ReceivedCall {
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

/**
 * A test's answer to one call: the members of the answer object other than `jsonrpc` and
 * `id` (for example `{ error: { code, message } }`), or undefined to let the node answer.
 */
export type CallScript = (call: ReceivedCall) => Record<string, unknown> | undefined;

export interface ScriptedHttpUpstream {
  readonly url: string;
  /** Every call received (batch members one by one), in order. */
  readonly calls: readonly ReceivedCall[];
  /** Every request body received, as sent. */
  readonly bodies: readonly string[];
  close(): Promise<void>;
}

/**
 * A real HTTP JSON-RPC upstream in front of a node: calls the script answers get that answer
 * (with the call's id), the others are sent to the node one by one and get its answer text
 * unchanged. Batches are answered as batches, in the order received. For faults that depend
 * on the method or on the batch member, which the fault shim (one fault for every call) cannot
 * express.
 */
export async function startScriptedHttpUpstream(
  nodeUrl: string,
  script: CallScript,
): Promise<ScriptedHttpUpstream> {
  const calls: ReceivedCall[] = [];
  const bodies: string[] = [];

  async function answer(call: ReceivedCall): Promise<string> {
    calls.push(call);
    const scripted = script(call);
    if (scripted !== undefined) {
      return JSON.stringify({ jsonrpc: "2.0", id: call.id ?? null, ...scripted });
    }
    const response = await fetch(nodeUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", ...call }),
    });
    return response.text();
  }

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    bodies.push(body);
    let text: string;
    try {
      const parsed = JSON.parse(body) as ReceivedCall | ReceivedCall[];
      text = Array.isArray(parsed)
        ? `[${(await Promise.all(parsed.map(answer))).join(",")}]`
        : await answer(parsed);
    } catch {
      text = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';
    }
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
