import { createHash } from "node:crypto";
import { privateKeyToAccount } from "viem/accounts";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import { answerTooLargeBody } from "../../functions/core/http/payload-limit.ts";
import { parseRequest } from "../../functions/core/jsonrpc/jsonrpc.ts";
import { internalErrorResult } from "../../functions/proxy/api.ts";
import { startAnvil } from "../../local/anvil.ts";
import { startApiGateway } from "../../local/apigw-emulator.ts";
import { startFaultShim } from "../../local/fault-shim.ts";
import { buildLogChain } from "../../local/log-chain.ts";
import { startLocalStack } from "../../local/stack.ts";
import { rpcEvent } from "./api-gateway-event.ts";
import { GatewayClient, rpcCall } from "./gateway-client.ts";
import { startLyingFront } from "./lying-front.ts";

/**
 * Every kind of error answer the gateway gives a JSON-RPC caller, each provoked for real: the
 * request sent through the local stack (API Gateway emulator, the proxy handler, real
 * upstreams on anvil) whose config and providers make it so; the few that need the process to
 * fail are the handler's own builders (`internalErrorResult`, `answerTooLargeBody`) and the
 * emulator's answers for a function that times out or outlives the integration timeout.
 * Each is recorded with the call that got it, for a client to be handed the same answer.
 */

export interface ProvokedError {
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
  /** The call that got it (a batch: the calls of the batch). */
  readonly calls: ReadonlyArray<{ readonly method: string; readonly params: unknown[] }>;
}

const CHAIN_ID = 31337;
const KEY = "indexer-key-0123456789";
const SLOW_KEY = "one-a-minute-key-0123456789";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const hex = (n: number) => `0x${n.toString(16)}`;

export async function provokeGatewayErrors(): Promise<Map<string, ProvokedError>> {
  const provoked = new Map<string, ProvokedError>();
  const node = await startAnvil({ chainId: CHAIN_ID });
  const chain = await buildLogChain(node, { blocks: 40, every: 1 });
  const emptyLogs = await startLyingFront(node.url, (call, forward) =>
    call.method === "eth_getLogs" ? { result: [] } : forward(),
  );
  // A provider whose log queries fail at the connection (the front resets them).
  const noLogs = await startLyingFront(node.url, (call, forward) => {
    if (call.method === "eth_getLogs") throw new Error("reset");
    return forward();
  });
  const hanging = await startFaultShim(node.url);
  await hanging.setFault({ kind: "hang" });
  const dead = "http://127.0.0.1:9";
  const stack = await startLocalStack({
    env: {},
    config: {
      api_keys: [
        { name: "indexer", sha256: sha256(KEY) },
        { name: "slow", sha256: sha256(SLOW_KEY), requests_per_minute: 1 },
      ],
      networks: {
        net: {
          chain_id: CHAIN_ID,
          max_body_bytes: 4096,
          max_batch: 3,
          providers: [{ name: "node", url: node.url, methods_deny: ["trace_*"] }],
        },
        down: { chain_id: CHAIN_ID, providers: [{ name: "gone", url: dead }] },
        // Three calls sent one by one (max_batch 1) spend the three upstream calls at once.
        budget: {
          chain_id: CHAIN_ID,
          max_upstream_calls: 3,
          providers: [
            { name: "gone-1", url: dead, max_batch: 1 },
            { name: "gone-2", url: `${dead}/2`, max_batch: 1 },
          ],
        },
        slow: {
          chain_id: CHAIN_ID,
          request_timeout_ms: 300,
          request_deadline_ms: 400,
          providers: [{ name: "hangs", url: hanging.url }],
        },
        batchpart: { chain_id: CHAIN_ID, providers: [{ name: "no-logs", url: noLogs.url }] },
        nosecret: {
          chain_id: CHAIN_ID,
          providers: [{ name: "keyed", url: `${node.url}/?key=\${UNSET_SECRET}` }],
        },
        logs: {
          chain_id: CHAIN_ID,
          max_upstream_calls: 3,
          providers: [{ name: "node", url: node.url, max_logs_range: 10 }],
        },
        logsbytes: {
          chain_id: CHAIN_ID,
          max_response_bytes: 2500,
          providers: [{ name: "node", url: node.url }],
        },
        bytes: {
          chain_id: CHAIN_ID,
          max_response_bytes: 300,
          providers: [{ name: "node", url: node.url }],
        },
        // A full node configured to keep state from block 30 only (docs/behaviour.md §16.5).
        pruned: {
          chain_id: CHAIN_ID,
          providers: [{ name: "full", url: node.url, history: { state_from: 30 } }],
        },
        missing: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "lagging-index-1", url: emptyLogs.url },
            { name: "lagging-index-2", url: `${emptyLogs.url}/2` },
          ],
        },
      },
    },
  });
  const client = new GatewayClient();
  try {
    // The monitor's snapshot, so the gateway knows the chain head (log queries check it).
    const monitorStore = new DynamoMonitorStore({
      client: stack.store.client,
      tableName: stack.store.tableName,
    });
    for (const network of ["logs", "missing"]) {
      await monitorStore.writeQuorum(network, {
        head: chain.head,
        headTimestamp: Math.floor(Date.now() / 1000),
        members: network === "logs" ? ["node"] : ["lagging-index-1", "lagging-index-2"],
        excluded: {},
        heads: {},
        computedAt: Date.now(),
      });
    }
    const send = async (
      name: string,
      path: string,
      calls: ProvokedError["calls"],
      options: { body?: string; key?: string | null } = {},
    ) => {
      const body =
        options.body ??
        (calls.length === 1
          ? rpcCall(calls[0]?.method ?? "", calls[0]?.params ?? [], 7)
          : JSON.stringify(
              calls.map((call, index) => ({ jsonrpc: "2.0", id: index + 1, ...call })),
            ));
      const key = options.key === undefined ? KEY : options.key;
      const answer = await client.send(
        `${stack.url}/${path}${key === null ? "" : `?key=${key}`}`,
        body,
      );
      provoked.set(name, {
        status: answer.status,
        body: answer.text,
        contentType: answer.headers["content-type"] ?? "",
        calls,
      });
    };
    const one = (method: string, params: unknown[] = []) => [{ method, params }];
    const logs = (from: number, to: number | string) =>
      one("eth_getLogs", [
        { fromBlock: hex(from), toBlock: typeof to === "number" ? hex(to) : to },
      ]);

    await send("parse error", "net", one("eth_blockNumber"), { body: "{not json" });
    await send("invalid request", "net", one("eth_blockNumber"), {
      body: '{"jsonrpc":"1.0","id":7,"method":"eth_blockNumber","params":[]}',
    });
    await send(
      "body over max_body_bytes",
      "net",
      one("eth_getBalance", [`0x${"11".repeat(20)}`, `0x${"0".repeat(5000)}`]),
    );
    await send(
      "batch over max_batch",
      "net",
      [0, 1, 2, 3].map(() => ({ method: "eth_chainId", params: [] })),
    );
    await send("unknown network", "nonet", one("eth_blockNumber"));
    await send("no API key", "net", one("eth_blockNumber"), { key: null });
    await send("API key over requests_per_minute", "net", one("eth_chainId"), { key: SLOW_KEY });
    await send("API key over requests_per_minute", "net", one("eth_chainId"), { key: SLOW_KEY });
    await send("method denied by the gateway", "net", one("admin_peers"));
    await send("method no provider serves", "net", one("trace_block", ["0x1"]));
    const signed = await privateKeyToAccount(
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    ).signTransaction({
      chainId: 1,
      type: "eip1559",
      to: `0x${"22".repeat(20)}`,
      gas: 21000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      nonce: 0,
    });
    await send(
      "transaction signed for another chain",
      "net",
      one("eth_sendRawTransaction", [signed]),
    );
    await send(
      "no provider in service (a secret did not resolve)",
      "nosecret",
      one("eth_blockNumber"),
    );
    await send("all providers failed", "down", one("eth_getBlockByNumber", ["0x1", false]));
    await send("all providers failed for one call of a batch", "batchpart", [
      { method: "eth_chainId", params: [] },
      { method: "eth_getLogs", params: [{ fromBlock: "0x1", toBlock: "0x2" }] },
    ]);
    await send("request deadline passed", "slow", one("eth_getBlockByNumber", ["0x1", false]));
    await send(
      "max_upstream_calls reached on retries of failing providers",
      "budget",
      [1, 2, 3].map((block) => ({ method: "eth_getBlockByNumber", params: [hex(block), false] })),
    );
    await send(
      "eth_getLogs toBlock that is no block number",
      "logs",
      logs(0, `0x${"f".repeat(20)}`),
    );
    await send("eth_getLogs toBlock above the chain head", "logs", logs(0, chain.head + 1000));
    await send(
      "eth_getLogs needing more pieces than max_upstream_calls",
      "logs",
      logs(0, chain.head),
    );
    await send("eth_getLogs answer over max_response_bytes", "logsbytes", logs(0, chain.head));
    await send(
      "upstream answer over max_response_bytes",
      "bytes",
      one("eth_getBlockByNumber", ["0x1", true]),
    );
    await send(
      "state at a block no provider keeps",
      "pruned",
      one("eth_getBalance", [`0x${"11".repeat(20)}`, "0x1"]),
    );
    await send(
      "eth_getLogs every provider answers without the logs (missing data)",
      "missing",
      logs(chain.head - 5, chain.head),
    );

    const block = one("eth_getBlockByNumber", ["0x1", true]);
    const tooLarge = answerTooLargeBody(
      parseRequest(rpcCall("eth_getBlockByNumber", ["0x1", true], 7), {
        maxBodyBytes: 1e9,
        maxBatch: 100,
      }),
      7_000_000,
    );
    provoked.set("answer over Lambda's 6 MB", { status: 200, body: tooLarge, calls: block });
    const internal = internalErrorResult(rpcEvent(rpcCall("eth_blockNumber", [], 7), "net"));
    provoked.set("internal gateway error", {
      status: internal.statusCode ?? 500,
      body: String(internal.body),
      calls: one("eth_blockNumber"),
    });
    for (const [name, timeouts] of [
      ["API Gateway integration timeout", { integrationTimeoutMs: 50, functionTimeoutMs: 10_000 }],
      ["Lambda function timeout", { integrationTimeoutMs: 10_000, functionTimeoutMs: 50 }],
    ] as const) {
      const api = await startApiGateway({
        ...timeouts,
        handler: () => new Promise((resolve) => setTimeout(resolve, 300)),
      });
      try {
        const answer = await client.send(`${api.url}/net`, rpcCall("eth_blockNumber", [], 7));
        provoked.set(name, {
          status: answer.status,
          body: answer.text,
          calls: one("eth_blockNumber"),
        });
      } finally {
        await api.close();
      }
    }
  } finally {
    await client.close();
    await stack.close();
    await Promise.all([emptyLogs.close(), noLogs.close(), hanging.close()]);
    await node.stop();
  }
  return provoked;
}
