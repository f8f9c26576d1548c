import { createPublicClient, defineChain, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../local/log-chain.ts";
import { type LogsRangeCap, startLogsRangeCap } from "../../../local/logs-range-cap.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * eth_getLogs over any range (docs/behaviour.md §12) on a real node: anvil holding logs spread
 * over 2,000 blocks, behind two providers that refuse spans over 200 blocks (each in its own
 * words). The query over the whole chain returns exactly the logs the node holds, compared
 * with direct queries per piece. The proportions are the target's (a query 10 times a
 * provider's cap); anvil 1.7 mines in time that grows with the chain's length, so 100,000
 * blocks would take hours here.
 */

const BLOCKS = 2_000;
const CAP = 200;

let node: AnvilNode;
let chain: LogChain;
let providers: LogsRangeCap[] = [];
let stack: LocalStack;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  chain = await buildLogChain(node, { blocks: BLOCKS, every: 37 });
  providers = await Promise.all([
    startLogsRangeCap({ upstream: node.url, maxBlocks: CAP }),
    startLogsRangeCap({
      upstream: node.url,
      maxBlocks: CAP,
      refusal: (_from, _to, max) => ({
        code: -32602,
        message: `eth_getLogs is limited to a ${max.toLocaleString("en-US")} range`,
      }),
    }),
  ]);
  stack = await startLocalStack({
    monitor: true,
    config: {
      check_interval_seconds: 1,
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          logs_concurrency: 3,
          providers: providers.map((provider, index) => ({
            name: `capped-${index}`,
            url: provider.url,
            priority: 2 - index,
          })),
        },
      },
    },
  });
  // The monitor's first tick gives the chain head the gateway knows.
  for (let wait = 0; wait < 100; wait++) {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      quorum: { head: number | null };
    };
    if (status.quorum.head === chain.head) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all(providers.map((provider) => provider.close()));
  await node?.stop();
});

const hex = (n: number) => `0x${n.toString(16)}`;

async function gatewayRpc(body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** The node's own logs, asked in pieces of 100 blocks. */
async function directLogs(from: number, to: number, filter = {}): Promise<unknown[]> {
  const logs: unknown[] = [];
  for (let start = from; start <= to; start += 100) {
    const end = Math.min(to, start + 99);
    logs.push(
      ...(await node.rpc<unknown[]>("eth_getLogs", [
        { ...filter, fromBlock: hex(start), toBlock: hex(end) },
      ])),
    );
  }
  return logs;
}

const logCalls = () => providers.reduce((sum, provider) => sum + provider.logCalls, 0);

describe(`a query over the whole chain (${BLOCKS} blocks) on providers capped at ${CAP} blocks`, () => {
  it("returns exactly the logs the node holds; the caps are learned, shared and shown", async () => {
    const before = logCalls();
    const { status, json } = await gatewayRpc({
      jsonrpc: "2.0",
      id: 41,
      method: "eth_getLogs",
      params: [{ fromBlock: "0x0", toBlock: hex(chain.head) }],
    });
    expect(status).toBe(200);
    const answer = json as { id: number; result: unknown[] };
    expect(answer.id).toBe(41);
    expect(answer.result).toEqual(await directLogs(0, chain.head));
    expect(answer.result).toHaveLength(chain.calls * 2);
    // The whole range to each provider once (each refused it), then 11 aligned pieces.
    expect(logCalls() - before).toBe(2 + 11);
    const statusJson = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      providers: Array<{ name: string; limits: { max_logs_range: number | null } }>;
    };
    expect(statusJson.providers.map((p) => p.limits.max_logs_range)).toEqual([CAP, CAP]);
  });

  it("a second query is cut at once: one upstream call per piece", async () => {
    const before = logCalls();
    const refusedBefore = providers.reduce((sum, provider) => sum + provider.refused, 0);
    const { json } = await gatewayRpc({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [{ address: chain.contract, fromBlock: hex(150), toBlock: hex(1_850) }],
    });
    expect((json as { result: unknown[] }).result).toEqual(
      await directLogs(150, 1_850, { address: chain.contract }),
    );
    // 150-199, then 200-399 … 1800-1850: 10 pieces, none refused.
    expect(logCalls() - before).toBe(10);
    expect(providers.reduce((sum, provider) => sum + provider.refused, 0)).toBe(refusedBefore);
  });

  it("viem's getLogs, batched with another call, gets every log in chain order", async () => {
    const client = createPublicClient({
      chain: defineChain({
        id: 31337,
        name: "devnet",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [`${stack.url}/devnet`] } },
      }),
      transport: http(`${stack.url}/devnet`, { batch: true, retryCount: 0 }),
    });
    const [logs, chainId] = await Promise.all([
      client.getLogs({
        address: chain.contract as `0x${string}`,
        fromBlock: 0n,
        toBlock: BigInt(chain.head),
      }),
      client.getChainId(),
    ]);
    expect(chainId).toBe(31337);
    expect(logs).toHaveLength(chain.calls * 2);
    const order = logs.map((log) => [Number(log.blockNumber), log.logIndex]);
    expect(order).toEqual(
      [...order].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0)),
    );
  });

  it("a toBlock above the chain head is refused with the gateway's own error, nothing sent", async () => {
    const before = logCalls();
    const { json } = await gatewayRpc({
      jsonrpc: "2.0",
      id: 2,
      method: "eth_getLogs",
      params: [{ fromBlock: "0x0", toBlock: hex(chain.head + 500) }],
    });
    const error = (json as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32602);
    expect(error.message).toContain(`above the chain head this gateway knows (${hex(chain.head)})`);
    expect(logCalls()).toBe(before);
  });
});
