import { FetchRequest, JsonRpcProvider, Network } from "ethers";
import { createPublicClient, http, type PublicClient } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";

/**
 * The gateway end to end on real parts: three anvil nodes (two primaries, one backup),
 * dynalite, the proxy handler behind the API Gateway emulator, and viem and ethers as
 * clients, the way users point them at it.
 */

const CHAIN_ID = 31337;
/** Init code that emits LOG1(topic 7, data 42) while deploying: a log every node has. */
const LOG_EMITTER = "0x602a600052600760206000a100";
const TOPIC_7 = `0x${"7".padStart(64, "0")}` as const;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

let nodes: AnvilNode[] = [];
let stack: LocalStack;
let url: string;
let viem: PublicClient;

async function post(body: string, path = "/devnet", headers: Record<string, string> = {}) {
  const response = await fetch(`${stack.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

beforeAll(async () => {
  nodes = await Promise.all([0, 1, 2].map(() => startAnvil({ chainId: CHAIN_ID })));
  // The same deployment on every node, so each holds the same log (independent chains).
  for (const node of nodes) {
    await node.rpc("eth_sendTransaction", [{ from: DEPLOYER, data: LOG_EMITTER }]);
    await node.rpc("anvil_mine", ["0x5"]);
  }
  const [a, b, backup] = nodes;
  stack = await startLocalStack({
    config: {
      check_interval_seconds: 5,
      max_body_bytes: 4096,
      max_batch: 20,
      networks: {
        devnet: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "anvil-a", url: a?.url ?? "", priority: 2 },
            { name: "anvil-b", url: b?.url ?? "", priority: 1 },
            { name: "anvil-backup", url: backup?.url ?? "", backup: true },
          ],
        },
      },
    },
  });
  url = `${stack.url}/devnet`;
  viem = createPublicClient({
    chain: foundry,
    transport: http(url, { batch: true, retryCount: 0 }),
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all(nodes.map((node) => node.stop()));
});

describe("viem through the gateway", () => {
  it("reads chain id, block number, a block and logs (one batched HTTP request)", async () => {
    const [chainId, blockNumber, block, logs] = await Promise.all([
      viem.getChainId(),
      viem.getBlockNumber(),
      viem.getBlock({ blockTag: "latest" }),
      viem.getLogs({ fromBlock: 0n, toBlock: "latest" }),
    ]);
    expect(chainId).toBe(CHAIN_ID);
    expect(blockNumber).toBeGreaterThanOrEqual(6n);
    expect(block.number).toBe(blockNumber);
    expect(logs).toHaveLength(1);
    expect(logs[0]?.topics).toEqual([TOPIC_7]);
  });

  it("a batch of 10 comes back in the caller's order", async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => viem.getBlock({ blockNumber: BigInt(i % 6) })),
    );
    expect(results.map((block) => block.number)).toEqual(
      Array.from({ length: 10 }, (_, i) => BigInt(i % 6)),
    );
  });
});

describe("ethers through the gateway", () => {
  it("reads chain id, block number, a block and logs", async () => {
    const request = new FetchRequest(url);
    const provider = new JsonRpcProvider(request, undefined, {
      staticNetwork: Network.from(CHAIN_ID),
      batchMaxCount: 10,
    });
    const [network, blockNumber, block, logs] = await Promise.all([
      provider.getNetwork(),
      provider.getBlockNumber(),
      provider.getBlock("latest"),
      provider.getLogs({ fromBlock: 0, toBlock: "latest", topics: [TOPIC_7] }),
    ]);
    expect(network.chainId).toBe(BigInt(CHAIN_ID));
    expect(blockNumber).toBeGreaterThanOrEqual(6);
    expect(block?.number).toBe(blockNumber);
    expect(logs).toHaveLength(1);
    provider.destroy();
  });
});

describe("raw JSON-RPC", () => {
  it("a raw batch with mixed ids keeps the caller's ids and order, answers invalid members in place", async () => {
    const batch = [
      { jsonrpc: "2.0", id: "z", method: "eth_chainId" },
      { jsonrpc: "2.0", id: 7, method: "eth_blockNumber" },
      5,
      { jsonrpc: "2.0", id: null, method: "net_version" },
      { jsonrpc: "2.0", id: "deny", method: "admin_peers" },
      { jsonrpc: "2.0", method: "eth_chainId" },
      { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [DEPLOYER, "latest"] },
    ];
    const answer = await post(JSON.stringify(batch));
    expect(answer.status).toBe(200);
    const members = JSON.parse(answer.text) as Array<{
      id: unknown;
      result?: unknown;
      error?: { code: number };
    }>;
    // The notification (no id) gets no answer.
    expect(members.map((member) => member.id)).toEqual(["z", 7, null, null, "deny", 1]);
    expect(members[0]?.result).toBe("0x7a69");
    expect(members[1]?.result).toBe(await nodes[0]?.rpc("eth_blockNumber", []));
    expect(members[2]?.error?.code).toBe(-32600);
    expect(members[3]?.result).toBe(String(CHAIN_ID));
    expect(members[4]?.error?.code).toBe(-32601);
    expect(members[5]?.result).toBe(await nodes[0]?.rpc("eth_getBalance", [DEPLOYER, "latest"]));
    expect(answer.headers.get("x-gateway-provider")).toBe("anvil-a");
    expect(answer.headers.get("x-gateway-attempts")).toBe("1");
  });

  it('regression: "params": null is no params, as the node reads it (it was HTTP 400)', async () => {
    const body = '{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":null}';
    const direct = await fetch(nodes[0]?.url ?? "", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    }).then((response) => response.text());
    const through = await post(body);
    expect(through.status).toBe(200);
    expect(through.text).toBe(direct);
  });

  it('regression: a call without "jsonrpc" is refused as the node refuses it (it was forwarded), the batch\'s others served', async () => {
    const alone = await post('{"id":5,"method":"eth_chainId","params":[]}');
    expect(alone.status).toBe(400);
    expect(JSON.parse(alone.text)).toMatchObject({ id: 5, error: { code: -32600 } });
    expect(alone.headers.get("x-gateway-attempts")).toBeNull();
    const node = await fetch(nodes[0]?.url ?? "", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"id":5,"method":"eth_chainId","params":[]}',
    }).then((response) => response.json());
    expect(node).toMatchObject({ id: 5, error: { code: -32600 } });
    const batch = await post(
      '[{"id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}]',
    );
    expect(JSON.parse(batch.text)).toMatchObject([
      { id: 1, error: { code: -32600 } },
      { id: 2, result: "0x7a69" },
    ]);
  });

  it("returns the upstream's bytes unchanged apart from the id", async () => {
    const direct = await fetch(nodes[0]?.url ?? "", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x1",true]}',
    }).then((response) => response.text());
    const through = await post(
      '{"jsonrpc":"2.0","id":"mine","method":"eth_getBlockByNumber","params":["0x1",true]}',
    );
    expect(through.text).toBe(direct.replace('"id":1', '"id":"mine"'));
  });

  describe("GET mode answers what the node answers, with Cache-Control", () => {
    const UNKNOWN_HASH = `0x${"ab".repeat(32)}`;
    /** Block 1 of anvil-a and its one transaction (the log emitter's deployment). */
    let block1: { hash: string; transactions: string[] };

    beforeAll(async () => {
      block1 = (await nodes[0]?.rpc("eth_getBlockByNumber", ["0x1", false])) as typeof block1;
    });

    const IMMUTABLE = "public, max-age=31536000, immutable";
    // This stack runs no monitor: with no chain position (no finalized block known), answers
    // about blocks are never cached, by number or by hash; the chain id always is. The tip is
    // true for a block time (block_time_seconds, 12 by default).
    const BLOCK_TIME = "public, max-age=12";
    it.each<[string, string, () => unknown[] | null, string]>([
      ["a balance", "eth_getBalance", () => [DEPLOYER, "latest"], "no-store"],
      ["the head", "eth_blockNumber", () => [], BLOCK_TIME],
      ["a block by number", "eth_getBlockByNumber", () => ["0x1", false], "no-store"],
      ["the chain id", "eth_chainId", () => [], IMMUTABLE],
      ["the chain id, no params segment", "eth_chainId", () => null, IMMUTABLE],
      ["a block by hash", "eth_getBlockByHash", () => [block1.hash, false], "no-store"],
      [
        "an unknown block by hash (null)",
        "eth_getBlockByHash",
        () => [UNKNOWN_HASH, false],
        "no-store",
      ],
      [
        "a transaction by hash",
        "eth_getTransactionByHash",
        () => [block1.transactions[0]],
        "no-store",
      ],
      [
        "an unknown transaction (null)",
        "eth_getTransactionByHash",
        () => [UNKNOWN_HASH],
        "no-store",
      ],
      [
        "a receipt by hash",
        "eth_getTransactionReceipt",
        () => [block1.transactions[0]],
        "no-store",
      ],
      ["an unknown receipt (null)", "eth_getTransactionReceipt", () => [UNKNOWN_HASH], "no-store"],
    ])("%s: %s", async (_name, method, params, cacheControl) => {
      const given = params();
      const path =
        given === null
          ? `${url}/get/${method}`
          : `${url}/get/${method}/${encodeURIComponent(JSON.stringify(given))}`;
      const answer = await fetch(path);
      expect(answer.status).toBe(200);
      // The chain id asked a second time is answered from memory: no provider answered it.
      const fromMemory = answer.headers.get("x-gateway-cache") === "hit-memory";
      expect(answer.headers.get("x-gateway-provider")).toBe(fromMemory ? "" : "anvil-a");
      // GET mode sends the call with id 1: the node's own answer to it, byte for byte.
      const own = await fetch(nodes[0]?.url ?? "", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: given ?? [] }),
      }).then((response) => response.text());
      expect(await answer.text()).toBe(own);
      expect(answer.headers.get("cache-control")).toBe(cacheControl);
    });
  });

  it("serves the status JSON in the shape of docs/behaviour.md §2", async () => {
    const response = await fetch(`${url}/status`);
    const status = (await response.json()) as Record<string, unknown> & {
      providers: Array<Record<string, unknown>>;
    };
    expect(status).toMatchObject({
      network: "devnet",
      chain_id: CHAIN_ID,
      config_source: { kind: "file" },
      monitor: { stale: true },
      active_provider: "anvil-a",
    });
    expect(Object.keys(status)).toEqual(
      expect.arrayContaining([
        "network",
        "chain_id",
        "config_source",
        "monitor",
        "quorum",
        "active_provider",
        "providers",
      ]),
    );
    expect(status.providers.map((provider) => provider.name)).toEqual([
      "anvil-a",
      "anvil-b",
      "anvil-backup",
    ]);
    for (const provider of status.providers) {
      expect(Object.keys(provider)).toEqual(
        expect.arrayContaining([
          "name",
          "url",
          "priority",
          "backup",
          "state",
          "in_quorum",
          "quorum_reason",
          "head",
          "strikes",
          "blacklist",
          "capability_blacklists",
          "last_probe",
          "stats",
        ]),
      );
    }
    const all = (await fetch(`${stack.url}/status`).then((r) => r.json())) as {
      networks: unknown[];
    };
    expect(all.networks).toHaveLength(1);
    const health = await fetch(`${stack.url}/health`);
    expect(health.status).toBe(200);
  });
});

describe("gateway errors of docs/behaviour.md §2 carry the caller's id", () => {
  it.each([
    ["body not JSON", "/devnet", "{oops", 400, -32700, null],
    ["not JSON-RPC", "/devnet", '{"jsonrpc":"2.0","id":4,"params":[]}', 400, -32600, 4],
    [
      "wrong params type",
      "/devnet",
      '{"jsonrpc":"2.0","id":"p","method":"eth_call","params":3}',
      400,
      -32600,
      "p",
    ],
    [
      "method denied",
      "/devnet",
      '{"jsonrpc":"2.0","id":9,"method":"personal_sign","params":[]}',
      200,
      -32601,
      9,
    ],
    [
      "oversized body",
      "/devnet",
      `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":["${"0".repeat(5000)}"]}`,
      400,
      -32600,
      null,
    ],
    [
      "batch over max_batch",
      "/devnet",
      JSON.stringify(
        Array.from({ length: 21 }, (_, id) => ({ jsonrpc: "2.0", id, method: "eth_chainId" })),
      ),
      400,
      -32600,
      null,
    ],
    [
      "unknown network",
      "/nosuchnet",
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
      404,
      -32600,
      null,
    ],
    ["unknown route", "/devnet/what/ever", "{}", 404, -32600, null],
  ])("%s", async (_name, path, body, status, code, id) => {
    const answer = await post(body, path);
    expect(answer.status).toBe(status);
    const error = JSON.parse(answer.text) as {
      jsonrpc: string;
      id: unknown;
      error: { code: number; message: string };
    };
    expect(error).toMatchObject({ jsonrpc: "2.0", id, error: { code } });
    expect(answer.text).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it("a limit error says the limit", async () => {
    const answer = await post(
      `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":["${"0".repeat(5000)}"]}`,
    );
    expect(answer.text).toContain("max_body_bytes");
  });
});

describe("failover", () => {
  it("kill the primary mid-run: every following request still succeeds", async () => {
    // anvil-b two blocks ahead, so each answer says which node gave it.
    await nodes[1]?.rpc("anvil_mine", ["0x2"]);
    const headOf = async (node: AnvilNode | undefined) =>
      (await node?.rpc("eth_blockNumber", [])) as string;
    const heads = [await headOf(nodes[0]), await headOf(nodes[1])];
    expect(heads[0]).not.toBe(heads[1]);
    const served: string[] = [];
    for (let i = 0; i < 30; i++) {
      if (i === 10) nodes[0]?.kill();
      const answer = await post(
        `{"jsonrpc":"2.0","id":${i},"method":"eth_blockNumber","params":[]}`,
      );
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text).toBe(`{"jsonrpc":"2.0","id":${i},"result":"${heads[i < 10 ? 0 : 1]}"}`);
      served.push(answer.headers.get("x-gateway-provider") ?? "");
    }
    expect(served.slice(0, 10).every((name) => name === "anvil-a")).toBe(true);
    expect(served.slice(10).every((name) => name === "anvil-b")).toBe(true);
    const status = (await fetch(`${url}/status`).then((r) => r.json())) as {
      providers: Array<{
        name: string;
        state: string;
        strikes: number;
        blacklist: { reason: string } | null;
      }>;
    };
    const primary = status.providers.find((provider) => provider.name === "anvil-a");
    expect(primary).toMatchObject({
      state: "blacklisted",
      strikes: 1,
      blacklist: { reason: "connection" },
    });
  });
});
