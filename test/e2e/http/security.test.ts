import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { matchingKey } from "../../../functions/proxy/api.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { type CapturedOutput, captureOutput } from "../../support/capture-output.ts";

/**
 * docs/behaviour.md §8 end to end, on the local stack (API Gateway emulator, dynalite, the proxy runtime)
 * with anvil upstreams: API keys, method deny/allow lists, size limits, no caller-chosen
 * upstream, and secret hygiene under upstream failures.
 */

const CHAIN_ID = 31337;
const CHAIN_ID_HEX = "0x7a69";
const API_KEY = "gw-key-7f3a9c1e5b";
const API_KEY_SHA256 = createHash("sha256").update(API_KEY, "utf8").digest("hex");
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const DEFAULT_DENIED = [
  "admin_peers",
  "admin_addPeer",
  "personal_listAccounts",
  "personal_unlockAccount",
  "miner_start",
  "miner_setEtherbase",
  "engine_getPayloadV1",
  "engine_forkchoiceUpdatedV3",
  "debug_setHead",
  // signing with the node's keys, its accounts, its controls and its mempool (docs/behaviour.md §8.2)
  "eth_sendTransaction",
  "eth_sign",
  "eth_signTransaction",
  "eth_signTypedData_v4",
  "eth_accounts",
  // regression: anvil's alias of eth_accounts handed out its unlocked accounts
  "eth_requestAccounts",
  "anvil_setBalance",
  "anvil_impersonateAccount",
  "anvil_dumpState",
  "hardhat_setBalance",
  "evm_mine",
  "evm_snapshot",
  "tenderly_setBalance",
  "debug_setGCPercent",
  "debug_startCPUProfile",
  "debug_writeMemProfile",
  "debug_standardTraceBlockToFile",
  "txpool_content",
  "txpool_inspect",
];

// A private connection pool, so faults that reset connections stay in this file.
const agent = new Agent({ keepAliveTimeout: 1000 });

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

async function send(
  url: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const method = options.method ?? (options.body === undefined ? "GET" : "POST");
  const response = await request(url, {
    dispatcher: agent,
    method: method as "GET",
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      // As a browser page sends it: API Gateway adds CORS headers to such requests' answers.
      origin: "https://app.example",
      ...options.headers,
    },
    body: options.body,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return { status: response.statusCode, headers, text: await response.body.text() };
}

function call(method: string, params: unknown[] = [], id: unknown = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}

interface RpcMember {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

function rpc(answer: Answer): RpcMember {
  return JSON.parse(answer.text) as RpcMember;
}

function rpcBatch(answer: Answer): RpcMember[] {
  return JSON.parse(answer.text) as RpcMember[];
}

/** A plain HTTP server on 127.0.0.1 that counts the requests it gets. */
async function startCountingServer(
  answer: (res: ServerResponse) => void = (res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"jsonrpc":"2.0","id":1,"result":"0xbad"}');
  },
): Promise<{ url: string; count: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    answer(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    count: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let nodeA: AnvilNode;
let nodeB: AnvilNode;

beforeAll(async () => {
  [nodeA, nodeB] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID }),
    startAnvil({ chainId: CHAIN_ID }),
  ]);
  // Another head and balance on each node, so an answer says which node gave it.
  await Promise.all([
    nodeA.rpc("anvil_mine", ["0x2"]),
    nodeB.rpc("anvil_mine", ["0x4"]),
    nodeB.rpc("anvil_setBalance", [DEPLOYER, "0x5150"]),
  ]);
}, 60_000);

/** The node's own answer text to a call (a single call or a batch member). */
async function direct(node: AnvilNode, member: unknown): Promise<string> {
  return (await send(node.url, { body: JSON.stringify(member) })).text;
}

afterAll(async () => {
  await agent.close();
  await Promise.all([nodeA?.stop(), nodeB?.stop()]);
});

// ---------------------------------------------------------------------------------------

describe("API keys (api_keys: SHA-256 hashes)", () => {
  let stack: LocalStack;
  let url: string;

  beforeAll(async () => {
    stack = await startLocalStack({
      config: {
        api_keys: [
          { name: "other", sha256: createHash("sha256").update("not-the-key").digest("hex") },
          { name: "tests", sha256: API_KEY_SHA256 },
        ],
        networks: {
          devnet: { chain_id: CHAIN_ID, providers: [{ name: "a", url: nodeA.url }] },
        },
      },
    });
    url = stack.url;
  }, 60_000);
  afterAll(() => stack?.close());

  function expectUnauthorized(answer: Answer): void {
    expect(answer.status).toBe(401);
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(answer.headers["access-control-allow-origin"]).toBe("*");
    const member = rpc(answer);
    expect(member.jsonrpc).toBe("2.0");
    expect(member.id).toBeNull();
    expect(member.error?.code).toBe(-32001);
    expect(member.result).toBeUndefined();
  }

  it("no key: 401 with a JSON-RPC error -32001 and id null", async () => {
    expectUnauthorized(await send(`${url}/devnet`, { body: call("eth_chainId", [], 5) }));
  });

  it("a wrong key, in the header or in ?key=: 401", async () => {
    expectUnauthorized(
      await send(`${url}/devnet`, { body: call("eth_chainId"), headers: { "x-api-key": "nope" } }),
    );
    expectUnauthorized(await send(`${url}/devnet?key=nope`, { body: call("eth_chainId") }));
    // The key with a byte more or less, or its hash, is not the key.
    for (const wrong of [
      `${API_KEY}x`,
      API_KEY.slice(0, -1),
      API_KEY_SHA256,
      API_KEY.toUpperCase(),
    ]) {
      expectUnauthorized(
        await send(`${url}/devnet`, { body: call("eth_chainId"), headers: { "x-api-key": wrong } }),
      );
    }
  });

  it("the right key in x-api-key or ?key=: 200 and the upstream's answer", async () => {
    const byHeader = await send(`${url}/devnet`, {
      body: call("eth_chainId"),
      headers: { "x-api-key": API_KEY },
    });
    expect(byHeader.status).toBe(200);
    expect(rpc(byHeader).result).toBe(CHAIN_ID_HEX);
    const byQuery = await send(`${url}/devnet?key=${encodeURIComponent(API_KEY)}`, {
      body: call("eth_chainId"),
    });
    expect(byQuery.status).toBe(200);
    expect(rpc(byQuery).result).toBe(CHAIN_ID_HEX);
    const getMode = await send(`${url}/devnet/get/eth_chainId/%5B%5D?key=${API_KEY}`);
    expect(getMode.status).toBe(200);
    expect(rpc(getMode).result).toBe(CHAIN_ID_HEX);
  });

  it("/health needs no key; the status routes and GET mode do", async () => {
    const health = await send(`${url}/health`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: "ok" });
    expectUnauthorized(await send(`${url}/status`));
    expectUnauthorized(await send(`${url}/status`, { headers: { accept: "text/html" } }));
    expectUnauthorized(await send(`${url}/devnet/status`));
    expectUnauthorized(await send(`${url}/devnet/get/eth_chainId/%5B%5D`));
    const status = await send(`${url}/devnet/status`, { headers: { "x-api-key": API_KEY } });
    expect(status.status).toBe(200);
    expect((JSON.parse(status.text) as { network: string }).network).toBe("devnet");
    const page = await send(`${url}/status?key=${API_KEY}`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
  });

  it("keys of any length or content are refused without an error (header and query)", async () => {
    const keys = ["", " ", "k", "k".repeat(64), "k".repeat(256), "k".repeat(257), "k".repeat(8000)];
    for (const key of keys) {
      expectUnauthorized(
        await send(`${url}/devnet`, { body: call("eth_chainId"), headers: { "x-api-key": key } }),
      );
    }
    for (const key of ["ä€😀", "\u0000", "%", "k".repeat(5000), `${API_KEY}\u0000`]) {
      expectUnauthorized(
        await send(`${url}/devnet?key=${encodeURIComponent(key)}`, { body: call("eth_chainId") }),
      );
    }
    // The comparison itself (timingSafeEqual on two 32-byte digests) takes keys of any size.
    const hashes = [API_KEY_SHA256];
    const configured = hashes.map((sha256) => ({ sha256 }));
    for (const length of [0, 1, 31, 32, 33, 64, 255, 256, 257, 4096, 1_000_000]) {
      expect(() => matchingKey("x".repeat(length), configured)).not.toThrow();
      expect(matchingKey("x".repeat(length), configured)).toBeNull();
    }
    expect(matchingKey(API_KEY, configured)).toEqual({ sha256: hashes[0] });
  });

  it("CORS preflight is answered without a key (it carries none by design)", async () => {
    const preflight = await send(`${url}/devnet`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-headers"]).toContain("x-api-key");
  });
});

// ---------------------------------------------------------------------------------------

describe("a node's unlocked account behind the gateway", () => {
  let stack: LocalStack;
  const TO = "0x00000000000000000000000000000000000000aa";
  const send1Wei = (network: string, method = "eth_sendTransaction") =>
    send(`${stack.url}/${network}`, {
      body: call(method, [{ from: DEPLOYER, to: TO, value: "0x1" }], "spend"),
    });
  /** What the account holds and has sent, as the node itself says (pending included). */
  const account = async () => ({
    balance: await nodeA.rpc<string>("eth_getBalance", [DEPLOYER, "pending"]),
    nonce: await nodeA.rpc<string>("eth_getTransactionCount", [DEPLOYER, "pending"]),
  });

  beforeAll(async () => {
    stack = await startLocalStack({
      config: {
        networks: {
          devnet: { chain_id: CHAIN_ID, providers: [{ name: "a", url: nodeA.url }] },
          // A devnet that allows sending from the node's accounts says so in its config.
          unlocked: {
            chain_id: CHAIN_ID,
            methods_deny: ["admin_*", "personal_*", "miner_*", "engine_*", "debug_set*"],
            providers: [{ name: "a", url: nodeA.url }],
          },
        },
      },
    });
  }, 60_000);
  afterAll(() => stack?.close());

  it("regression: eth_sendTransaction from anvil's unlocked account spent from it; now -32601 and nothing spent", async () => {
    const before = await account();
    const answer = await send1Wei("devnet");
    expect(rpc(answer)).toMatchObject({
      id: "spend",
      error: { code: -32601, message: "method eth_sendTransaction is not allowed by this gateway" },
    });
    expect(answer.headers["x-gateway-attempts"]).toBe("0");
    expect(await account()).toEqual(before);
    const status = JSON.parse((await send(`${stack.url}/devnet/status`)).text) as {
      guards: Record<string, number>;
    };
    expect(status.guards.methods_deny).toBe(1);
  });

  it.each(["eth_sendTransactionSync", "eth_sendUnsignedTransaction"])(
    "regression: %s (anvil signs or sends for its accounts) spent through the gateway; now -32601 and nothing spent",
    async (method) => {
      const before = await account();
      const answer = await send1Wei("devnet", method);
      expect(rpc(answer).error?.code).toBe(-32601);
      expect(await account()).toEqual(before);
    },
  );

  it("only a config that lists its own methods_deny without it lets it through", async () => {
    const before = await account();
    const answer = await send1Wei("unlocked");
    expect(rpc(answer).result).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await account()).nonce).toBe(`0x${(Number(before.nonce) + 1).toString(16)}`);
  });
});

// ---------------------------------------------------------------------------------------

describe("methods, limits and upstream choice", () => {
  let stack: LocalStack;
  let big: Awaited<ReturnType<typeof startCountingServer>>;
  let bigShim: FaultShim;
  let evil: Awaited<ReturnType<typeof startCountingServer>>;
  const BIG_RESULT = "f".repeat(5000);

  beforeAll(async () => {
    evil = await startCountingServer();
    // Two upstreams with a big answer: one streams it without Content-Length, the fault shim
    // sends it with Content-Length (the adapter refuses it before reading the body).
    big = await startCountingServer((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"jsonrpc":"2.0","id":1,"result":"');
      res.write(BIG_RESULT);
      res.end('"}');
    });
    bigShim = await startFaultShim(nodeA.url);
    await bigShim.setFault({ kind: "result", value: BIG_RESULT });
    stack = await startLocalStack({
      config: {
        max_body_bytes: 2048,
        max_batch: 5,
        networks: {
          devnet: {
            chain_id: CHAIN_ID,
            providers: [
              { name: "a", url: nodeA.url, priority: 2, methods_deny: ["eth_getBalance"] },
              { name: "b", url: nodeB.url, priority: 1 },
            ],
          },
          allowlist: {
            chain_id: CHAIN_ID,
            methods_allow: ["eth_chainId", "eth_blockNumber", "admin_*"],
            providers: [{ name: "a", url: nodeA.url }],
          },
          small: {
            chain_id: CHAIN_ID,
            max_response_bytes: 2000,
            providers: [
              { name: "big-1", url: big.url },
              { name: "big-2", url: big.url },
            ],
          },
          "small-shim": {
            chain_id: CHAIN_ID,
            max_response_bytes: 2000,
            providers: [
              { name: "shim-1", url: bigShim.url },
              { name: "shim-2", url: bigShim.url },
            ],
          },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await Promise.all([big?.close(), evil?.close(), bigShim?.close()]);
  });

  describe("method deny and allow lists", () => {
    it.each(DEFAULT_DENIED)(
      "%s is denied by default: -32601 in place, no upstream call",
      async (method) => {
        const answer = await send(`${stack.url}/devnet`, { body: call(method, [], "deny-me") });
        expect(answer.status).toBe(200);
        const member = rpc(answer);
        expect(member.id).toBe("deny-me");
        expect(member.error?.code).toBe(-32601);
        expect(member.error?.message).toContain(method);
        expect(answer.headers["x-gateway-attempts"]).toBe("0");
      },
    );

    it("in a batch, denied members get -32601 in place while the others are served", async () => {
      const batch = [
        { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
        { jsonrpc: "2.0", id: "admin", method: "admin_nodeInfo", params: [] },
        { jsonrpc: "2.0", id: 3, method: "eth_blockNumber", params: [] },
        { jsonrpc: "2.0", id: "head", method: "debug_setHead", params: ["0x0"] },
        { jsonrpc: "2.0", id: 5, method: "personal_sign", params: ["0x00", DEPLOYER] },
      ];
      const answer = await send(`${stack.url}/devnet`, { body: JSON.stringify(batch) });
      expect(answer.status).toBe(200);
      const members = rpcBatch(answer);
      expect(members.map((member) => member.id)).toEqual([1, "admin", 3, "head", 5]);
      expect(JSON.stringify(members[0])).toBe(await direct(nodeA, batch[0]));
      expect(JSON.stringify(members[2])).toBe(await direct(nodeA, batch[2]));
      for (const index of [1, 3, 4]) expect(members[index]?.error?.code).toBe(-32601);
    });

    it("a deny pattern is not dodged by case or by a prefix", async () => {
      // Exact names only: "ADMIN_peers" is another method (upstreams do not fold case), so it is
      // forwarded and the upstream says it does not exist.
      const answer = await send(`${stack.url}/devnet`, { body: call("debug_setHead", ["0x0"]) });
      expect(rpc(answer).error?.code).toBe(-32601);
      const prefixed = await send(`${stack.url}/devnet`, { body: call("admin_", []) });
      expect(rpc(prefixed).error?.code).toBe(-32601);
      expect(prefixed.headers["x-gateway-attempts"]).toBe("0");
    });

    // geth and erigon decode a request with Go's encoding/json: a member name matches in any
    // case and the last one wins, so geth ran "Method" (and answered "PARAMS") where the gateway
    // had checked "method" (and cached under "params"). anvil refuses such a member.
    it('regression: a member "Method" after "method" went to the provider, which geth would read as the method; now -32600 in place, nothing sent, the batch\'s others served', async () => {
      const sneaky = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","Method":"eth_sendTransaction","params":[{"from":"${DEPLOYER}","to":"0x00000000000000000000000000000000000000aa","value":"0x1"}]}`;
      const plain = { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [DEPLOYER, "0x1"] };
      const answer = await send(`${stack.url}/devnet`, {
        body: `[${sneaky},${JSON.stringify(plain)}]`,
      });
      const members = rpcBatch(answer);
      expect(members[0]).toMatchObject({ id: null, error: { code: -32600 } });
      expect(members[0]?.error?.message).toContain('"Method" is another spelling of "method"');
      expect(JSON.stringify(members[1])).toBe(await direct(nodeB, plain));
      expect(answer.headers["x-gateway-attempts"]).toBe("1");
      const single = await send(`${stack.url}/devnet`, {
        body: `{"jsonrpc":"2.0","id":"p","method":"eth_getCode","params":["${DEPLOYER}","0x1"],"PARAMS":["0x00000000000000000000000000000000000000aa","0x1"]}`,
      });
      expect(single.status).toBe(400);
      expect(rpc(single)).toMatchObject({ id: null, error: { code: -32600 } });
      expect(single.headers["x-gateway-attempts"]).toBeUndefined();
    });

    it("a network's methods_allow serves only the listed methods; the deny list still wins", async () => {
      const allowed = await send(`${stack.url}/allowlist`, { body: call("eth_chainId") });
      expect(rpc(allowed).result).toBe(CHAIN_ID_HEX);
      for (const method of ["eth_getBalance", "net_version", "eth_call"]) {
        const answer = await send(`${stack.url}/allowlist`, {
          body: call(method, [DEPLOYER, "latest"]),
        });
        expect(answer.status).toBe(200);
        expect(rpc(answer).error?.code).toBe(-32601);
        expect(answer.headers["x-gateway-attempts"]).toBe("0");
      }
      const denied = await send(`${stack.url}/allowlist`, { body: call("admin_peers") });
      expect(rpc(denied).error?.code).toBe(-32601);
      const viaGet = await send(`${stack.url}/allowlist/get/net_version/%5B%5D`);
      expect(rpc(viaGet).error?.code).toBe(-32601);
    });

    it("a provider's methods_deny sends the method to another provider", async () => {
      const balanceCall = call("eth_getBalance", [DEPLOYER, "latest"]);
      const balance = await send(`${stack.url}/devnet`, { body: balanceCall });
      expect(balance.status).toBe(200);
      expect(balance.text).toBe(await direct(nodeB, JSON.parse(balanceCall)));
      expect(balance.headers["x-gateway-provider"]).toBe("b");
      const blockNumber = await send(`${stack.url}/devnet`, { body: call("eth_blockNumber") });
      expect(blockNumber.text).toBe(await direct(nodeA, JSON.parse(call("eth_blockNumber"))));
      expect(blockNumber.headers["x-gateway-provider"]).toBe("a");
      // In one batch: each member goes where it may.
      const members = [
        { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
        { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [DEPLOYER, "latest"] },
      ];
      const batch = await send(`${stack.url}/devnet`, { body: JSON.stringify(members) });
      expect(batch.text).toBe(
        `[${await direct(nodeA, members[0])},${await direct(nodeB, members[1])}]`,
      );
      expect(batch.headers["x-gateway-provider"]?.split(",").sort()).toEqual(["a", "b"]);
    });
  });

  describe("size limits", () => {
    // 400, not 413: viem retries a 413, and the same body never fits (docs/behaviour.md §2.5).
    it("a body over max_body_bytes: 400 -32600 naming the limit", async () => {
      const body = call("eth_getBalance", ["x".repeat(3000), "latest"]);
      const answer = await send(`${stack.url}/devnet`, { body });
      expect(answer.status).toBe(400);
      const error = rpc(answer).error;
      expect(error?.code).toBe(-32600);
      expect(error?.message).toContain("max_body_bytes");
      expect(error?.message).toContain("2048");
    });

    it("a batch over max_batch: 400 -32600 naming the limit; at the limit it is served", async () => {
      const batch = (size: number) =>
        JSON.stringify(
          Array.from({ length: size }, (_, id) => ({ jsonrpc: "2.0", id, method: "eth_chainId" })),
        );
      const over = await send(`${stack.url}/devnet`, { body: batch(6) });
      expect(over.status).toBe(400);
      expect(rpc(over).error?.code).toBe(-32600);
      expect(rpc(over).error?.message).toContain("max_batch");
      expect(rpc(over).error?.message).toContain("5");
      const at = await send(`${stack.url}/devnet`, { body: batch(5) });
      expect(at.status).toBe(200);
      expect(rpcBatch(at)).toEqual(
        Array.from({ length: 5 }, (_, id) => ({ jsonrpc: "2.0", id, result: CHAIN_ID_HEX })),
      );
    });

    it.each([
      ["streamed without Content-Length", "small"],
      ["with Content-Length (fault shim `result`)", "small-shim"],
    ])(
      "an upstream answer over max_response_bytes, %s: -32003 naming the limit, not retried",
      async (_how, network) => {
        const count = () => (network === "small" ? big.count() : bigShim.requests);
        const before = count();
        const answer = await send(`${stack.url}/${network}`, { body: call("eth_chainId", [], 9) });
        expect(answer.status).toBe(200);
        const member = rpc(answer);
        expect(member.id).toBe(9);
        expect(member.error?.code).toBe(-32003);
        expect(member.error?.message).toContain("max_response_bytes");
        expect(member.error?.message).toContain("2000");
        expect(answer.text).not.toContain(BIG_RESULT.slice(0, 100));
        // Another provider would send the same: one attempt only.
        expect(count() - before).toBe(1);
        expect(answer.headers["x-gateway-attempts"]).toBe("1");
      },
    );
  });

  describe("no route takes an upstream URL from the caller", () => {
    it("URLs in the path, the query, headers and the body never reach anything but the providers", async () => {
      const evilUrl = evil.url;
      const evilHost = evilUrl.replace("http://", "");
      const encoded = encodeURIComponent(evilUrl);
      const attempts: Array<{ path: string; body?: string; headers?: Record<string, string> }> = [
        { path: `/${encoded}`, body: call("eth_chainId") },
        { path: `/${encoded}/get/eth_chainId/%5B%5D` },
        { path: `/devnet/${encoded}`, body: call("eth_chainId") },
        { path: `/devnet/get/eth_chainId/%5B%5D?url=${encoded}` },
        {
          path: `/devnet?url=${encoded}&upstream=${encoded}&target=${encoded}`,
          body: call("eth_chainId"),
        },
        { path: `/devnet?key=${encoded}`, body: call("eth_chainId") },
        {
          path: "/devnet",
          body: call("eth_chainId"),
          headers: {
            host: evilHost,
            "x-forwarded-host": evilHost,
            "x-forwarded-proto": "http",
            "x-original-url": evilUrl,
            "x-rewrite-url": evilUrl,
            forwarded: `host=${evilHost};proto=http`,
            "x-upstream": evilUrl,
            referer: evilUrl,
          },
        },
        {
          path: "/devnet",
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "eth_chainId",
            params: [],
            url: evilUrl,
          }),
        },
        {
          path: "/devnet",
          body: JSON.stringify([
            { jsonrpc: "2.0", id: 1, method: "eth_chainId", url: evilUrl, upstream: evilUrl },
            { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [evilUrl, "latest"] },
          ]),
        },
        {
          path: "/devnet",
          body: call("eth_call", [{ to: DEPLOYER, data: "0x" }, "latest"], evilUrl),
        },
        {
          path: `/devnet/get/eth_getBalance/${encodeURIComponent(JSON.stringify([evilUrl, "latest"]))}`,
        },
        { path: `/status?url=${encoded}` },
        { path: `/devnet/status?upstream=${encoded}` },
      ];
      for (const attempt of attempts) {
        const answer = await send(`${stack.url}${attempt.path}`, {
          ...(attempt.body === undefined ? {} : { body: attempt.body }),
          ...(attempt.headers === undefined ? {} : { headers: attempt.headers }),
        });
        expect([200, 400, 404, 405], `${attempt.path}: ${answer.status}`).toContain(answer.status);
        expect(answer.text).not.toContain("0xbad");
        const providers = answer.headers["x-gateway-provider"];
        if (providers !== undefined && providers !== "") {
          for (const name of providers.split(",")) expect(["a", "b"]).toContain(name);
        }
      }
      expect(evil.count()).toBe(0);
    });
  });
});

// ---------------------------------------------------------------------------------------

describe("secret hygiene: a provider key never leaves the process", () => {
  const SECRET = "s3cr3t-k3y+9f8e/7d6c=5b4a";
  const SECRET_ENCODED = encodeURIComponent(SECRET);
  let shim: FaultShim;
  let stack: LocalStack;
  let output: CapturedOutput;
  let resolvedUrl: string;
  const metricLines: string[] = [];
  /** Every HTTP answer the gateway gave, as text (status line, headers, body). */
  const emitted: string[] = [];
  /** Answers to calls whose upstream error echoed the provider URL and the key. */
  const echoed: string[] = [];

  function record(answer: Answer, sink: string[] = emitted): Answer {
    sink.push(`${answer.status}\n${JSON.stringify(answer.headers)}\n${answer.text}`);
    return answer;
  }

  async function traffic(sink: string[] = emitted): Promise<Answer[]> {
    const answers = [
      await send(`${stack.url}/secretnet`, { body: call("eth_chainId", [], 1) }),
      await send(`${stack.url}/secretnet`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
          { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [DEPLOYER, "latest"] },
        ]),
      }),
      await send(`${stack.url}/secretnet/get/eth_chainId/%5B%5D`),
    ];
    for (const answer of answers) record(answer, sink);
    return answers;
  }

  beforeAll(async () => {
    output = captureOutput({ passThrough: false });
    shim = await startFaultShim(nodeA.url);
    resolvedUrl = `${shim.url}/rpc/${SECRET_ENCODED}`;
    stack = await startLocalStack({
      config: {
        request_timeout_ms: 300,
        request_deadline_ms: 2000,
        max_attempts: 2,
        networks: {
          secretnet: {
            chain_id: CHAIN_ID,
            providers: [{ name: "keyed", url: `${shim.url}/rpc/\${SECRET_KEY}` }],
          },
        },
      },
      env: { SECRET_KEY: SECRET },
      writeMetrics: (line) => metricLines.push(line),
    });

    const faults: Array<Parameters<FaultShim["setFault"]>[0]> = [
      null,
      { kind: "down" },
      { kind: "refuse" },
      {
        kind: "http",
        status: 503,
        body: `<html><body>503 Service Unavailable at ${resolvedUrl} (key ${SECRET})</body></html>`,
      },
      {
        kind: "http",
        status: 401,
        body: `{"error":"invalid API key ${SECRET} for ${resolvedUrl}"}`,
      },
      { kind: "http", status: 500, body: `upstream ${resolvedUrl} failed` },
      {
        kind: "http",
        status: 429,
        body: `rate limited: ${resolvedUrl}`,
        headers: { "x-key": SECRET },
      },
      { kind: "hang" },
      { kind: "slow", ms: 800 },
      { kind: "truncate" },
      { kind: "malformed" },
      null,
    ];
    for (const fault of faults) {
      await shim.setFault(fault);
      await traffic();
    }
    // Upstream JSON-RPC errors whose message and data echo the URL and the key.
    const echoes: Array<Parameters<FaultShim["setFault"]>[0]> = [
      { kind: "jsonrpc_error", code: -32005, message: `rate limit exceeded for ${resolvedUrl}` },
      {
        kind: "jsonrpc_error",
        code: -32000,
        message: `missing trie node; upstream ${resolvedUrl}`,
        data: { url: resolvedUrl, key: SECRET },
      },
      { kind: "jsonrpc_error", code: -32603, message: `internal error at ${resolvedUrl}` },
      { kind: "jsonrpc_error", code: 3, message: `execution reverted: ${SECRET}` },
    ];
    for (const fault of echoes) {
      await shim.setFault(fault);
      await traffic(echoed);
    }
    await shim.setFault(null);
    for (const path of ["/status", "/secretnet/status"]) {
      record(await send(`${stack.url}${path}`));
      record(await send(`${stack.url}${path}`, { headers: { accept: "text/html" } }));
    }
    // Metrics are aggregated in memory; write them out now instead of waiting 5 s.
    stack.runtime.telemetry.flush();
  }, 120_000);

  afterAll(async () => {
    output?.restore();
    await stack?.close();
    await shim?.close();
  });

  const leaks = (text: string) =>
    [SECRET, SECRET_ENCODED, SECRET_ENCODED.toLowerCase(), "s3cr3t-k3y"].filter((needle) =>
      text.includes(needle),
    );

  it("the failures really happened (logs, metrics and answers to look at)", () => {
    const lines = output.lines();
    expect(lines.some((line) => line.includes("failover"))).toBe(true);
    expect(lines.some((line) => line.includes("provider blacklisted"))).toBe(true);
    expect(metricLines.some((line) => line.includes("retried_errors"))).toBe(true);
    expect(emitted.some((answer) => answer.startsWith("502"))).toBe(true);
    expect(emitted.some((answer) => answer.includes("timeout"))).toBe(true);
    // The key did reach the upstream: the shim was called on a path with the key in it.
    expect(shim.requests).toBeGreaterThan(10);
  });

  it("no stdout or stderr line carries the key (logs of every failure included)", () => {
    const found = output.lines().filter((line) => leaks(line).length > 0);
    expect(found).toEqual([]);
  });

  it("no EMF metric line carries the key", () => {
    expect(metricLines.length).toBeGreaterThan(0);
    expect(metricLines.filter((line) => leaks(line).length > 0)).toEqual([]);
  });

  it("no HTTP answer (status, headers, body), status JSON or status page carries the key", () => {
    expect(emitted.filter((answer) => leaks(answer).length > 0)).toEqual([]);
    const status = emitted.find((answer) => answer.includes('"network":"secretnet"'));
    expect(status).toBeDefined();
    expect(status).toContain("***");
  });

  // An upstream JSON-RPC error is handed to the caller as is, so a message or data that
  // echoed the provider URL used to leak the key: the scrubber that cleans logs, metrics and
  // the gateway's own errors was not applied to it.
  it("regression: answers built from upstream errors that echo the URL carried the key", () => {
    expect(echoed.length).toBeGreaterThan(0);
    expect(echoed.filter((answer) => leaks(answer).length > 0)).toEqual([]);
  });
});

describe("regression: a key that looked like a word was shown by the status route", () => {
  // redactUrl kept path segments that look like route words (letters, '-', at most two
  // digits, ≤ 24 characters), even when the segment was a `${NAME}` secret, so
  // "s3cr3t-token" in `/rpc/${WORD_KEY}` was printed by GET /status.
  let stack: LocalStack;
  const WORD_SECRET = "s3cr3t-token";

  beforeAll(async () => {
    stack = await startLocalStack({
      config: {
        networks: {
          wordnet: {
            chain_id: CHAIN_ID,
            providers: [{ name: "word", url: `${nodeA.url}/rpc/\${WORD_KEY}` }],
          },
        },
      },
      env: { WORD_KEY: WORD_SECRET },
    });
  }, 60_000);
  afterAll(() => stack?.close());

  it("the status JSON and page do not show a `${NAME}` value", async () => {
    const json = await send(`${stack.url}/wordnet/status`);
    const page = await send(`${stack.url}/status`, { headers: { accept: "text/html" } });
    expect(json.text).not.toContain(WORD_SECRET);
    expect(page.text).not.toContain(WORD_SECRET);
    // The placeholder's place is masked, the rest of the URL kept.
    const status = JSON.parse(json.text) as { providers: Array<{ url: string }> };
    expect(status.providers.map((provider) => provider.url)).toEqual([`${nodeA.url}/rpc/***`]);
    expect(page.text).toContain(`${nodeA.url}/rpc/***`);
  });
});

describe("regression: a caller could get a healthy provider blacklisted", () => {
  let stack: LocalStack;
  let gethLike: FaultShim;

  beforeAll(async () => {
    // The shim's `result` fault answers like geth: JSON.parse (the last duplicate key wins),
    // then one answer per call with the call's id.
    gethLike = await startFaultShim(nodeB.url);
    await gethLike.setFault({ kind: "result", value: "0x1" });
    stack = await startLocalStack({
      config: {
        networks: {
          notif: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: nodeA.url }] },
          surrogate: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: nodeA.url }] },
          dup: { chain_id: CHAIN_ID, providers: [{ name: "geth-like", url: gethLike.url }] },
        },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await gethLike?.close();
  });

  async function strikes(network: string): Promise<number[]> {
    const status = JSON.parse((await send(`${stack.url}/${network}/status`)).text) as {
      providers: Array<{ strikes: number }>;
    };
    return status.providers.map((provider) => provider.strikes);
  }

  // A single notification is forwarded as is and anvil (rightly) answers HTTP 204 with no
  // body; the classifier called that "not a JSON-RPC answer", blacklisted the provider and
  // the caller got 502. A notification gets no answer: 204 with an empty body, no strike.
  it("a single notification got 502 and a strike; now 204, an empty body, no strike", async () => {
    const answer = await send(`${stack.url}/notif`, {
      body: '{"jsonrpc":"2.0","method":"eth_chainId","params":[]}',
    });
    expect(answer.status).toBe(204);
    expect(answer.text).toBe("");
    expect(answer.headers["x-gateway-provider"]).toBe("anvil");
    expect(await strikes("notif")).toEqual([0]);
  });

  // `{"id":0,"method":"eth_chainId","id":1}`: parseRequest read the first id, the upstream
  // the last, so the gateway's batch ids collided; the upstream's answer for member 0 came
  // back with id 1, member 0 was "missing from the batch answer", and the provider was
  // blacklisted (transient) for a request the caller made up.
  it("a batch member with a duplicate id blacklisted the provider; now it is refused in place, the others served", async () => {
    const answer = await send(`${stack.url}/dup`, {
      body: '[{"jsonrpc":"2.0","id":0,"method":"eth_chainId","id":1},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}]',
    });
    expect(answer.status).toBe(200);
    const members = rpcBatch(answer);
    expect(members).toHaveLength(2);
    // Upstreams disagree on which duplicate wins, so the gateway refuses the member.
    expect(members[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(members[0]?.error?.message).toContain('"id" appears twice');
    // The geth-like shim answers every call with 0x1: the other member is its answer.
    expect(members[1]).toEqual({ jsonrpc: "2.0", id: 2, result: "0x1" });
    expect(answer.headers["x-gateway-provider"]).toBe("geth-like");
    expect(await strikes("dup")).toEqual([0]);
  });

  // A lone surrogate escape ("\ud800", valid JSON text, accepted by JSON.parse) in one batch
  // member: the upstream (anvil, like any serde_json node) could not parse the batch and
  // answered one -32600 for all of it, so the valid members were not served either, each
  // member was "missing from the batch answer", and the provider was blacklisted.
  it("a batch member with a lone surrogate blacklisted the provider; now it is refused in place, the others served", async () => {
    const answer = await send(`${stack.url}/surrogate`, {
      body: String.raw`[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_getBalance","params":["\ud800","latest"]}]`,
    });
    expect(answer.status).toBe(200);
    const members = rpcBatch(answer);
    expect(members).toHaveLength(2);
    expect(members[0]).toEqual({ jsonrpc: "2.0", id: 1, result: CHAIN_ID_HEX });
    expect(members[1]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(await strikes("surrogate")).toEqual([0]);
  });
});

describe("an oversized upstream answer with Content-Length does not crash the process", () => {
  // Regression: the undici adapter called response.body.destroy() with no error and no
  // 'error' listener when Content-Length was over max_response_bytes; undici then emitted
  // RequestAbortedError (UND_ERR_ABORTED) as an unhandled 'error' event and the process died
  // before answering. Fixed by 277affb (adapter on node:http). Run in a child process,
  // because the failure mode is an uncaught exception.
  it("the gateway answers -32003 and its process lives on", async () => {
    const module = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
    const script = `
      const { startLocalStack } = await import(${module("../../../local/stack.ts")});
      const { startFaultShim } = await import(${module("../../../local/fault-shim.ts")});
      const shim = await startFaultShim("http://127.0.0.1:9");
      await shim.setFault({ kind: "result", value: "f".repeat(5000) });
      const stack = await startLocalStack({ config: { max_response_bytes: 2000, networks: {
        devnet: { chain_id: ${CHAIN_ID}, providers: [{ name: "a", url: shim.url }] } } } });
      try {
        const response = await fetch(stack.url + "/devnet", { method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' });
        const text = await response.text();
        await new Promise((resolve) => setImmediate(resolve));
        process.stderr.write("ANSWER " + response.status + " " + text + "\\n");
      } finally {
        await stack.close();
        await shim.close();
      }
    `;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      {
        cwd: fileURLToPath(new URL("../../../", import.meta.url)),
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const [code] = (await once(child, "exit")) as [number | null];
    clearTimeout(timer);
    expect(stderr).not.toContain("Request aborted");
    expect(code, stderr.slice(-2000)).toBe(0);
    expect(stderr).toMatch(/ANSWER 200 .*-32003.*max_response_bytes/);
  }, 40_000);
});
