import { createHash } from "node:crypto";
import { createPublicClient, http, keccak256, type Log, parseAbi, toHex } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { tableKeys } from "../../support/gateway-table.ts";
import type { LyingFront } from "../../support/lying-front.ts";
import { startOwnFiltersFront } from "../../support/own-filters-front.ts";
import { waitUntil } from "../../support/wait-until.ts";

/**
 * Filters served by the gateway (docs/behaviour.md §14) end to end: a real anvil behind two
 * fault-injecting fronts, the gateway's handlers over dynalite, and viem's own filter flows.
 * `watchContractEvent` (filters, its default) sees every log exactly once while the provider
 * that would have held its filter is down; a filter from `latest` to `latest` reports the new
 * logs; one filter polled in turn through two proxy runtimes over one DynamoDB (two Lambda
 * containers) reports each log once; an unknown id is geth's "filter not found".
 */

// A contract that logs its calldata as two topics (LOG2): `Ping(uint256 indexed n)` when the
// first word is that event's topic.
const RUNTIME = "60203560003560006000a200";
const INIT = `0x600c600c600039600c6000f3${RUNTIME}`;
const ABI = parseAbi(["event Ping(uint256 indexed n)"]);
const PING = keccak256(toHex("Ping(uint256)"));

let node: AnvilNode;
let nodes: LyingFront[];
let primary: FaultShim;
let secondary: FaultShim;
let stack: LocalStack;
let other: LocalStack;
let keyed: LocalStack;
let contract: `0x${string}`;
let from: string;

const config = (): ConfigInput => ({
  networks: {
    devnet: {
      chain_id: 31337,
      block_time_seconds: 1,
      providers: [
        { name: "primary", url: primary.url, priority: 2 },
        { name: "secondary", url: secondary.url, priority: 1 },
      ],
    },
  },
});

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  // Two providers on one chain, each a node of its own as far as filters go, behind a fault front.
  nodes = await Promise.all([startOwnFiltersFront(node.url), startOwnFiltersFront(node.url)]);
  [primary, secondary] = (await Promise.all(nodes.map((front) => startFaultShim(front.url)))) as [
    FaultShim,
    FaultShim,
  ];
  stack = await startLocalStack({ config: config() });
  // A second proxy runtime over the same table: another Lambda container, with nothing shared
  // in memory with the first.
  other = await startLocalStack({ config: config(), dynamodb: stack.dynamo.endpoint });
  // The same network behind API keys: filters are kept per key.
  const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");
  keyed = await startLocalStack({
    config: {
      ...config(),
      api_keys: [
        { name: "alice", sha256: sha256("alice-key") },
        { name: "bob", sha256: sha256("bob-key") },
      ],
    },
    dynamodb: stack.dynamo.endpoint,
  });
  [from] = (await node.rpc<string[]>("eth_accounts")) as [string];
  const deploy = await node.rpc<string>("eth_sendTransaction", [{ from, data: INIT }]);
  contract = (await receipt(deploy)).contractAddress;
}, 60_000);

afterAll(async () => {
  await keyed?.close();
  await other?.close();
  await stack?.close();
  await Promise.all([primary?.close(), secondary?.close()]);
  await Promise.all((nodes ?? []).map((front) => front.close()));
  await node?.stop();
});

async function receipt(hash: string): Promise<{ contractAddress: `0x${string}` }> {
  let found: { contractAddress: `0x${string}` } | null = null;
  await waitUntil(async () => {
    found = await node.rpc("eth_getTransactionReceipt", [hash]);
    return found !== null;
  });
  return found as unknown as { contractAddress: `0x${string}` };
}

/** Pings with these numbers, one transaction (one block) each. */
async function ping(...numbers: number[]): Promise<void> {
  for (const n of numbers) {
    const data = `${PING}${n.toString(16).padStart(64, "0")}`;
    await node.rpc("eth_sendTransaction", [{ from, to: contract, data, gas: "0x20000" }]);
  }
}

async function rpc(url: string, method: string, params: unknown[] = [], key?: string) {
  const response = await fetch(`${url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
}

const filterCalls = (shim: FaultShim) =>
  shim.received.flatMap((request) => request.methods).filter((method) => /Filter/.test(method));

describe("viem's watchContractEvent through the gateway", () => {
  it("regression: the filter lived on the provider that installed it, which went down, and viem's reinstalled filter missed the logs in between; now every log arrives exactly once", async () => {
    const client = createPublicClient({
      chain: foundry,
      transport: http(`${stack.url}/devnet`),
      pollingInterval: 100,
    });
    const seen: Log[] = [];
    const errors: Error[] = [];
    const unwatch = client.watchContractEvent({
      address: contract,
      abi: ABI,
      eventName: "Ping",
      onLogs: (logs) => seen.push(...logs),
      onError: (error) => errors.push(error),
    });
    const numbers = () =>
      seen.map((log) => Number((log as unknown as { args: { n: bigint } }).args.n));
    try {
      // viem installs its filter at once; its logs are those of the blocks after.
      await waitUntil(async () => (await filtersStored()) > 0 || filterCalls(primary).length > 0);
      await ping(1, 2, 3);
      await waitUntil(async () => numbers().length >= 3);
      await primary.setFault({ kind: "down" });
      await ping(4, 5, 6);
      await waitUntil(async () => numbers().length >= 6);
      await primary.setFault(null);
      await secondary.setFault({ kind: "down" });
      await ping(7, 8);
      await waitUntil(async () => numbers().length >= 8);
      await secondary.setFault(null);
    } finally {
      unwatch();
    }
    expect(numbers()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Each log is the node's own, on the canonical chain.
    const onChain = await node.rpc<Array<{ transactionHash: string; blockHash: string }>>(
      "eth_getLogs",
      [{ address: contract, fromBlock: "0x0", toBlock: "latest" }],
    );
    expect(seen.map((log) => [log.transactionHash, log.blockHash])).toEqual(
      onChain.map((log) => [log.transactionHash, log.blockHash]),
    );
    expect(errors.filter((error) => /filter not found/i.test(error.message))).toEqual([]);
    // No provider held a filter: the gateway answered every filter call itself.
    expect([...filterCalls(primary), ...filterCalls(secondary)]).toEqual([]);
  });
});

/** Filters the gateway holds in its table. */
async function filtersStored(): Promise<number> {
  const keys = await tableKeys({ client: stack.store.client, tableName: stack.store.tableName });
  return keys.filter((key) => key.startsWith("FILTER#devnet#")).length;
}

describe("a filter's tags and ids", () => {
  it("a filter from latest to latest reports the logs of the blocks mined after it", async () => {
    const id = (
      await rpc(stack.url, "eth_newFilter", [
        { address: contract, fromBlock: "latest", toBlock: "latest" },
      ])
    ).result;
    expect(await rpc(stack.url, "eth_getFilterChanges", [id])).toMatchObject({ result: [] });
    const head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
    await ping(21, 22);
    const got: unknown[] = [];
    await waitUntil(async () => {
      got.push(...((await rpc(stack.url, "eth_getFilterChanges", [id])).result as unknown[]));
      return got.length >= 2;
    });
    const expected = await node.rpc("eth_getLogs", [
      { address: contract, fromBlock: toHex(head + 1), toBlock: "latest" },
    ]);
    expect(got).toEqual(expected);
    expect((await rpc(stack.url, "eth_getFilterLogs", [id])).result).toEqual(expected);
  });

  it("an unknown id is geth's filter not found, which viem answers by installing a new filter", async () => {
    const unknown = `0x${"0".repeat(4)}${"ab".repeat(16)}`;
    expect((await rpc(stack.url, "eth_getFilterChanges", [unknown])).error).toEqual({
      code: -32000,
      message: "filter not found",
    });
    expect((await rpc(stack.url, "eth_uninstallFilter", [unknown])).result).toBe(false);
  });
});

describe("one filter, two containers", () => {
  it("polled in turn through two proxy runtimes over one DynamoDB, and by both at once, it reports each log once", async () => {
    const id = (await rpc(stack.url, "eth_newFilter", [{ address: contract }])).result;
    const got: Array<{ transactionHash: string }> = [];
    const poll = async (url: string) => {
      const answer = await rpc(url, "eth_getFilterChanges", [id]);
      expect(answer.error).toBeUndefined();
      got.push(...(answer.result as Array<{ transactionHash: string }>));
    };
    const head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
    for (let round = 0; round < 4; round++) {
      await ping(100 + round);
      await poll(round % 2 === 0 ? other.url : stack.url);
    }
    await ping(104, 105);
    await Promise.all([poll(stack.url), poll(other.url), poll(stack.url), poll(other.url)]);
    // The concurrent polls may have left the last block for a later one.
    await waitUntil(async () => {
      await poll(other.url);
      return got.length >= 6;
    });
    const onChain = await node.rpc<Array<{ transactionHash: string }>>("eth_getLogs", [
      { address: contract, fromBlock: toHex(head + 1), toBlock: "latest" },
    ]);
    expect(got.map((log) => log.transactionHash)).toEqual(
      onChain.map((log) => log.transactionHash),
    );
    expect([...filterCalls(primary), ...filterCalls(secondary)]).toEqual([]);
  });
});

describe("filters behind API keys", () => {
  it("belong to the key that installed them: another key's poll of the id is filter not found", async () => {
    const id = (await rpc(keyed.url, "eth_newBlockFilter", [], "alice-key")).result;
    expect((await rpc(keyed.url, "eth_getFilterChanges", [id], "bob-key")).error).toEqual({
      code: -32000,
      message: "filter not found",
    });
    expect((await rpc(keyed.url, "eth_uninstallFilter", [id], "bob-key")).result).toBe(false);
    await ping(200);
    const hashes = (await rpc(keyed.url, "eth_getFilterChanges", [id], "alice-key")).result;
    expect(hashes).toEqual([
      (await node.rpc<{ hash: string }>("eth_getBlockByNumber", ["latest", false])).hash,
    ]);
    const keys = await tableKeys({ client: stack.store.client, tableName: stack.store.tableName });
    expect(keys.filter((key) => key.startsWith("FILTER#devnet#alice "))).toHaveLength(1);
  });
});

describe("what one request may make the filter store do", () => {
  it("regression: a batch of 100 filter calls made 100 reads and writes of the filter store; now a request serves 16 of them, the rest -32005 in place with nothing done", async () => {
    const post = async (body: unknown) =>
      (await (
        await fetch(`${stack.url}/devnet`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      ).json()) as Array<{
        id: number;
        result?: unknown;
        error?: { code: number; message: string };
      }>;
    const live = async () =>
      (await tableKeys({ client: stack.store.client, tableName: stack.store.tableName })).filter(
        (key) => key.startsWith("FILTER#devnet#* "),
      ).length;
    const before = await live();
    const installs = await post(
      Array.from({ length: 20 }, (_, id) => ({ jsonrpc: "2.0", id, method: "eth_newBlockFilter" })),
    );
    const ids = installs.flatMap((answer) =>
      typeof answer.result === "string" ? [answer.result] : [],
    );
    expect(ids).toHaveLength(16);
    expect(installs.slice(16).map((answer) => answer.error?.code)).toEqual([
      -32005, -32005, -32005, -32005,
    ]);
    expect(installs[16]?.error?.message).toContain("16 filter calls one request may make");
    expect((await live()) - before).toBeLessThanOrEqual(16);
    const status = (await (await fetch(`${stack.url}/devnet/status`)).json()) as {
      guards: Record<string, number>;
    };
    expect(status.guards.filter_calls_per_request).toBe(4);
    // Polls and uninstalls count alike; the ones refused moved and removed nothing.
    const removed = await post(
      [...ids, ...ids.slice(0, 4)].map((id, n) => ({
        jsonrpc: "2.0",
        id: n,
        method: "eth_uninstallFilter",
        params: [id],
      })),
    );
    expect(removed.map((answer) => answer.result ?? answer.error?.code)).toEqual([
      ...ids.map(() => true),
      -32005,
      -32005,
      -32005,
      -32005,
    ]);
  });
});
