import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import type { ProviderStatus } from "../../functions/core/status/status.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type Fault, type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { GatewayClient, type RpcMember, rpcCall } from "../support/gateway-client.ts";
import { tableItem } from "../support/gateway-table.ts";
import { waitUntil } from "../support/wait-until.ts";

/**
 * What misbehaving providers and a hostile caller cannot make the gateway do (docs/behaviour.md
 * §2.3, §4.3, §4.6, §4.11, §5.4, §6.5, §8.5): anvil behind fault-injecting shims, one network
 * per fault, the proxy behind the API Gateway emulator, dynalite. Fixed bugs are "regression: …"; known bugs are pinned with `it.fails` and a
 * "bug:" comment. The clock stands still at NOW.
 */

const CHAIN_ID = 31337;
const ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const hex = (n: number) => `0x${n.toString(16)}`;

let now = 0;
const clock = () => now;
/** Head 5, no mining. */
let node: AnvilNode;
/** Head 10, no mining: a provider that has seen blocks the other has not. */
let ahead: AnvilNode;
let stack: LocalStack;
const client = new GatewayClient();
const shims = new Map<string, FaultShim>();

function shim(name: string): FaultShim {
  const found = shims.get(name);
  if (!found) throw new Error(`no shim ${name}`);
  return found;
}

const page = (title: string) =>
  `<html><head><title>${title}</title></head><body><center><h1>${title}</h1></center><hr><center>nginx</center></body></html>`;

/** Shims in front of `node`, each with its fault, by provider name. */
const FAULTS: Record<string, Fault | null> = {
  // reth and other jsonrpsee servers, over their batch limit (code -32010).
  jsonrpsee: {
    kind: "batch_limit",
    max: 2,
    body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32010,"message":"The batch request was too large","data":"Exceeded max limit of 2"}}',
  },
  // A jsonrpsee server with batches turned off: -32005, the rate-limit code of EIP-1474.
  nobatch: {
    kind: "batch_limit",
    max: 1,
    body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"Batched requests are not supported by this server"}}',
  },
  // dRPC's free tier.
  drpc: {
    kind: "batch_limit",
    max: 3,
    body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Batch of more than 3 requests are not allowed on free tier"}}',
  },
  // An nginx front whose body limit a batch of more than 2 calls passes.
  nginx413: {
    kind: "batch_limit",
    max: 2,
    status: 413,
    body: page("413 Request Entity Too Large"),
  },
  spare: null,
  onebyone: null,
  slow1: { kind: "for_method", method: "eth_call", fault: { kind: "slow", ms: 400 } },
  slow2: { kind: "for_method", method: "eth_call", fault: { kind: "slow", ms: 400 } },
  slow3: { kind: "for_method", method: "eth_call", fault: { kind: "slow", ms: 400 } },
  // Full nodes asked for state they pruned, as geth words it.
  pruned1: {
    kind: "for_method",
    method: "eth_getBalance",
    fault: {
      kind: "jsonrpc_error",
      code: -32000,
      message: "missing trie node 5f3a (path ) state 0x5f3a is not available",
    },
  },
  pruned2: {
    kind: "for_method",
    method: "eth_getBalance",
    fault: {
      kind: "jsonrpc_error",
      code: -32000,
      message: "missing trie node 5f3a (path ) state 0x5f3a is not available",
    },
  },
  // A front that hands back the answer to another request (another id).
  crossed: {
    kind: "for_method",
    method: "eth_getBalance",
    fault: { kind: "http", status: 200, body: '{"jsonrpc":"2.0","id":999,"result":"0x1"}' },
  },
  notif: null,
};

function config(): ConfigInput {
  const pair = (first: string) => ({
    chain_id: CHAIN_ID,
    providers: [
      { name: first, url: shim(first).url, priority: 2 },
      { name: "spare", url: shim("spare").url, priority: 1 },
    ],
  });
  return {
    networks: {
      jsonrpsee: pair("jsonrpsee"),
      nobatch: pair("nobatch"),
      drpc: pair("drpc"),
      nginx413: pair("nginx413"),
      budget: {
        chain_id: CHAIN_ID,
        max_upstream_calls: 10,
        providers: [{ name: "onebyone", url: shim("onebyone").url, max_batch: 1 }],
      },
      "slow-call": {
        chain_id: CHAIN_ID,
        slow_response_ms: 150,
        providers: ["slow1", "slow2", "slow3"].map((name, i) => ({
          name,
          url: shim(name).url,
          priority: 3 - i,
        })),
      },
      pruned: {
        chain_id: CHAIN_ID,
        providers: [
          { name: "pruned1", url: shim("pruned1").url, priority: 2 },
          { name: "pruned2", url: shim("pruned2").url, priority: 1 },
          { name: "archive", url: node.url, backup: true },
        ],
      },
      "foreign-id": {
        chain_id: CHAIN_ID,
        providers: [
          { name: "crossed", url: shim("crossed").url, priority: 2 },
          { name: "honest", url: node.url, priority: 1 },
        ],
      },
      notif: { chain_id: CHAIN_ID, providers: [{ name: "notif", url: shim("notif").url }] },
      "split-view": {
        chain_id: CHAIN_ID,
        providers: [
          { name: "ahead", url: ahead.url, priority: 2 },
          // Preferred for block lookups, and five blocks behind.
          {
            name: "lagging",
            url: node.url,
            priority: 1,
            priority_match: { eth_getBlockByNumber: 5 },
          },
        ],
      },
    },
  };
}

async function post(network: string, body: string, base = stack.url) {
  return client.send(`${base}/${network}`, body);
}

async function direct(body: string, url = node.url): Promise<string> {
  return (await client.send(url, body)).text;
}

async function provider(network: string, name: string): Promise<ProviderStatus | undefined> {
  return (await client.providers(stack.url, network)).get(name);
}

const batchOf = (n: number, method = "eth_getBalance") =>
  `[${Array.from({ length: n }, (_, i) =>
    method === "eth_getBalance"
      ? rpcCall(method, [`0x${(i + 1).toString(16).padStart(40, "0")}`, "latest"], i)
      : rpcCall(method, [], i),
  ).join(",")}]`;

beforeAll(async () => {
  [node, ahead] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID }),
    startAnvil({ chainId: CHAIN_ID }),
  ]);
  await Promise.all([node.rpc("anvil_mine", ["0x5"]), ahead.rpc("anvil_mine", ["0xa"])]);
  for (const [name, fault] of Object.entries(FAULTS)) {
    const started = await startFaultShim(node.url);
    await started.setFault(fault);
    shims.set(name, started);
  }
  now = Date.now();
  stack = await startLocalStack({ config: config(), clock });
  // The monitor's last tick on `split-view`, when the chain stood at block 7: its quorum
  // snapshot and the chain position it shares.
  const monitorStore = new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  });
  await monitorStore.writeQuorum("split-view", {
    head: 7,
    headTimestamp: 0,
    members: ["ahead", "lagging"],
    excluded: {},
    heads: {},
    computedAt: now,
  });
  const block7 = await ahead.rpc<{ hash: string }>("eth_getBlockByNumber", [hex(7), false]);
  await monitorStore.writeHead("split-view", {
    latest: { number: 7, hash: block7.hash },
    safe: null,
    finalized: null,
    served: null,
    previousServed: null,
    updatedAt: now,
    reorgSeenAt: 0,
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([...shims.values()].map((s) => s.close()));
  await Promise.all([node?.stop(), ahead?.stop()]);
  await client.close();
});

describe("batch refusals in the words real servers use (docs/behaviour.md §4.11)", () => {
  it.each([
    [
      "jsonrpsee",
      "reth's jsonrpsee 'The batch request was too large' (-32010) answered every member with the refusal",
      6,
      2,
    ],
    [
      "nobatch",
      "jsonrpsee's 'Batched requests are not supported' (-32005) blacklisted the provider for 5 min as a rate limit",
      4,
      1,
    ],
    [
      "drpc",
      "dRPC's 'Batch of more than 3 requests are not allowed' answered every member with the refusal",
      8,
      3,
    ],
    [
      "nginx413",
      "an nginx 413 page for a batch blacklisted the provider (transient) and sent the batch elsewhere",
      6,
      2,
    ],
  ])(
    "regression: %s: %s; now the batch is served there in smaller batches",
    async (name, _before, size, max) => {
      const spareBefore = shim("spare").requests;
      const body = batchOf(size);
      const answer = await post(name, body);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(await direct(body));
      expect(answer.headers["x-gateway-provider"]).toBe(name);
      expect(shim("spare").requests).toBe(spareBefore);
      const status = await provider(name, name);
      expect({ strikes: status?.strikes, blacklist: status?.blacklist }).toEqual({
        strikes: 0,
        blacklist: null,
      });
      expect(status?.limits.max_batch).toBeLessThanOrEqual(max);
    },
  );
});

describe("max_upstream_calls (docs/behaviour.md §8.5)", () => {
  it("regression: was never enforced; a batch of 30 to a provider taking one call at a time cost 30 upstream calls, now 10 and -32005 for the rest", async () => {
    const before = shim("onebyone").requests;
    const answer = await post("budget", batchOf(30, "eth_chainId"));
    expect(shim("onebyone").requests - before).toBe(10);
    expect(answer.headers["x-gateway-attempts"]).toBe("10");
    const members = JSON.parse(answer.text) as RpcMember[];
    expect(members.map((m) => m.id)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(members.slice(0, 10).map((m) => m.result)).toEqual(Array(10).fill(hex(CHAIN_ID)));
    expect(new Set(members.slice(10).map((m) => m.error?.code))).toEqual(new Set([-32005]));
    expect(members[10]?.error?.message).toContain("max_upstream_calls (10 upstream calls)");
  });
});

describe("penalties a caller can cause (docs/behaviour.md §6.5, §4.6)", () => {
  // The slow rule spares batches and the catalogue's heavy methods; eth_call was light, though
  // the caller chooses how much it computes, so one eth_call slow on every provider
  // blacklisted the primary (`slow`, 2 min). eth_call, eth_estimateGas and
  // eth_createAccessList run the caller's code: they are heavy now.
  it("regression: an eth_call slow on every provider blacklisted the primary; now nobody", async () => {
    const body = rpcCall("eth_call", [{ to: ADDRESS, data: "0x" }, "latest"], 1);
    const answer = await post("slow-call", body);
    expect(answer.text).toBe(await direct(body));
    expect((await provider("slow-call", "slow1"))?.blacklist).toBeNull();
  });

  // "missing trie node" (a full node asked for state it pruned) was an unclassified error,
  // counted toward force-rotate: six requests for old state rotated both primaries out and all
  // traffic went to the backup, though nothing was wrong with them. Pruned state is the
  // caller's answer now, like "historical state is not available" (docs/behaviour.md §4.4).
  it("regression: a caller's queries for pruned state rotated both primaries out; now none", async () => {
    for (let i = 0; i < 6; i++) {
      await post("pruned", rpcCall("eth_getBalance", [ADDRESS, "0x0"], i));
    }
    const providers = await client.providers(stack.url, "pruned");
    expect([providers.get("pruned1")?.blacklist, providers.get("pruned2")?.blacklist]).toEqual([
      null,
      null,
    ]);
  });
});

describe("answers a caller should not get (docs/behaviour.md §4.3)", () => {
  // A single call is forwarded as written, so its answer must carry the caller's id; an
  // answer to another request (id 999, from a front that crossed two answers) was served with
  // the caller's id spliced in. Batch answers were already matched by id.
  it("regression: an answer carrying another request's id was served; now the next provider answers", async () => {
    const body = rpcCall("eth_getBalance", [ADDRESS, "latest"], 7);
    const answer = await post("foreign-id", body);
    expect(answer.text).toBe(await direct(body));
  });
});

describe("notifications (docs/behaviour.md §2.3)", () => {
  // A client that parses every 200 as JSON failed on the empty body.
  it("regression: a batch of notifications only got 200 with an empty JSON body; now 204, as a lone notification (and anvil) does", async () => {
    const answer = await post(
      "notif",
      '[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","method":"eth_blockNumber"}]',
    );
    expect({ status: answer.status, text: answer.text }).toEqual({ status: 204, text: "" });
  });
});

describe("two containers on one DynamoDB (docs/behaviour.md §5.4)", () => {
  // Found attacking the stack before the served head was shared: heads seen in answers were
  // kept per container, so the container that told a caller the head was block 10 would
  // retry a lagging provider's null for block 8, while another, whose known head was still
  // the monitor's 7, served that null. A caller whose requests landed on both was told block
  // 10 exists and then that block 8 does not. Once the first container's head is published,
  // every container treats the blocks under it as existing.
  it("a container serves no null for a block another container told the caller exists", async () => {
    const second = await startLocalStack({
      config: stack.configPath,
      clock,
      dynamodb: stack.dynamo.endpoint,
    });
    try {
      // The first container tells the caller the head is block 10 …
      const head = await post("split-view", rpcCall("eth_blockNumber", [], 1));
      expect(JSON.parse(head.text)).toMatchObject({ result: hex(10) });
      await waitUntil(
        async () =>
          (await tableItem(stack.store, "NET#split-view", "HEAD"))?.served?.N === String(10),
      );
      // … and the caller's next request, for block 8, lands on the second one.
      const body = rpcCall("eth_getBlockByNumber", [hex(8), false], 2);
      const there = await post("split-view", body, second.url);
      expect(there.text).toBe(await direct(body, ahead.url));
    } finally {
      await second.close();
    }
  });
});
