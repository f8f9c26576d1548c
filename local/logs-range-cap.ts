import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A provider that caps eth_getLogs as hosted providers do, in front of a node that does not
 * (anvil): a call whose block span is over `maxBlocks` is refused with `refusal`'s error, the
 * way that provider words it; everything else, batches included, goes to the node as sent.
 * Counts what it receives, for tests and the benchmark.
 */

export interface RangeRefusal {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

export interface LogsRangeCapOptions {
  /** The node behind it. */
  readonly upstream: string;
  readonly maxBlocks: number;
  /** The refusal for a span of `from`–`to` (default: geth's "exceed maximum block range: N"). */
  readonly refusal?: (from: number, to: number, maxBlocks: number) => RangeRefusal;
}

export interface LogsRangeCap {
  readonly url: string;
  /** HTTP requests received. */
  readonly requests: number;
  /** eth_getLogs calls received, and how many of them were refused. */
  readonly logCalls: number;
  readonly refused: number;
  close(): Promise<void>;
}

interface JsonRpcCall {
  readonly id?: unknown;
  readonly method?: unknown;
  readonly params?: unknown;
}

export const GETH_RANGE_REFUSAL = (_from: number, _to: number, maxBlocks: number) => ({
  code: -32000,
  message: `exceed maximum block range: ${maxBlocks}`,
});

export async function startLogsRangeCap(options: LogsRangeCapOptions): Promise<LogsRangeCap> {
  const refusal = options.refusal ?? GETH_RANGE_REFUSAL;
  let requests = 0;
  let logCalls = 0;
  let refused = 0;

  /** The refusal for a call, or null to let it through. */
  const refusalFor = (call: JsonRpcCall): RangeRefusal | null => {
    if (call.method !== "eth_getLogs" || !Array.isArray(call.params)) return null;
    logCalls++;
    const filter = call.params[0] as { fromBlock?: unknown; toBlock?: unknown } | undefined;
    const from = blockOf(filter?.fromBlock);
    const to = blockOf(filter?.toBlock);
    if (from === null || to === null || to - from + 1 <= options.maxBlocks) return null;
    refused++;
    return refusal(from, to, options.maxBlocks);
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      answer(body).then(
        (text) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(text);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });

  const answer = async (body: string): Promise<string> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return forward(options.upstream, body);
    }
    const calls = (Array.isArray(parsed) ? parsed : [parsed]) as JsonRpcCall[];
    const refusals = calls.map(refusalFor);
    if (refusals.every((refusal) => refusal === null)) return forward(options.upstream, body);
    if (!Array.isArray(parsed)) {
      return JSON.stringify({ jsonrpc: "2.0", id: calls[0]?.id ?? null, error: refusals[0] });
    }
    const passed = calls.filter((_, index) => refusals[index] === null);
    const forwarded =
      passed.length === 0
        ? []
        : (JSON.parse(await forward(options.upstream, JSON.stringify(passed))) as unknown[]);
    const errors = calls.flatMap((call, index) => {
      const error = refusals[index];
      return error === null || error === undefined ? [] : [{ jsonrpc: "2.0", id: call.id, error }];
    });
    return JSON.stringify([...forwarded, ...errors]);
  };

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get logCalls() {
      return logCalls;
    },
    get refused() {
      return refused;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close").catch(() => undefined);
    },
  };
}

async function forward(upstream: string, body: string): Promise<string> {
  const response = await fetch(upstream, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return response.text();
}

function blockOf(value: unknown): number | null {
  if (value === "earliest") return 0;
  if (typeof value !== "string" || !/^0x[0-9a-f]+$/i.test(value)) return null;
  return Number.parseInt(value, 16);
}
