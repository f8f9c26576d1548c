import { keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalDynamoDb, startDynalite } from "../../../local/dynamodb.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { shareChainPosition } from "../../support/chain-position.ts";
import { type DynamoFront, startDynamoFront } from "../../support/dynamo-front.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";
import {
  type CallScript,
  type ScriptedHttpUpstream,
  startScriptedHttpUpstream,
} from "../../support/scripted-http-upstream.ts";

/**
 * Sends and their ledger under faults (docs/behaviour.md §4.12, §4.13), on the local stack: two
 * proxy containers over one DynamoDB (dynalite behind a front that can throttle every call, as
 * DynamoDB does under load), anvil behind a scripted provider that lies on cue. Fixed bugs are
 * "regression: …".
 */

const CHAIN_ID = 31337;
// anvil's second default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const TO = "0x70997970c51812dc3a010c7d01b50e677d4c79c8";

let node: AnvilNode;
let dynalite: LocalDynamoDb;
let front: DynamoFront;
let liar: ScriptedHttpUpstream;
let stack: LocalStack;
/** What the lying provider says; undefined lets the node answer. */
let lie: CallScript = () => undefined;
const client = new GatewayClient();

beforeAll(async () => {
  // Mines a block per transaction: a sent transaction is found by its hash at once.
  node = await startAnvil({ chainId: CHAIN_ID });
  await node.rpc("anvil_mine", ["0xa"]);
  dynalite = await startDynalite({ tableName: "sends-under-faults" });
  front = await startDynamoFront(dynalite.endpoint);
  liar = await startScriptedHttpUpstream(node.url, (call) => lie(call));
  const providers = [
    { name: "liar", url: liar.url, priority: 2 },
    { name: "honest", url: node.url, priority: 1 },
  ];
  stack = await startLocalStack({
    dynamodb: front.endpoint,
    containers: 2,
    config: {
      networks: {
        net: { chain_id: CHAIN_ID, providers },
        // No copies: the attempts alone decide what the caller is told.
        nocopy: { chain_id: CHAIN_ID, broadcast_to: 0, providers },
      },
    },
  });
  // The chain position the monitor shares: block 5 finalized, so blocks 0-5 are immutable.
  await shareChainPosition(stack, node, ["net"], { latest: 10, finalized: 5 });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await liar?.close();
  await front?.close();
  await dynalite?.close();
  await node?.stop();
  await client.close();
});

async function post(network: string, body: string) {
  const answer = await client.send(`${stack.url}/${network}`, body);
  return { ...answer, json: JSON.parse(answer.text) as { result?: unknown; error?: unknown } };
}

async function signedTransfer(): Promise<{ raw: string; hash: string }> {
  const nonce = await node.rpc<string>("eth_getTransactionCount", [account.address, "pending"]);
  const raw = await account.signTransaction({
    chainId: CHAIN_ID,
    nonce: Number.parseInt(nonce, 16),
    to: TO,
    value: 1n,
    gas: 21000n,
    gasPrice: 2_000_000_000n,
  });
  return { raw, hash: keccak256(raw) };
}

describe("sending a transaction (docs/behaviour.md §4.12, §4.13)", () => {
  it("regression: with DynamoDB throttling, a send was answered 500 and sent nowhere", async () => {
    const { raw, hash } = await signedTransfer();
    front.setMode("throttle");
    try {
      const sent = await post("net", rpcCall("eth_sendRawTransaction", [raw], 7));
      expect(sent.status).toBe(200);
      expect(sent.json).toEqual({ jsonrpc: "2.0", id: 7, result: hash });
    } finally {
      front.setMode("pass");
    }
    expect(await node.rpc("eth_getTransactionByHash", [hash])).not.toBeNull();
  });

  it("regression: a provider answering another hash was believed, and the caller told a hash that is not theirs", async () => {
    const { raw, hash } = await signedTransfer();
    const asked = liar.calls.length;
    lie = (call) =>
      call.method === "eth_sendRawTransaction" ? { result: `0x${"11".repeat(32)}` } : undefined;
    try {
      const sent = await post("nocopy", rpcCall("eth_sendRawTransaction", [raw], 8));
      expect(sent.json).toEqual({ jsonrpc: "2.0", id: 8, result: hash });
      expect(sent.headers["x-gateway-provider"]).toBe("honest");
      expect(liar.calls.slice(asked).map((received) => received.method)).toContain(
        "eth_sendRawTransaction",
      );
    } finally {
      lie = () => undefined;
    }
  });
});
