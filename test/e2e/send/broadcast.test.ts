import { keccak256 } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { tableKeys } from "../../support/gateway-table.ts";

/**
 * Broadcast and the transaction ledger (docs/behaviour.md §4.12): three anvil nodes with the
 * same funded accounts (each its own mempool), the first losing its answer to every send after
 * taking the transaction; two proxy containers over one DynamoDB. Every send and every retry
 * gets the hash; the transaction reaches at least two mempools within 2 s; a refused one is
 * answered from the ledger when sent again.
 */

// anvil's first default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const TO = "0x70997970c51812dc3a010c7d01b50e677d4c79c8";
const SENDS = 8;

let nodes: AnvilNode[] = [];
let shims: FaultShim[] = [];
let stack: LocalStack;

beforeAll(async () => {
  // An hour's block time: sent transactions stay in the mempools, where they can be counted.
  nodes = await Promise.all(
    [0, 1, 2].map(() => startAnvil({ chainId: 31337, blockTimeSeconds: 3600 })),
  );
  shims = await Promise.all(nodes.map((node) => startFaultShim(node.url)));
  await shims[0]?.setFault({ kind: "lose_answer", method: "eth_sendRawTransaction" });
  stack = await startLocalStack({
    containers: 2,
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          providers: shims.map((shim, index) => ({
            name: `node-${index}`,
            url: shim.url,
            priority: 3 - index,
          })),
        },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all(shims.map((shim) => shim.close()));
  await Promise.all(nodes.map((node) => node.stop()));
});

async function send(raw: string, id: number) {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_sendRawTransaction", params: [raw] }),
  });
  return (await response.json()) as { id: number; result?: string; error?: { message: string } };
}

async function mempoolsHolding(hash: string): Promise<number> {
  const found = await Promise.all(
    nodes.map((node) => node.rpc("eth_getTransactionByHash", [hash])),
  );
  return found.filter((tx) => tx !== null).length;
}

describe("with the accepting provider's answer lost", () => {
  it(`${SENDS} sends and their retries all get the hash; each reaches two mempools or more within 2 s`, async () => {
    const outcomes: string[] = [];
    for (let nonce = 0; nonce < SENDS; nonce++) {
      const raw = await account.signTransaction({
        chainId: 31337,
        nonce,
        to: TO,
        value: 1n,
        gas: 21000n,
        gasPrice: 2_000_000_000n,
      });
      const hash = keccak256(raw);
      const sent = Date.now();
      const first = await send(raw, nonce);
      const retry = await send(raw, 100 + nonce);
      outcomes.push(
        first.result === hash && retry.result === hash ? "hash" : JSON.stringify([first, retry]),
      );
      let holding = await mempoolsHolding(hash);
      while (holding < 2 && Date.now() - sent < 2_000) holding = await mempoolsHolding(hash);
      expect(holding).toBeGreaterThanOrEqual(2);
    }
    expect(outcomes).toEqual(Array.from({ length: SENDS }, () => "hash"));
  });

  it("a refused transaction is sent again when resent, and accepted once its account is funded", async () => {
    const poor = privateKeyToAccount(generatePrivateKey());
    const raw = await poor.signTransaction({
      chainId: 31337,
      nonce: 0,
      to: TO,
      value: 10n ** 18n,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    const first = await send(raw, 1);
    expect(first.error?.message).toMatch(/insufficient funds/i);
    await Promise.all(
      nodes.map((node) => node.rpc("anvil_setBalance", [poor.address, "0xde0b6b3a7640000000"])),
    );
    const again = await send(raw, 2);
    expect(again).toEqual({ jsonrpc: "2.0", id: 2, result: keccak256(raw) });
  });

  it("an accepted transaction dropped from every mempool is spread again when resent", async () => {
    const raw = await account.signTransaction({
      chainId: 31337,
      nonce: SENDS,
      to: TO,
      value: 1n,
      gas: 21000n,
      gasPrice: 2_000_000_000n,
    });
    const hash = keccak256(raw);
    expect((await send(raw, 1)).result).toBe(hash);
    await Promise.all(nodes.map((node) => node.rpc("anvil_dropTransaction", [hash])));
    expect(await mempoolsHolding(hash)).toBe(0);
    expect((await send(raw, 2)).result).toBe(hash);
    expect(await mempoolsHolding(hash)).toBeGreaterThanOrEqual(2);
  });
});

describe("what one request may write to the ledger", () => {
  it("regression: a batch of 100 raw 'transactions' of random hex wrote 200 ledger items (a claim and an outcome each); now at most 16 sends of a request are claimed, and every one still gets the provider's answer", async () => {
    const ledgerItems = async () =>
      (await tableKeys({ client: stack.store.client, tableName: stack.store.tableName })).filter(
        (key) => key.startsWith("TX#"),
      ).length;
    const before = await ledgerItems();
    const batch = Array.from({ length: 100 }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "eth_sendRawTransaction",
      params: [`0x${(0xdead0000 + id).toString(16).padStart(16, "0")}`],
    }));
    const response = await fetch(`${stack.url}/devnet`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(batch),
    });
    const answers = (await response.json()) as Array<{ id: number; error?: { code: number } }>;
    expect(answers.map((answer) => answer.id)).toEqual(batch.map((call) => call.id));
    expect(answers.every((answer) => answer.error?.code === -32602)).toBe(true);
    expect((await ledgerItems()) - before).toBe(16);
  });
});
