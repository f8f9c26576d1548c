import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import { type LogsRangeCap, startLogsRangeCap } from "../../../local/logs-range-cap.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { shareChainPosition } from "../../support/chain-position.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";
import { type Call, type Liar, startLiar } from "../../support/liar-upstream.ts";

/**
 * eth_getLogs over any range from providers that lie (docs/behaviour.md §12.4–12.7), on the
 * local stack: four proxy containers over one DynamoDB, anvil holding logs spread over 300
 * blocks, behind a provider that lies on cue (garbage, refusals whose stated cap is false,
 * logs from outside the piece) and one that refuses spans over 50 blocks. Fixed bugs are
 * "regression: …"; the rest pins what held.
 */

const CHAIN_ID = 31337;
const BLOCKS = 300;
const FINALIZED = 280;
const hex = (n: number) => `0x${n.toString(16)}`;

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
let capped: LogsRangeCap;
let stack: LocalStack;
const client = new GatewayClient();

/** Networks that each start with no learned log range (one per attack on the log lies). */
const LOG_NETWORKS = ["lie1", "lie2", "lie3", "lie4", "lie5", "lie6", "lie7"] as const;

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  chain = await buildLogChain(node, { blocks: BLOCKS, every: 7 });
  liar = await startLiar(node.url);
  capped = await startLogsRangeCap({ upstream: node.url, maxBlocks: 50 });
  const networks: Record<string, ConfigInput["networks"][string]> = Object.fromEntries(
    LOG_NETWORKS.map((name) => [
      name,
      { chain_id: CHAIN_ID, providers: [{ name: "liar", url: liar.url }] },
    ]),
  );
  networks.pieces = { chain_id: CHAIN_ID, providers: [{ name: "capped", url: capped.url }] };
  stack = await startLocalStack({ containers: 4, config: { networks } });
  // The chain position the monitor would share: blocks up to FINALIZED are immutable.
  await shareChainPosition(stack, node, Object.keys(networks), {
    latest: chain.head,
    finalized: FINALIZED,
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await capped?.close();
  await node?.stop();
  await client.close();
});

beforeEach(() => {
  liar.lie = () => undefined;
  liar.calls.length = 0;
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
