import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * Cost guards on the running gateway (docs/behaviour.md §8.5, §11.12), on real parts: anvil,
 * the monitor writing the chain position, dynalite, the proxy behind the API Gateway emulator.
 * An API key's `requests_per_minute` across four containers, and what one caller can make the
 * shared answer tier write, counted in the DynamoDB table itself.
 */

const KEY = "limited-key-0123456789";
const UNLIMITED = "unlimited-key-0123456789";
const sha = (key: string) => createHash("sha256").update(key).digest("hex");
const hex = (n: number) => `0x${n.toString(16)}`;
/** Calldata the contracts ignore: one byte, so each call of a batch has a key of its own. */
const calldata = (n: number) => `0x${n.toString(16).padStart(2, "0")}`;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

let node: AnvilNode;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
}, 60_000);

afterAll(async () => {
  await node?.stop();
});

async function call(url: string, key: string) {
  const response = await fetch(`${url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: number } } };
}

describe("requests_per_minute", () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startLocalStack({
      config: {
        api_keys: [
          { name: "limited", sha256: sha(KEY), requests_per_minute: 3 },
          { name: "unlimited", sha256: sha(UNLIMITED) },
        ],
        networks: { devnet: { chain_id: 31337, providers: [{ url: node.url }] } },
      },
    });
  }, 60_000);
  afterAll(() => stack?.close());

  it("a key over its minute gets 429 -32005; another key is not affected", async () => {
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await call(stack.url, KEY));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers[3]?.body.error?.code).toBe(-32005);
    expect((await call(stack.url, UNLIMITED)).status).toBe(200);
  });
});

describe("requests_per_minute across four containers over one DynamoDB", () => {
  let stack: LocalStack;
  beforeAll(async () => {
    // The stack's minute starts a second ago, so the burst is all in one minute.
    const offset = 61_000 - (Date.now() % 60_000);
    stack = await startLocalStack({
      containers: 4,
      clock: () => Date.now() + offset,
      config: {
        api_keys: [{ name: "limited", sha256: sha(KEY), requests_per_minute: 60 }],
        networks: { devnet: { chain_id: 31337, providers: [{ url: node.url }] } },
      },
    });
  }, 60_000);
  afterAll(() => stack?.close());

  it("regression: a burst at the start of a minute admitted 240 of a limit of 60; now 60", async () => {
    const answers = await Promise.all(Array.from({ length: 400 }, () => call(stack.url, KEY)));
    const admitted = answers.filter((answer) => answer.status === 200).length;
    expect(admitted).toBe(60);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(340);
    const status = (await fetch(`${stack.url}/devnet/status`, {
      headers: { "x-api-key": KEY },
    }).then((r) => r.json())) as { guards?: Record<string, number> };
    // The status route is keyed too: it is refused as well, and counted by the container.
    expect(status).toMatchObject({ error: { code: -32005 } });
  });
});

describe("what one caller can make the shared answer tier write", () => {
  let stack: LocalStack;
  /** A contract whose code returns 280,000 incompressible bytes (a keccak chain), 31 bytes. */
  const BIG_RETURN = "0x60005b60208120816020015260200180620445c011600257620445c06000f3";
  const OVERRIDDEN = `0x${"c0de".repeat(10)}`;
  let deployed: string;

  beforeAll(async () => {
    // The contract deployed in block 1, then 99 empty blocks: anvil's finalized block trails
    // its latest by 64, so block 1 is final.
    const init = `0x601f600c600039601f6000f3${BIG_RETURN.slice(2)}`;
    const sent = await node.rpc<string>("eth_sendTransaction", [{ from: DEPLOYER, data: init }]);
    const receipt = await node.rpc<{ contractAddress: string }>("eth_getTransactionReceipt", [
      sent,
    ]);
    deployed = receipt.contractAddress;
    await node.rpc("anvil_mine", [hex(99)]);
    stack = await startLocalStack({
      monitor: true,
      writeMetrics: () => undefined,
      config: {
        check_interval_seconds: 3600,
        state_cache_ms: 50,
        networks: { devnet: { chain_id: 31337, providers: [{ name: "anvil", url: node.url }] } },
      },
    });
    await stack.monitor?.monitor.tick();
    await sleep(100);
  }, 60_000);
  afterAll(() => stack?.close());

  async function post(body: unknown): Promise<Response> {
    return fetch(`${stack.url}/devnet`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  /** The shared tier's items and their DynamoDB write units (1 per KB, item size). */
  async function sharedItems(): Promise<{ items: number; writeUnits: number }> {
    await stack.answers.idle();
    let items = 0;
    let writeUnits = 0;
    let start: Record<string, never> | undefined;
    do {
      const page = await stack.store.client.send(
        new QueryCommand({
          TableName: stack.store.tableName,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": { S: "CACHE#devnet" } },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        items++;
        const bytes = (item.body?.B?.length ?? 0) + (item.sk?.S?.length ?? 0) + 64;
        writeUnits += Math.ceil(bytes / 1024);
      }
      start = page.LastEvaluatedKey as Record<string, never> | undefined;
    } while (start !== undefined);
    return { items, writeUnits };
  }

  it("regression: 500 random eth_getBalance at block 1 in five batches wrote 500 items; now 16 a request", async () => {
    const before = await sharedItems();
    for (let request = 0; request < 5; request++) {
      const batch = Array.from({ length: 100 }, (_, id) => ({
        jsonrpc: "2.0",
        id,
        method: "eth_getBalance",
        params: [`0x${randomBytes(20).toString("hex")}`, "0x1"],
      }));
      const response = await post(batch);
      expect(response.status).toBe(200);
      const answers = (await response.json()) as Array<{ result?: string }>;
      expect(answers.every((answer) => answer.result === "0x0")).toBe(true);
    }
    const after = await sharedItems();
    expect(after.items - before.items).toBe(80);
  });

  it("regression: five 280,000-byte answers of a state-override contract wrote five ~300 KB items; now none, and memory still answers", async () => {
    const before = await sharedItems();
    const batch = Array.from({ length: 5 }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "eth_call",
      params: [
        { to: OVERRIDDEN, data: calldata(id) },
        "0x1",
        { [OVERRIDDEN]: { code: BIG_RETURN } },
      ],
    }));
    const first = await post(batch);
    const answers = (await first.json()) as Array<{ result?: string }>;
    expect(answers.map((answer) => answer.result?.length)).toEqual(
      Array.from({ length: 5 }, () => 2 + 560_000),
    );
    const after = await sharedItems();
    expect(after.items - before.items).toBe(0);
    const again = await post(batch);
    expect(again.headers.get("x-gateway-cache")).toBe(
      "hit-memory,hit-memory,hit-memory,hit-memory,hit-memory",
    );
  });

  it("a deployed contract's 280,000-byte answers are over the item cap: none written, each in memory", async () => {
    const before = await sharedItems();
    const batch = Array.from({ length: 5 }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "eth_call",
      params: [{ to: deployed, data: calldata(id) }, "0x2"],
    }));
    const first = await post(batch);
    expect(((await first.json()) as Array<{ result?: string }>)[0]?.result?.length).toBe(
      2 + 560_000,
    );
    const after = await sharedItems();
    expect(after.items - before.items).toBe(0);
    const again = await post(batch);
    expect(again.headers.get("x-gateway-cache")).toBe(
      "hit-memory,hit-memory,hit-memory,hit-memory,hit-memory",
    );
  });

  it("the status route counts each guard's refusals", async () => {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      guards: Record<string, number>;
    };
    expect(status.guards).toMatchObject({
      cache_shared_writes_per_request: 420,
      cache_callers_answer: 5,
      cache_shared_item_bytes: 5,
    });
  });
});
