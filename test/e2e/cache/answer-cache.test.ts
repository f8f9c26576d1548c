import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { answerKey } from "../../../functions/core/request/cache/cache-class.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * The answer cache end to end (docs/behaviour.md §11) on real parts: an anvil node whose
 * `finalized` block trails its head by 64 blocks, the monitor writing the chain position,
 * dynalite, and the proxy behind the API Gateway emulator. Answers come back from memory, then
 * from the shared tier in a fresh stack on the same DynamoDB, byte for byte; after a reorg
 * (anvil_reorg), no answer about a replaced block is served once the monitor has seen it, and
 * none ever came from the shared tier. GET mode's Cache-Control follows the classes.
 */

const CHAIN_ID = 31337;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const OTHER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const KEY = "cache-test-key";
const KEY_SHA256 = createHash("sha256").update(KEY).digest("hex");

let node: AnvilNode;
let stack: LocalStack;
/** The transaction mined in block 96 (then replaced by the reorg). */
let sentTx: string;
const hex = (n: number) => `0x${n.toString(16)}`;

function config(extra: Partial<ConfigInput> = {}): ConfigInput {
  return {
    // The timer ticks once at start; the tests tick after that.
    check_interval_seconds: 3600,
    // The proxy reads the chain position the monitor wrote almost at once.
    state_cache_ms: 50,
    ...extra,
    networks: {
      devnet: {
        chain_id: CHAIN_ID,
        // Long enough that unfinalized answers outlive the test unless a reorg drops them.
        block_time_seconds: 60,
        providers: [{ name: "anvil", url: node.url }],
      },
    },
  };
}

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly cache: string | null;
  readonly provider: string | null;
  readonly cacheControl: string | null;
}

async function post(target: LocalStack, method: string, params: unknown[], id: unknown = 1) {
  const response = await fetch(`${target.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  return read(response);
}

async function get(target: LocalStack, method: string, params: unknown[]) {
  const path = `${target.url}/devnet/get/${method}/${encodeURIComponent(JSON.stringify(params))}`;
  return read(await fetch(path, { headers: { "x-api-key": KEY } }));
}

async function read(response: Response): Promise<Answer> {
  return {
    status: response.status,
    text: await response.text(),
    cache: response.headers.get("x-gateway-cache"),
    provider: response.headers.get("x-gateway-provider"),
    cacheControl: response.headers.get("cache-control"),
  };
}

/** The node's own answer to the same call with id 1, as text. */
async function direct(method: string, params: unknown[]): Promise<string> {
  const response = await fetch(node.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return response.text();
}

const hashOf = (answer: Answer) =>
  (JSON.parse(answer.text) as { result: { hash?: string; blockHash?: string } | null }).result;

/** One monitor tick, then time for the proxy's state cache to see what it wrote. */
async function tick(target: LocalStack): Promise<void> {
  await target.monitor?.monitor.tick();
  await sleep(60);
  // A state read older than state_cache_ms starts a refresh and is served meanwhile: this
  // request starts it, and the next ones see the fresh chain position.
  await post(target, "eth_chainId", []);
  await sleep(100);
}

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  // Blocks 1–95 empty, block 96 with one transfer, 97–100 empty: anvil's finalized block is
  // 64 below its latest, so 36, and 96–100 are above it.
  await node.rpc("anvil_mine", [hex(95)]);
  sentTx = await node.rpc<string>("eth_sendTransaction", [
    { from: DEPLOYER, to: OTHER, value: "0x1" },
  ]);
  await node.rpc("anvil_mine", [hex(4)]);
  expect(await node.rpc("eth_blockNumber", [])).toBe(hex(100));
  stack = await startLocalStack({
    monitor: true,
    writeMetrics: () => undefined,
    config: config({ api_keys: [{ name: "tests", sha256: KEY_SHA256 }] }),
  });
  await tick(stack);
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await node?.stop();
});

describe("memory, then the shared tier of a fresh stack", () => {
  it("a finalized block: the provider once, then memory, byte for byte with the caller's id", async () => {
    const own = await direct("eth_getBlockByNumber", [hex(30), true]);
    const first = await post(stack, "eth_getBlockByNumber", [hex(30), true], "first");
    const second = await post(stack, "eth_getBlockByNumber", [hex(30), true], 2);
    const third = await post(stack, "eth_getBlockByNumber", [hex(30), true], "ü 3");
    expect([first.cache, second.cache, third.cache]).toEqual(["miss", "hit-memory", "hit-memory"]);
    expect(first.provider).toBe("anvil");
    expect(second.provider).toBe("");
    expect(first.text).toBe(own.replace('"id":1', '"id":"first"'));
    expect(second.text).toBe(own.replace('"id":1', '"id":2'));
    expect(third.text).toBe(own.replace('"id":1', '"id":"ü 3"'));
  });

  it("a restarted gateway on the same DynamoDB answers from the shared tier, then from memory", async () => {
    await stack.answers.idle();
    const restarted = await startLocalStack({
      dynamodb: stack.dynamo.endpoint,
      writeMetrics: () => undefined,
      config: config({ api_keys: [{ name: "tests", sha256: KEY_SHA256 }] }),
    });
    try {
      const own = await direct("eth_getBlockByNumber", [hex(30), true]);
      const shared = await post(restarted, "eth_getBlockByNumber", [hex(30), true], 7);
      const memory = await post(restarted, "eth_getBlockByNumber", [hex(30), true], 8);
      expect([shared.cache, memory.cache]).toEqual(["hit-shared", "hit-memory"]);
      expect(shared.provider).toBe("");
      expect(shared.text).toBe(own.replace('"id":1', '"id":7'));
      expect(memory.text).toBe(own.replace('"id":1', '"id":8'));
    } finally {
      await restarted.close();
    }
  });
});

describe("GET mode's Cache-Control follows the classes (API keys configured: private)", () => {
  it.each<[string, string, () => unknown[], string]>([
    ["the chain id", "eth_chainId", () => [], "private, max-age=31536000, immutable"],
    [
      "a finalized block",
      "eth_getBlockByNumber",
      () => [hex(20), false],
      "private, max-age=31536000, immutable",
    ],
    [
      "a block above finalized",
      "eth_getBlockByNumber",
      () => [hex(97), false],
      "private, max-age=60",
    ],
    ["the gas price", "eth_gasPrice", () => [], "private, max-age=60"],
    ["a block above the head", "eth_getBlockByNumber", () => [hex(500), false], "no-store"],
    [
      "a transaction above finalized",
      "eth_getTransactionByHash",
      () => [sentTx],
      "private, max-age=60",
    ],
    [
      "an unknown transaction",
      "eth_getTransactionByHash",
      () => [`0x${"ab".repeat(32)}`],
      "no-store",
    ],
  ])("%s: %s", async (_name, method, params, cacheControl) => {
    const answer = await get(stack, method, params());
    expect(answer.status).toBe(200);
    expect(answer.cacheControl).toBe(cacheControl);
  });

  it("a pending transaction (blockHash null) is no-store", async () => {
    await node.rpc("evm_setAutomine", [false]);
    try {
      const pending = await node.rpc<string>("eth_sendTransaction", [
        { from: DEPLOYER, to: OTHER, value: "0x2" },
      ]);
      const answer = await get(stack, "eth_getTransactionByHash", [pending]);
      expect(JSON.parse(answer.text)).toMatchObject({ result: { blockHash: null } });
      expect(answer.cacheControl).toBe("no-store");
      expect(answer.cache).toBe("miss");
    } finally {
      await node.rpc("anvil_dropAllTransactions", []);
      await node.rpc("evm_setAutomine", [true]);
    }
  });
});

describe("a reorg replaces blocks 96–100", () => {
  it("no answer about a replaced block is served once the monitor saw it, and none from the shared tier", async () => {
    const before = {
      block: await post(stack, "eth_getBlockByNumber", [hex(96), false]),
      tx: await post(stack, "eth_getTransactionByHash", [sentTx]),
    };
    expect(before.block.cache).toBe("miss");
    // Cached in memory as unfinalized: served again until something says otherwise.
    expect((await post(stack, "eth_getBlockByNumber", [hex(96), false])).cache).toBe("hit-memory");
    expect((await post(stack, "eth_getTransactionByHash", [sentTx])).cache).toBe("hit-memory");
    const oldHash = hashOf(before.block)?.hash;

    // Blocks 96–100 replaced: the new 96 carries another transfer, the old one is gone.
    await node.rpc("anvil_reorg", [5, [[{ from: DEPLOYER, to: OTHER, value: "0x3" }, 0]]]);
    const newHash = (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [hex(96), false]))
      .hash;
    expect(newHash).not.toBe(oldHash);

    await tick(stack);
    const after = await post(stack, "eth_getBlockByNumber", [hex(96), false]);
    expect(after.cache).toBe("miss");
    expect(hashOf(after)?.hash).toBe(newHash);
    const tx = await post(stack, "eth_getTransactionByHash", [sentTx]);
    expect(tx.cache).toBe("miss");
    expect(tx.text).toBe(await direct("eth_getTransactionByHash", [sentTx]));
    expect(tx.text).not.toContain(oldHash);

    // The replaced blocks were never immutable: the shared tier holds nothing about them.
    await stack.answers.idle();
    const keys = [96, 97, 98, 99, 100].flatMap((n) => [
      answerKey(CHAIN_ID, "eth_getBlockByNumber", [hex(n), false]),
      answerKey(CHAIN_ID, "eth_getBlockByNumber", [hex(n), true]),
    ]);
    keys.push(answerKey(CHAIN_ID, "eth_getTransactionByHash", [sentTx]));
    expect((await stack.answers.read("devnet", keys)).size).toBe(0);
    // The finalized block is untouched, still served from memory.
    expect((await post(stack, "eth_getBlockByNumber", [hex(30), true])).cache).toBe("hit-memory");
  });
});

describe("the status route", () => {
  it("shows this container's hits and misses by class", async () => {
    const status = (await (
      await fetch(`${stack.url}/devnet/status`, { headers: { "x-api-key": KEY } })
    ).json()) as {
      cache: { enabled: boolean; classes: Record<string, { hits: number; misses: number }> };
    };
    expect(status.cache.enabled).toBe(true);
    expect(status.cache.classes.immutable?.hits).toBeGreaterThanOrEqual(2);
    expect(status.cache.classes.unfinalized?.misses).toBeGreaterThanOrEqual(2);
  });
});
