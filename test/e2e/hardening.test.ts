import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import type { ProviderStatus } from "../../functions/core/status/status.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type Fault, type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { GatewayClient, type RpcMember, rpcCall } from "../support/gateway-client.ts";
import { callerShapedKeys, tableKeys } from "../support/gateway-table.ts";
import { type StackMonitor, stackMonitor } from "../support/stack-monitor.ts";
import { waitUntil } from "../support/wait-until.ts";

/**
 * What callers and providers could do to the gateway, each proven against real parts: anvil
 * behind fault-injecting HTTP shims, the proxy behind the API Gateway emulator, dynalite as
 * DynamoDB and the real monitor for the quorum snapshot. Each network of the one config is
 * one scenario. The clock stands still at NOW, so cooldowns are read exactly off the status
 * route (`blacklist.until` − NOW) and the monitor's snapshot stays in force.
 */

const CHAIN_ID = 31337;
const HEAD = 5;
const hex = (n: number) => `0x${n.toString(16)}`;
const iso = (ms: number) => new Date(ms).toISOString();
const SECOND = 1000;
/** anvil's first dev account: a plain state read every provider must serve. */
const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

let now = 0;
const clock = () => now;
let node: AnvilNode;
let stack: LocalStack;
let monitor: StackMonitor;
const client = new GatewayClient();
const shims = new Map<string, FaultShim>();
/** Values of the `${NAME}` placeholders: fragments of block 1's hash (set in beforeAll). */
const secrets: Record<string, string> = {};

/** Requests each shim had received when the faults went on (the monitor's own calls). */
const atStart = new Map<string, { requests: number; received: number }>();

/** HTTP requests the shim received since the faults went on. */
function requestsSinceStart(name: string): number {
  return shim(name).requests - (atStart.get(name)?.requests ?? 0);
}

/** Calls per request (null: a single call) the shim read since the faults went on. */
function batchesSinceStart(name: string): Array<number | null> {
  return shim(name)
    .received.slice(atStart.get(name)?.received ?? 0)
    .map((request) => request.batch);
}

function shim(name: string): FaultShim {
  const found = shims.get(name);
  if (!found) throw new Error(`no shim ${name}`);
  return found;
}

/** Providers by network, each behind a shim of its own name in front of the one anvil. */
const NETWORKS: Record<string, ReadonlyArray<{ name: string; priority: number }>> = {
  "made-up": [
    { name: "mu1", priority: 2 },
    { name: "mu2", priority: 1 },
  ],
  pending: [
    { name: "pe1", priority: 2 },
    { name: "pe2", priority: 1 },
  ],
  pages: [
    { name: "text400", priority: 3 },
    { name: "html405", priority: 2 },
    { name: "healthy", priority: 1 },
  ],
  "pages-only": [
    { name: "text400", priority: 2 },
    { name: "html405", priority: 1 },
  ],
  redirect: [
    { name: "moved301", priority: 3 },
    { name: "edge404", priority: 2 },
    { name: "healthy", priority: 1 },
  ],
  batches: [
    { name: "upto10", priority: 2 },
    { name: "spare", priority: 1 },
  ],
  "retry-after": [
    { name: "limited", priority: 2 },
    { name: "healthy", priority: 1 },
  ],
  slow: [
    { name: "slow1", priority: 3 },
    { name: "slow2", priority: 2 },
    { name: "slow3", priority: 1 },
  ],
  deep: [
    { name: "deep1", priority: 2 },
    { name: "deep2", priority: 1 },
  ],
  suspect: [
    { name: "waf1", priority: 2 },
    { name: "waf2", priority: 1 },
  ],
};

/** Faults set after the monitor's first tick, so every provider starts in the quorum. */
const FAULTS: Record<string, Fault> = {
  text400: {
    kind: "http",
    status: 400,
    body: "Bad Request",
    headers: { "content-type": "text/plain" },
  },
  html405: {
    kind: "http",
    status: 405,
    body: "<html><head><title>405 Not Allowed</title></head><body><center><h1>405 Not Allowed</h1></center><hr><center>nginx</center></body></html>",
    headers: { "content-type": "text/html" },
  },
  moved301: {
    kind: "http",
    status: 301,
    body: "<html><body>Moved Permanently</body></html>",
    headers: { location: "https://rpc.example.com/v2/", "content-type": "text/html" },
  },
  edge404: {
    kind: "http",
    status: 404,
    body: "<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1></body></html>",
    headers: { "content-type": "text/html" },
  },
  upto10: { kind: "batch_limit", max: 10 },
  limited: {
    kind: "http",
    status: 429,
    body: "Too Many Requests",
    headers: { "retry-after": "2", "content-type": "text/plain" },
  },
  slow1: { kind: "slow", ms: 400 },
  slow2: { kind: "slow", ms: 400 },
  slow3: { kind: "slow", ms: 400 },
  // A front (WAF, proxy) that drops one kind of call and serves the rest.
  waf1: { kind: "for_method", method: "eth_call", fault: { kind: "refuse" } },
  waf2: { kind: "for_method", method: "eth_call", fault: { kind: "refuse" } },
};

function config(): ConfigInput {
  const networks: Record<string, unknown> = {};
  for (const [network, providers] of Object.entries(NETWORKS)) {
    networks[network] = {
      chain_id: CHAIN_ID,
      providers: providers.map(({ name, priority }) => ({
        name,
        priority,
        url: shim(name).url,
      })),
    };
  }
  // The slow rule at 150 ms, so 400 ms is slow without a long test.
  (networks.slow as Record<string, unknown>).slow_response_ms = 150;
  // Provider URLs whose secret is a fragment of block 1's hash, which answers will carry.
  networks["secret-short"] = {
    chain_id: CHAIN_ID,
    providers: [{ name: "short", url: `${shim("secret").url}/v1/\${SHORT_KEY}` }],
  };
  networks["secret-long"] = {
    chain_id: CHAIN_ID,
    providers: [{ name: "long", url: `${shim("secret").url}/v1/\${LONG_KEY}` }],
  };
  // Every test here counts what reaches the providers: an answer from the cache reaches none.
  return { cache: false, networks } as ConfigInput;
}

async function post(network: string, body: string, base = stack.url) {
  return client.send(`${base}/${network}`, body);
}

/** What the anvil node itself answers to the same body: the answer the caller must get. */
async function direct(body: string): Promise<string> {
  return (await client.send(node.url, body)).text;
}

async function providers(network: string, base = stack.url): Promise<Map<string, ProviderStatus>> {
  return client.providers(base, network);
}

/** No strike, no blacklist, no per-method blacklist: the provider was not penalised. */
function unpenalised(provider: ProviderStatus | undefined) {
  return {
    name: provider?.name,
    strikes: provider?.strikes,
    blacklist: provider?.blacklist,
    capability_blacklists: provider?.capability_blacklists,
  };
}
const clean = (name: string) => ({ name, strikes: 0, blacklist: null, capability_blacklists: [] });

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  // No interval mining: the head stays at HEAD, so "the next block" stays in the future.
  await node.rpc("anvil_mine", [hex(HEAD)]);
  const block1 = await node.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x1", false]);
  // Inside the hash, so never a whole token: a 6-character and a 12-character fragment.
  secrets.SHORT_KEY = block1.hash.slice(10, 16);
  secrets.LONG_KEY = block1.hash.slice(20, 32);
  const names = new Set([
    ...Object.values(NETWORKS)
      .flat()
      .map((p) => p.name),
    "secret",
  ]);
  for (const name of names) shims.set(name, await startFaultShim(node.url));
  now = Date.now();
  stack = await startLocalStack({ config: config(), clock, env: secrets });
  monitor = stackMonitor(stack, { clock, env: secrets });
  await monitor.tick();
  for (const [name, fault] of Object.entries(FAULTS)) await shim(name).setFault(fault);
  for (const [name, s] of shims) {
    atStart.set(name, { requests: s.requests, received: s.received.length });
  }
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await monitor?.close();
  await Promise.all([...shims.values()].map((s) => s.close()));
  await node?.stop();
  await client.close();
});

describe("made-up method names never become state (docs/behaviour.md §4.10)", () => {
  it("regression: a batch of 100 made-up names became capability items in DynamoDB, cost an upstream call per provider and blacklisted both providers for them", async () => {
    const calls = Array.from({ length: 100 }, (_, i) =>
      rpcCall(`zz_${randomBytes(6).toString("hex")}`, [], i % 2 === 0 ? i : `caller-${i}`),
    );
    const body = `[${calls.join(",")}]`;
    const before = callerShapedKeys(await tableKeys(stack.store));
    const requests = [requestsSinceStart("mu1"), requestsSinceStart("mu2")];

    const answer = await post("made-up", body);

    expect(answer.status).toBe(200);
    // Byte for byte what the node says: -32601 for each, with the caller's ids, in order.
    expect(answer.text).toBe(await direct(body));
    const members = JSON.parse(answer.text) as RpcMember[];
    expect(members.map((m) => [m.id, m.error?.code])).toEqual(
      calls.map((_, i) => [i % 2 === 0 ? i : `caller-${i}`, -32601]),
    );
    expect(answer.headers["x-gateway-attempts"]).toBe("1");
    expect([requestsSinceStart("mu1"), requestsSinceStart("mu2")]).toEqual(
      requests.map((count, i) => count + (i === 0 ? 1 : 0)),
    );
    expect(callerShapedKeys(await tableKeys(stack.store))).toEqual(before);
    const status = await providers("made-up");
    expect([unpenalised(status.get("mu1")), unpenalised(status.get("mu2"))]).toEqual([
      clean("mu1"),
      clean("mu2"),
    ]);
  });
});

describe("a pending block never poisons the known head (docs/behaviour.md §5.4)", () => {
  it("regression: after a pending block, 0 of 5 nulls for the next block were served and both providers were blacklisted", async () => {
    const pending = await post("pending", rpcCall("eth_getBlockByNumber", ["pending", false]));
    expect((JSON.parse(pending.text) as { result: { number: string } }).result.number).toBe(
      hex(HEAD + 1),
    );

    const next = rpcCall("eth_getBlockByNumber", [hex(HEAD + 1), false], 42);
    for (let poll = 0; poll < 5; poll++) {
      const answer = await post("pending", next);
      expect({
        status: answer.status,
        text: answer.text,
        attempts: answer.headers["x-gateway-attempts"],
      }).toEqual({
        status: 200,
        text: '{"jsonrpc":"2.0","id":42,"result":null}',
        attempts: "1",
      });
    }
    const status = await providers("pending");
    expect([unpenalised(status.get("pe1")), unpenalised(status.get("pe2"))]).toEqual([
      clean("pe1"),
      clean("pe2"),
    ]);
    // The known head is still enforced: the head block itself must exist.
    const head = await post("pending", rpcCall("eth_getBlockByNumber", [hex(HEAD), false]));
    expect(head.text).toBe(await direct(rpcCall("eth_getBlockByNumber", [hex(HEAD), false])));
  });
});

describe("pages that are not JSON-RPC are never spliced into an answer (docs/behaviour.md §4.2)", () => {
  it("regression: a 400 text page and a 405 HTML page reached the caller as HTTP 200 with the id spliced in; now the healthy node answers", async () => {
    const body = rpcCall("eth_chainId", [], 7);
    const answer = await post("pages", body);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(await direct(body));
    expect(answer.headers["x-gateway-provider"]).toBe("healthy");
    expect(answer.headers["x-gateway-attempts"]).toBe("3");
  });

  it("regression: with only such providers the page was the answer; now the gateway's -32603 with the caller's id (HTTP 502), for a batch too", async () => {
    const single = await post("pages-only", rpcCall("eth_chainId", [], 7));
    expect(single.status).toBe(502);
    const error = JSON.parse(single.text) as RpcMember;
    expect({ jsonrpc: error.jsonrpc, id: error.id, code: error.error?.code }).toEqual({
      jsonrpc: "2.0",
      id: 7,
      code: -32603,
    });
    expect(single.text.startsWith('{"jsonrpc":"2.0","id":7,"error":{"code":-32603')).toBe(true);

    const batch = await post(
      "pages-only",
      `[${rpcCall("eth_chainId", [], "a")},${rpcCall("eth_getBalance", [ACCOUNT, "latest"], "b")}]`,
    );
    expect(batch.status).toBe(502);
    const members = JSON.parse(batch.text) as RpcMember[];
    expect(members.map((m) => [m.id, m.error?.code])).toEqual([
      ["a", -32603],
      ["b", -32603],
    ]);
  });

  it("regression: a 301 redirect and an edge's 404 page blacklisted the provider for 24 h as forbidden; now `redirect` for 120 s", async () => {
    const body = rpcCall("eth_chainId", [], 9);
    const answer = await post("redirect", body);
    expect(answer.text).toBe(await direct(body));
    expect(answer.headers["x-gateway-provider"]).toBe("healthy");
    const status = await providers("redirect");
    expect([status.get("moved301")?.blacklist, status.get("edge404")?.blacklist]).toEqual([
      { reason: "redirect", until: iso(now + 120 * SECOND) },
      { reason: "redirect", until: iso(now + 120 * SECOND) },
    ]);
  });
});

describe("provider batch limits: batches cut to fit, the provider kept (docs/behaviour.md §4.11)", () => {
  const ACCOUNTS = Array.from(
    { length: 30 },
    (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`,
  );
  const batchOf30 = (tag: string) =>
    `[${ACCOUNTS.map((account, i) =>
      i % 3 === 0
        ? rpcCall("eth_getBlockByNumber", [hex(i % (HEAD + 1)), false], `${tag}-${i}`)
        : rpcCall("eth_getBalance", [account, "latest"], `${tag}-${i}`),
    ).join(",")}]`;

  it("regression: a provider refusing batches over 10 calls was blacklisted for all traffic and the next provider got the same batch; now it serves the batch in halves", async () => {
    const body = batchOf30("first");
    const answer = await post("batches", body);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(await direct(body));
    expect(answer.headers["x-gateway-provider"]).toBe("upto10");
    expect(requestsSinceStart("spare")).toBe(0);
    // 30 refused, both halves of 15 refused, then batches of 7 taken.
    expect(batchesSinceStart("upto10")).toEqual([30, 15, 15, 7, 7, 7, 7, 2]);

    const status = await providers("batches");
    expect(unpenalised(status.get("upto10"))).toEqual(clean("upto10"));
    expect(status.get("upto10")?.limits).toEqual({ max_batch: 7, max_logs_range: null });
    expect(status.get("spare")?.limits).toEqual({ max_batch: null, max_logs_range: null });

    const single = await post("batches", rpcCall("eth_chainId", [], 1));
    expect(single.headers["x-gateway-provider"]).toBe("upto10");
    expect(single.headers["x-gateway-attempts"]).toBe("1");
  });

  it("a second stack on the same DynamoDB uses the learned size without a refusal", async () => {
    // The first stack's write of the learned size may outlast the answer (it waits 200 ms).
    await waitUntil(async () =>
      (await tableKeys(stack.store)).includes("NET#batches BATCHLIMIT#upto10"),
    );
    const second = await startLocalStack({
      config: stack.configPath,
      clock,
      env: secrets,
      dynamodb: stack.dynamo.endpoint,
    });
    try {
      const seen = batchesSinceStart("upto10").length;
      const body = batchOf30("second");
      const answer = await post("batches", body, second.url);
      expect(answer.text).toBe(await direct(body));
      expect(answer.headers["x-gateway-provider"]).toBe("upto10");
      expect(batchesSinceStart("upto10").slice(seen)).toEqual([7, 7, 7, 7, 2]);
      expect((await providers("batches", second.url)).get("upto10")?.limits).toEqual({
        max_batch: 7,
        max_logs_range: null,
      });
    } finally {
      await second.close();
    }
  });
});

describe("Retry-After and the slow rule (docs/behaviour.md §6.1, §6.5)", () => {
  it("regression: a 429 with Retry-After: 2 blacklisted the provider for 300 s; now for 2 s", async () => {
    const body = rpcCall("eth_getBalance", [ACCOUNT, "latest"], 3);
    const answer = await post("retry-after", body);
    expect(answer.text).toBe(await direct(body));
    expect(answer.headers["x-gateway-provider"]).toBe("healthy");
    expect((await providers("retry-after")).get("limited")?.blacklist).toEqual({
      reason: "rate_limit",
      until: iso(now + 2 * SECOND),
    });
  });

  it("regression: an eth_getLogs slow on every provider blacklisted the primary as slow; a slow plain read still does", async () => {
    const logs = rpcCall("eth_getLogs", [{ fromBlock: "0x0", toBlock: "latest" }], 5);
    const answer = await post("slow", logs);
    expect(answer.text).toBe(await direct(logs));
    expect(answer.headers["x-gateway-provider"]).toBe("slow1");
    expect((await providers("slow")).get("slow1")?.blacklist).toBeNull();

    await post("slow", rpcCall("eth_getBalance", [ACCOUNT, "latest"], 6));
    expect((await providers("slow")).get("slow1")?.blacklist).toEqual({
      reason: "slow",
      until: iso(now + 120 * SECOND),
    });
  });
});

describe("answers stay byte-faithful whatever the secrets (docs/behaviour.md §8.4)", () => {
  it.each([
    ["secret-short", "SHORT_KEY"],
    ["secret-long", "LONG_KEY"],
  ])(
    "regression: a block whose hash contains the provider's secret (%s) arrived with the fragment masked",
    async (network, key) => {
      const body = rpcCall("eth_getBlockByNumber", ["0x1", false], 11);
      const truth = await direct(body);
      expect(truth).toContain(secrets[key]);
      const answer = await post(network, body);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(truth);
    },
  );
});

describe("requests that fail everywhere are the caller's (docs/behaviour.md §8.3, §4.9)", () => {
  const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
  const deepCall = (id: string, levels = 5000) =>
    `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"eth_call","params":${nested(levels)}}`;
  const upstreamRequests = () => requestsSinceStart("deep1") + requestsSinceStart("deep2");

  it("regression: params nested 5,000 deep were forwarded upstream; now -32600 with the caller's id and no upstream request", async () => {
    const before = upstreamRequests();
    const single = await post("deep", deepCall("deep-1"));
    expect(single.status).toBe(400);
    expect(JSON.parse(single.text)).toMatchObject({
      jsonrpc: "2.0",
      id: "deep-1",
      error: { code: -32600 },
    });
    const get = await client.send(
      `${stack.url}/deep/get/eth_call/${encodeURIComponent(nested(200))}`,
    );
    expect(get.status).toBe(400);
    expect(JSON.parse(get.text)).toMatchObject({ error: { code: -32600 } });
    expect(upstreamRequests()).toBe(before);

    // In a batch, only the deep member is refused; the rest goes upstream without it.
    const batch = await post("deep", `[${rpcCall("eth_chainId", [], "ok")},${deepCall("deep-2")}]`);
    const members = JSON.parse(batch.text) as RpcMember[];
    expect(members.map((m) => [m.id, m.result ?? m.error?.code])).toEqual([
      ["ok", hex(CHAIN_ID)],
      ["deep-2", -32600],
    ]);
    expect(shim("deep1").received.at(-1)).toEqual({ batch: 1, methods: ["eth_chainId"] });
  });

  it("regression: a call every provider's front dropped cost each provider a connection strike; now the caller gets the error and nobody is penalised", async () => {
    const other = await post("suspect", rpcCall("eth_getBalance", [ACCOUNT, "latest"], 1));
    expect(other.headers["x-gateway-provider"]).toBe("waf1");

    const dropped = await post(
      "suspect",
      rpcCall("eth_call", [{ to: `0x${"11".repeat(20)}`, data: "0x" }, "latest"], "c-1"),
    );
    expect(dropped.status).toBe(502);
    expect(JSON.parse(dropped.text)).toMatchObject({ id: "c-1", error: { code: -32603 } });
    expect(dropped.headers["x-gateway-attempts"]).toBe("2");

    const status = await providers("suspect");
    expect([unpenalised(status.get("waf1")), unpenalised(status.get("waf2"))]).toEqual([
      clean("waf1"),
      clean("waf2"),
    ]);
    const after = await post("suspect", rpcCall("eth_getBalance", [ACCOUNT, "latest"], 2));
    expect(after.headers["x-gateway-provider"]).toBe("waf1");
  });
});
