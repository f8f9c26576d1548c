import { createWalletClient, http, keccak256, type WalletClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * eth_sendRawTransaction with the accepting provider's answer lost (docs/behaviour.md §4.12):
 * two providers in front of one anvil node, the first forwarding every send and then resetting
 * the connection instead of answering. Transactions are signed by viem and sent through the
 * gateway as a wallet sends them.
 */

// anvil's first default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const TO = "0x70997970c51812dc3a010c7d01b50e677d4c79c8";

interface Setup {
  node: AnvilNode;
  losing: FaultShim;
  honest: FaultShim;
  stack: LocalStack;
}

async function setup(mining: "pending" | "instant"): Promise<Setup> {
  // With a 3600 s block time a sent transaction stays pending; without, anvil mines at once.
  const node = await startAnvil({
    chainId: 31337,
    ...(mining === "pending" ? { blockTimeSeconds: 3600 } : {}),
  });
  const [losing, honest] = await Promise.all([startFaultShim(node.url), startFaultShim(node.url)]);
  await losing.setFault({ kind: "lose_answer", method: "eth_sendRawTransaction" });
  const stack = await startLocalStack({
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          providers: [
            { name: "losing", url: losing.url, priority: 2 },
            { name: "honest", url: honest.url, priority: 1 },
          ],
        },
      },
    },
  });
  return { node, losing, honest, stack };
}

async function teardown(setup: Setup | undefined): Promise<void> {
  await setup?.stack.close();
  await Promise.all([setup?.losing.close(), setup?.honest.close()]);
  await setup?.node.stop();
}

async function sendRaw(url: string, raw: string, id: number) {
  const response = await fetch(`${url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_sendRawTransaction", params: [raw] }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("a lost answer, the transaction still pending", () => {
  let env: Setup;
  let wallet: WalletClient;
  beforeAll(async () => {
    env = await setup("pending");
    wallet = createWalletClient({
      account,
      chain: foundry,
      transport: http(`${env.stack.url}/devnet`),
    });
  }, 60_000);
  afterAll(() => teardown(env));

  it("regression: the caller got 'transaction already imported'; now every send and retry gets the hash", async () => {
    const raw = await account.signTransaction({
      chainId: 31337,
      nonce: 0,
      to: TO,
      value: 1n,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    const hash = keccak256(raw);
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await sendRaw(env.stack.url, raw, attempt)).toEqual({
        status: 200,
        body: { jsonrpc: "2.0", id: attempt, result: hash },
      });
    }
    // The node holds it, once.
    expect(await env.node.rpc("eth_getTransactionByHash", [hash])).toMatchObject({ hash });
  });

  it("a wallet (viem) sending through the gateway gets the hash", async () => {
    const hash = await wallet.sendTransaction({
      account,
      chain: foundry,
      to: TO,
      value: 2n,
      nonce: 1,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    expect(await env.node.rpc("eth_getTransactionByHash", [hash])).toMatchObject({ hash });
  });
});

describe("a lost answer, the transaction mined at once", () => {
  let env: Setup;
  beforeAll(async () => {
    env = await setup("instant");
  }, 60_000);
  afterAll(() => teardown(env));

  it("'nonce too low' from the next provider, the transaction known by hash: the hash", async () => {
    const raw = await account.signTransaction({
      chainId: 31337,
      nonce: 0,
      to: TO,
      value: 1n,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    const hash = keccak256(raw);
    expect(await sendRaw(env.stack.url, raw, 9)).toEqual({
      status: 200,
      body: { jsonrpc: "2.0", id: 9, result: hash },
    });
    expect(await env.node.rpc("eth_getTransactionReceipt", [hash])).toMatchObject({
      transactionHash: hash,
    });
  });

  it("a transaction that really is too late keeps its 'nonce too low'", async () => {
    const raw = await account.signTransaction({
      chainId: 31337,
      nonce: 0,
      to: TO,
      value: 5n,
      gas: 21000n,
      gasPrice: 3_000_000_000n,
    });
    const answer = await sendRaw(env.stack.url, raw, 10);
    expect(answer.body).toMatchObject({
      id: 10,
      error: { message: expect.stringMatching(/nonce too low/i) },
    });
  });

  it("a transaction signed for another chain is refused with -32602 and sent nowhere", async () => {
    const before = env.losing.requests + env.honest.requests;
    const raw = await account.signTransaction({
      chainId: 1,
      nonce: 1,
      to: TO,
      value: 1n,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    const answer = await sendRaw(env.stack.url, raw, 11);
    expect(answer.body).toMatchObject({ id: 11, error: { code: -32602 } });
    expect(env.losing.requests + env.honest.requests).toBe(before);
  });
});
