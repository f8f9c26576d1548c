import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { shareChainPosition } from "../../support/chain-position.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";
import { type Liar, startLiar } from "../../support/liar-upstream.ts";

/**
 * Hedged reads against providers that lie (docs/behaviour.md §13), on the local stack: four
 * proxy containers over one DynamoDB, anvil at block 300 behind a provider slow on cue and a
 * hedge target that lies on cue (garbage, an HTML page, a foreign id, an error). What held is
 * pinned as it is.
 */

const CHAIN_ID = 31337;
const BLOCKS = 300;
const FINALIZED = 280;
const hex = (n: number) => `0x${n.toString(16)}`;

let node: AnvilNode;
let liar: Liar;
let slow: Liar;
let stack: LocalStack;
const client = new GatewayClient();

const HEDGED_NETWORKS = ["hedge1", "hedge2", "hedge3", "hedge4", "slowsome"] as const;

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  await node.rpc("anvil_mine", [hex(BLOCKS)]);
  liar = await startLiar(node.url);
  slow = await startLiar(node.url);
  const networks: Record<string, ConfigInput["networks"][string]> = {};
  // One network per hedge attack: a hedge target that failed is blacklisted for a minute.
  for (const name of HEDGED_NETWORKS) {
    networks[name] = {
      chain_id: CHAIN_ID,
      hedge: { max_ratio: 1, min_ms: 100, max_ms: 200, max_batch: 10 },
      cache: false,
      providers: [
        { name: "slow", url: slow.url, priority: 2 },
        { name: "liar", url: liar.url, priority: 1 },
      ],
    };
  }
  networks.budget = {
    chain_id: CHAIN_ID,
    hedge: { max_ratio: 0.1, min_ms: 100, max_ms: 200, max_batch: 10 },
    cache: false,
    providers: [
      { name: "slow", url: slow.url, priority: 2 },
      { name: "liar", url: liar.url, priority: 1 },
    ],
  };
  stack = await startLocalStack({ containers: 4, config: { networks } });
  // The chain position the monitor would share: blocks up to FINALIZED are immutable.
  await shareChainPosition(stack, node, Object.keys(networks), {
    latest: BLOCKS,
    finalized: FINALIZED,
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await slow?.close();
  await node?.stop();
  await client.close();
});

beforeEach(() => {
  liar.lie = () => undefined;
  slow.lie = () => undefined;
  liar.calls.length = 0;
  slow.calls.length = 0;
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

const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const balanceCall = (id: number) => rpcCall("eth_getBalance", [ACCOUNT, hex(FINALIZED)], id);

describe("hedged reads (docs/behaviour.md §13)", () => {
  it.each<[string, string, () => { text?: string; raw?: string }]>([
    ["garbage", "hedge1", () => ({ text: '{"result":"not a quantity"}' })],
    ["an HTML page", "hedge2", () => ({ raw: "<html><body>502 Bad Gateway</body></html>" })],
    ["a foreign id", "hedge3", () => ({ text: '{"id":424242,"result":"0x1"}' })],
    [
      "an error",
      "hedge4",
      () => ({ text: '{"error":{"code":-32000,"message":"header not found"}}' }),
    ],
  ])(
    "holds: a hedge target answering %s never beats the slow right answer",
    async (_, network, lie) => {
      slow.lie = (call) => (call.method === "eth_getBalance" ? { delayMs: 500 } : undefined);
      liar.lie = (call) => (call.method === "eth_getBalance" ? lie() : undefined);
      const expected = await node.rpc("eth_getBalance", [ACCOUNT, hex(FINALIZED)]);
      const answer = await post(network, balanceCall(7));
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: expected });
      expect(answer.headers["x-gateway-provider"]).toBe("slow");
      expect(liar.calls.filter((c) => c.method === "eth_getBalance").length).toBe(1);
    },
  );

  it("holds: a provider slow on every other read loses those races without a strike (its answers after the abort count for nothing)", async () => {
    let n = 0;
    slow.lie = (call) =>
      call.method === "eth_getBalance" && n++ % 2 === 0 ? { delayMs: 1500 } : undefined;
    const started = Date.now();
    const answers = [];
    for (let id = 0; id < 12; id++) answers.push(await post("slowsome", balanceCall(id)));
    const elapsed = Date.now() - started;
    const winners = answers.map((a) => a.headers["x-gateway-provider"]);
    for (const answer of answers) expect(answer.json.result).toMatch(/^0x/);
    expect(winners.filter((winner) => winner === "liar")).toHaveLength(6);
    expect(elapsed).toBeLessThan(6 * 600 + 6 * 300);
    const providers = await client.providers(stack.url, "slowsome");
    expect(providers.get("slow")?.strikes ?? 0).toBe(0);
    expect(providers.get("slow")?.state).not.toBe("blacklisted");
  });

  it("holds: 100 callers at once on four containers hedge at most max_ratio of their requests", async () => {
    let n = 0;
    slow.lie = (call) =>
      call.method === "eth_getBalance" && n++ % 2 === 0 ? { delayMs: 400 } : undefined;
    // Requests in the last minute count: warm every container's budget with fast ones first.
    await Promise.all(
      Array.from({ length: 40 }, (_, id) => post("budget", rpcCall("eth_chainId", [], id))),
    );
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, id) => post("budget", balanceCall(id))),
    );
    for (const answer of answers) expect(answer.json.result).toMatch(/^0x/);
    const hedges = liar.calls.filter((c) => c.method === "eth_getBalance").length;
    expect(hedges).toBeGreaterThan(0);
    expect(hedges).toBeLessThanOrEqual(14);
  });
});
