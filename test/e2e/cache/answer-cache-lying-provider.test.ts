import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { shareChainPosition } from "../../support/chain-position.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";
import {
  type CallScript,
  type ScriptedHttpUpstream,
  startScriptedHttpUpstream,
} from "../../support/scripted-http-upstream.ts";

/**
 * What the answer cache keeps from a provider that lies (docs/behaviour.md §11), on the local
 * stack: two proxy containers over one DynamoDB, anvil behind a scripted provider that lies on
 * cue (asked first) and the node itself. Fixed bugs are "regression: …".
 */

const CHAIN_ID = 31337;
const hex = (n: number) => `0x${n.toString(16)}`;

let node: AnvilNode;
let liar: ScriptedHttpUpstream;
let stack: LocalStack;
/** What the lying provider says; undefined lets the node answer. */
let lie: CallScript = () => undefined;
const client = new GatewayClient();

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  await node.rpc("anvil_mine", ["0xa"]);
  liar = await startScriptedHttpUpstream(node.url, (call) => lie(call));
  stack = await startLocalStack({
    containers: 2,
    config: {
      networks: {
        net: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "liar", url: liar.url, priority: 2 },
            { name: "honest", url: node.url, priority: 1 },
          ],
        },
      },
    },
  });
  // The chain position the monitor shares: block 5 finalized, so blocks 0-5 are immutable.
  await shareChainPosition(stack, node, ["net"], { latest: 10, finalized: 5 });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await node?.stop();
  await client.close();
});

async function post(network: string, body: string) {
  const answer = await client.send(`${stack.url}/${network}`, body);
  return { ...answer, json: JSON.parse(answer.text) as { result?: unknown; error?: unknown } };
}

describe("the answer cache (docs/behaviour.md §11)", () => {
  it("regression: a finalized block answered with an object naming no block was kept in the shared tier and served to every container", async () => {
    const call = rpcCall("eth_getBlockByNumber", [hex(2), false]);
    lie = (received) =>
      received.method === "eth_getBlockByNumber" ? { result: { foo: 1 } } : undefined;
    try {
      await post("net", call);
    } finally {
      lie = () => undefined;
    }
    await stack.answers.idle();
    // Both containers, one after the other: neither serves the garbage.
    const [first, second] = await Promise.all([post("net", call), post("net", call)]);
    for (const answer of [first, second]) {
      expect(answer.json.result).toMatchObject({ number: hex(2) });
    }
  });
});
