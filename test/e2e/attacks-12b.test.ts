import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../local/log-chain.ts";
import { type LogsRangeCap, startLogsRangeCap } from "../../local/logs-range-cap.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { GatewayClient, rpcCall } from "../support/gateway-client.ts";

/**
 * What attacking hedged reads and eth_getLogs over any range found on the local stack: four
 * proxy containers over one DynamoDB, anvil holding logs spread over 300 blocks, behind
 * providers that lie on cue (slow on some reads, garbage, refusals whose stated cap is false).
 * Fixed bugs are "regression: …"; the rest pins what held.
 */

const CHAIN_ID = 31337;
const BLOCKS = 300;
const FINALIZED = 280;
const hex = (n: number) => `0x${n.toString(16)}`;

interface Call {
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

/**
 * What a lying provider does with one call: `text` replaces the node's answer member (the id
 * is the caller's unless the text carries one), `delayMs` holds the answer back; undefined
 * forwards the call to the node. `raw` answers the whole HTTP request instead (HTML pages).
 */
type Lie = (
  call: Call,
) => { readonly text?: string; readonly delayMs?: number; readonly raw?: string } | undefined;

interface Liar {
  readonly url: string;
  readonly calls: Call[];
  lie: Lie;
  close(): Promise<void>;
}

async function startLiar(nodeUrl: string): Promise<Liar> {
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

const span = (call: Call): number | null => {
  if (call.method !== "eth_getLogs" || !Array.isArray(call.params)) return null;
  const filter = call.params[0] as { fromBlock?: string; toBlock?: string };
  if (filter.fromBlock === undefined || filter.toBlock === undefined) return null;
  return Number.parseInt(filter.toBlock, 16) - Number.parseInt(filter.fromBlock, 16) + 1;
};
const rangeRefusal = (message: string) => JSON.stringify({ error: { code: -32005, message } });

let node: AnvilNode;
let chain: LogChain;
let liar: Liar;
let slow: Liar;
let capped: LogsRangeCap;
let stack: LocalStack;
const client = new GatewayClient();

/** Networks that each start with no learned log range (one per attack on the log lies). */
const LOG_NETWORKS = ["lie1", "lie2", "lie3", "lie4", "lie5", "lie6", "lie7"] as const;
const HEDGED_NETWORKS = ["hedge1", "hedge2", "hedge3", "hedge4", "slowsome"] as const;

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  chain = await buildLogChain(node, { blocks: BLOCKS, every: 7 });
  liar = await startLiar(node.url);
  slow = await startLiar(node.url);
  capped = await startLogsRangeCap({ upstream: node.url, maxBlocks: 50 });
  const networks: Record<string, ConfigInput["networks"][string]> = Object.fromEntries(
    LOG_NETWORKS.map((name) => [
      name,
      { chain_id: CHAIN_ID, providers: [{ name: "liar", url: liar.url }] },
    ]),
  );
  networks.pieces = { chain_id: CHAIN_ID, providers: [{ name: "capped", url: capped.url }] };
  // One network per hedge attack: a hedge target that failed is blacklisted for a minute.
  for (const name of HEDGED_NETWORKS) {
    networks[name] = {
      chain_id: CHAIN_ID,
      hedge: { max_ratio: 1, min_ms: 100, max_ms: 200, max_batch: 10 },
      cache: false,
      providers: [
        { name: "slow", url: slow.url, priority: 2 },
        { name: "liar", url: liar.url, priority: 1 },
      ],
    };
  }
  networks.budget = {
    chain_id: CHAIN_ID,
    hedge: { max_ratio: 0.1, min_ms: 100, max_ms: 200, max_batch: 10 },
    cache: false,
    providers: [
      { name: "slow", url: slow.url, priority: 2 },
      { name: "liar", url: liar.url, priority: 1 },
    ],
  };
  stack = await startLocalStack({ containers: 4, config: { networks } });
  // The chain position the monitor would share: blocks up to FINALIZED are immutable.
  const position = async (number: number) =>
    node.rpc<{ hash: string }>("eth_getBlockByNumber", [hex(number), false]);
  const [finalized, latest] = await Promise.all([position(FINALIZED), position(chain.head)]);
  const monitorStore = new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  });
  for (const network of Object.keys(networks)) {
    await monitorStore.writeHead(network, {
      latest: { number: chain.head, hash: latest.hash },
      safe: { number: FINALIZED, hash: finalized.hash },
      finalized: { number: FINALIZED, hash: finalized.hash },
      served: null,
      previousServed: null,
      updatedAt: Date.now(),
      reorgSeenAt: 0,
    });
  }
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await slow?.close();
  await capped?.close();
  await node?.stop();
  await client.close();
});

beforeEach(() => {
  liar.lie = () => undefined;
  slow.lie = () => undefined;
  liar.calls.length = 0;
  slow.calls.length = 0;
});

async function post(network: string, body: string) {
  const answer = await client.send(`${stack.url}/${network}`, body);
  return {
    ...answer,
    json: JSON.parse(answer.text) as {
      result?: unknown;
      error?: { code: number; message: string };
    },
  };
}

const logsCall = (from: number, to: number, id = 1) =>
  rpcCall("eth_getLogs", [{ address: chain.contract, fromBlock: hex(from), toBlock: hex(to) }], id);

/** The node's own logs of the range, asked directly. */
const nodeLogs = (from: number, to: number) =>
  node.rpc<unknown[]>("eth_getLogs", [
    { address: chain.contract, fromBlock: hex(from), toBlock: hex(to) },
  ]);

const logCalls = (of: Liar) => of.calls.filter((call) => call.method === "eth_getLogs");

describe("eth_getLogs from providers that lie (docs/behaviour.md §12)", () => {
  it("regression: a refusal stating a cap of 1 block against 10^6 blocks made a million pieces and spent every upstream call left; now one call, and -32005 naming the pieces", async () => {
    liar.lie = (call) =>
      (span(call) ?? 0) > 10 ? { text: rangeRefusal("exceed maximum block range: 1") } : undefined;
    const answer = await post("lie1", logsCall(0, 1_000_000));
    expect(answer.status).toBe(200);
    expect(answer.json.error?.code).toBe(-32005);
    expect(answer.json.error?.message).toContain("1000001 upstream calls of at most 1 blocks");
    expect(logCalls(liar)).toHaveLength(1);
  });

  it("regression: a refusal stating 10^12 blocks from a provider that takes 50 shrank the pieces a block per call and failed; now the range is halved and served", async () => {
    liar.lie = (call) =>
      (span(call) ?? 0) > 50
        ? { text: rangeRefusal("exceed maximum block range: 1000000000000") }
        : undefined;
    const answer = await post("lie2", logsCall(0, 255));
    expect(answer.json.result).toEqual(await nodeLogs(0, 255));
    expect(logCalls(liar).length).toBeLessThanOrEqual(20);
  });

  it("holds: a reversed hint, or one outside the piece, is ignored and the piece halved", async () => {
    let reversed = true;
    liar.lie = (call) => {
      if ((span(call) ?? 0) <= 40) return undefined;
      reversed = !reversed;
      return {
        text: rangeRefusal(
          reversed
            ? "query exceeds max results 20000, retry with the range 200-10"
            : "Log response size exceeded. Try with this block range [0x0, 0x5]",
        ),
      };
    };
    const answer = await post("lie3", logsCall(100, 299));
    expect(answer.json.result).toEqual(await nodeLogs(100, 299));
    for (const call of logCalls(liar)) {
      const filter = (call.params as [{ fromBlock: string }])[0];
      expect(Number.parseInt(filter.fromBlock, 16)).toBeGreaterThanOrEqual(100);
    }
  });

  it("holds: logs from outside the piece, duplicated and reversed, come back once, in order, only the range's", async () => {
    liar.lie = (call) => {
      const blocks = span(call);
      if (blocks === null) return undefined;
      if (blocks > 64) return { text: rangeRefusal("exceed maximum block range: 64") };
      return undefined;
    };
    // Pieces are answered by the node with its logs of a wider range, twice and reversed.
    const sloppy = liar.lie;
    liar.lie = (call) => {
      const told = sloppy(call);
      if (told !== undefined || span(call) === null) return told;
      const filter = (call.params as [{ fromBlock: string; toBlock: string }])[0];
      const from = Math.max(0, Number.parseInt(filter.fromBlock, 16) - 20);
      const to = Math.min(chain.head, Number.parseInt(filter.toBlock, 16) + 20);
      return { text: `{"result":"WIDER:${from}:${to}"}` };
    };
    const widened = new Map<string, unknown[]>();
    const wide = liar.lie;
    liar.lie = (call) => {
      const told = wide(call);
      const result = told?.text === undefined ? undefined : JSON.parse(told.text).result;
      if (typeof result !== "string" || !result.startsWith("WIDER:")) return told;
      const logs = widened.get(result) ?? [];
      return { text: JSON.stringify({ result: [...logs, ...logs].reverse() }) };
    };
    // Logs are fetched before the query, so the lie can answer synchronously.
    for (let from = 0; from < 300; from += 64) {
      const lo = Math.max(0, from - 20);
      const hi = Math.min(chain.head, Math.min(from + 63, 299) + 20);
      widened.set(`WIDER:${lo}:${hi}`, await nodeLogs(lo, hi));
    }
    const answer = await post("lie4", logsCall(0, 299));
    expect(answer.json.result).toEqual(await nodeLogs(0, 299));
  });

  // Every range refusal halved the span learned for the provider, kept in the shared state
  // for learned_limit_ttl_seconds (24 h): one dense or flaky block ("please retry with a smaller
  // block range") taught every container a log range of 1 block, and every later query wider
  // than max_upstream_calls blocks on that provider was refused at once with -32005 for a day
  // (0x0-0x12b: "need 300 upstream calls of at most 1 blocks" after 11 calls). A refusal no
  // wider than a span the provider answered in the query teaches nothing now; the caller gets
  // the documented answer naming the one block refused.
  it("regression: a provider refusing every span holding one block taught a log range of 1 block for a day; now a refusal no wider than a span it answered teaches nothing", async () => {
    const bad = 150;
    liar.lie = (call) => {
      if (span(call) === null) return undefined;
      const filter = (call.params as [{ fromBlock: string; toBlock: string }])[0];
      const from = Number.parseInt(filter.fromBlock, 16);
      const to = Number.parseInt(filter.toBlock, 16);
      return from <= bad && bad <= to
        ? { text: rangeRefusal("please retry with a smaller block range") }
        : undefined;
    };
    const answer = await post("lie5", logsCall(0, 299));
    expect(logCalls(liar).length).toBeLessThanOrEqual(50);
    expect(answer.json.error?.message).toContain(`blocks ${hex(bad)}-${hex(bad)} of 0x0-0x12b`);
    const status = await client.providers(stack.url, "lie5");
    expect(status.get("liar")?.limits?.max_logs_range ?? Infinity).toBeGreaterThanOrEqual(150);
  });

  it("holds: results-count refusals forever, in changing words, end within max_upstream_calls", async () => {
    let n = 0;
    liar.lie = (call) =>
      span(call) === null
        ? undefined
        : { text: rangeRefusal(`query returned more than ${10_000 + n++} results`) };
    const answer = await post("lie6", logsCall(0, 299));
    expect(answer.json.error).toBeDefined();
    expect(answer.json.error?.message).toMatch(
      /^blocks 0x[0-9a-f]+-0x[0-9a-f]+ of 0x0-0x12b were not served \(liar: -32005: query returned more than/,
    );
    expect(logCalls(liar).length).toBeLessThanOrEqual(50);
  });

  it("holds: range refusals whose stated cap changes each time still serve the range", async () => {
    let n = 0;
    liar.lie = (call) =>
      (span(call) ?? 0) > 40
        ? {
            text: rangeRefusal(`exceed maximum block range: ${[5000, 45, 1_000_000, 90][n++ % 4]}`),
          }
        : undefined;
    const answer = await post("lie7", logsCall(0, 299));
    expect(answer.json.result).toEqual(await nodeLogs(0, 299));
    expect(logCalls(liar).length).toBeLessThanOrEqual(30);
  });
});

describe("eth_getLogs pieces and the answer cache across containers", () => {
  it("holds: a finalized range asked again, by four containers at once, asks no provider", async () => {
    const first = await post("pieces", logsCall(0, 249));
    expect(first.json.result).toEqual(await nodeLogs(0, 249));
    const asked = capped.logCalls;
    // The shared tier's writes go beside the answer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const again = await Promise.all([1, 2, 3, 4].map((id) => post("pieces", logsCall(0, 249, id))));
    for (const answer of again) expect(answer.json.result).toEqual(first.json.result);
    expect(asked).toBeGreaterThan(1);
    expect(capped.logCalls - asked).toBe(0);
  });
});

const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const balanceCall = (id: number) => rpcCall("eth_getBalance", [ACCOUNT, hex(FINALIZED)], id);

describe("hedged reads (docs/behaviour.md §13)", () => {
  it.each<[string, string, () => { text?: string; raw?: string }]>([
    ["garbage", "hedge1", () => ({ text: '{"result":"not a quantity"}' })],
    ["an HTML page", "hedge2", () => ({ raw: "<html><body>502 Bad Gateway</body></html>" })],
    ["a foreign id", "hedge3", () => ({ text: '{"id":424242,"result":"0x1"}' })],
    [
      "an error",
      "hedge4",
      () => ({ text: '{"error":{"code":-32000,"message":"header not found"}}' }),
    ],
  ])(
    "holds: a hedge target answering %s never beats the slow right answer",
    async (_, network, lie) => {
      slow.lie = (call) => (call.method === "eth_getBalance" ? { delayMs: 500 } : undefined);
      liar.lie = (call) => (call.method === "eth_getBalance" ? lie() : undefined);
      const expected = await node.rpc("eth_getBalance", [ACCOUNT, hex(FINALIZED)]);
      const answer = await post(network, balanceCall(7));
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: expected });
      expect(answer.headers["x-gateway-provider"]).toBe("slow");
      expect(liar.calls.filter((c) => c.method === "eth_getBalance").length).toBe(1);
    },
  );

  it("holds: a provider slow on every other read loses those races without a strike (its answers after the abort count for nothing)", async () => {
    let n = 0;
    slow.lie = (call) =>
      call.method === "eth_getBalance" && n++ % 2 === 0 ? { delayMs: 1500 } : undefined;
    const started = Date.now();
    const answers = [];
    for (let id = 0; id < 12; id++) answers.push(await post("slowsome", balanceCall(id)));
    const elapsed = Date.now() - started;
    const winners = answers.map((a) => a.headers["x-gateway-provider"]);
    for (const answer of answers) expect(answer.json.result).toMatch(/^0x/);
    expect(winners.filter((winner) => winner === "liar")).toHaveLength(6);
    expect(elapsed).toBeLessThan(6 * 600 + 6 * 300);
    const providers = await client.providers(stack.url, "slowsome");
    expect(providers.get("slow")?.strikes ?? 0).toBe(0);
    expect(providers.get("slow")?.state).not.toBe("blacklisted");
  });

  it("holds: 100 callers at once on four containers hedge at most max_ratio of their requests", async () => {
    let n = 0;
    slow.lie = (call) =>
      call.method === "eth_getBalance" && n++ % 2 === 0 ? { delayMs: 400 } : undefined;
    // Requests in the last minute count: warm every container's budget with fast ones first.
    await Promise.all(
      Array.from({ length: 40 }, (_, id) => post("budget", rpcCall("eth_chainId", [], id))),
    );
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, id) => post("budget", balanceCall(id))),
    );
    for (const answer of answers) expect(answer.json.result).toMatch(/^0x/);
    const hedges = liar.calls.filter((c) => c.method === "eth_getBalance").length;
    expect(hedges).toBeGreaterThan(0);
    expect(hedges).toBeLessThanOrEqual(14);
  });
});
