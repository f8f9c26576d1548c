import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { LyingFront } from "./lying-front.ts";

/**
 * Providers in front of a real node that lose logs the way real ones do (docs/behaviour.md
 * §12.12), each HTTP request (a lone call or a batch) answered from one "backend", as a load
 * balancer sends a batch to one backend:
 * - `laggingIndex`: blocks and headers current, but its log index leaves out the newest
 *   `blocks` blocks (an empty list for them), as Erigon does for fresh blocks;
 * - `steppingBack`: a load balancer whose backends stand `offsets` blocks behind the node in
 *   turn, log request by log request; each clamps a `toBlock` above its head to it without a word (as
 *   anvil does) and has no block above it.
 * `seen` counts the calls of each method the front received.
 */

interface Call {
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown[];
}

type Member = { result?: unknown; error?: unknown };

export interface LogFront extends LyingFront {
  readonly seen: Map<string, number>;
}

const hex = (n: number) => `0x${n.toString(16)}`;

async function startFront(
  nodeUrl: string,
  answer: (call: Call, head: number, forward: (call: Call) => Promise<Member>) => Promise<Member>,
  backendHead: (nodeHead: number, calls: readonly Call[]) => number,
): Promise<LogFront> {
  const seen = new Map<string, number>();
  const forward = async (call: Call): Promise<Member> => {
    const response = await fetch(nodeUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: call.method,
        params: call.params ?? [],
      }),
    });
    const { result, error } = (await response.json()) as Member;
    return error === undefined ? { result } : { error };
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Call | Call[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      const nodeHead = Number((await forward({ method: "eth_blockNumber" })).result);
      const head = backendHead(nodeHead, calls);
      const answers = await Promise.all(
        calls.map(async (call) => {
          seen.set(call.method, (seen.get(call.method) ?? 0) + 1);
          return { jsonrpc: "2.0", id: call.id ?? null, ...(await answer(call, head, forward)) };
        }),
      );
      const text = JSON.stringify(Array.isArray(parsed) ? answers : answers[0]);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(text);
    })().catch(() => req.socket.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    seen,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Filter {
  readonly fromBlock?: string;
  readonly toBlock?: string;
  readonly blockHash?: string;
}

/** Its log index leaves out the newest `blocks` blocks of the node. */
export function startLaggingIndexFront(nodeUrl: string, blocks: number): Promise<LogFront> {
  return startFront(
    nodeUrl,
    async (call, head, forward) => {
      if (call.method !== "eth_getLogs") return forward(call);
      const answer = await forward(call);
      if (!Array.isArray(answer.result)) return answer;
      const indexed = head - blocks;
      return {
        result: answer.result.filter(
          (log: { blockNumber: string }) => Number(log.blockNumber) <= indexed,
        ),
      };
    },
    (nodeHead) => nodeHead,
  );
}

/**
 * Backends `offsets` blocks behind the node in turn, one per request that holds a log query
 * (every other request, the monitor's checks among them, reaches the first backend: the
 * provider keeps showing the highest head); each backend clamps.
 */
export function startSteppingBackFront(
  nodeUrl: string,
  offsets: readonly number[],
): Promise<LogFront> {
  let turn = 0;
  return startFront(
    nodeUrl,
    async (call, head, forward) => {
      const params = call.params ?? [];
      if (call.method === "eth_blockNumber") return { result: hex(head) };
      if (call.method === "eth_getBlockByNumber" && typeof params[0] === "string") {
        const asked = params[0] === "latest" ? head : Number(params[0]);
        if (Number.isNaN(asked)) return forward(call);
        return asked > head
          ? { result: null }
          : forward({ ...call, params: [hex(asked), params[1]] });
      }
      if (call.method === "eth_getLogs") {
        const filter = params[0] as Filter;
        if (filter.blockHash !== undefined) return forward(call);
        const to =
          filter.toBlock === undefined || filter.toBlock === "latest"
            ? head
            : Number(filter.toBlock);
        return forward({ ...call, params: [{ ...filter, toBlock: hex(Math.min(to, head)) }] });
      }
      return forward(call);
    },
    (nodeHead, calls) => {
      if (!calls.some((call) => call.method === "eth_getLogs")) return nodeHead - (offsets[0] ?? 0);
      return Math.max(0, nodeHead - (offsets[turn++ % offsets.length] ?? 0));
    },
  );
}
