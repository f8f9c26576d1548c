import { createPublicClient, createWalletClient, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalStack } from "../../../local/stack.ts";
import {
  type MultiContainerStack,
  multiContainerStack,
} from "../../support/multi-container-stack.ts";

/**
 * Read-your-writes through the gateway (docs/behaviour.md §10.4): viem's everyday dapp flow,
 * `deployContract` → `waitForTransactionReceipt` → `readContract`, on a 2 s chain with the
 * default check interval (15 s), four proxy containers over one DynamoDB, consecutive calls
 * landing on different containers. The receipt names a block; the read at `latest` must be at
 * or above it, so the contract it reads exists.
 */

const CHAIN_ID = 31337;
// anvil's first default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
/** Init code that deploys a contract answering 42 to any call (so `value()` reads 42). */
const ANSWERS_42 = "0x600a600c600039600a6000f3602a60005260206000f3";
const abi = parseAbi(["function value() view returns (uint256)"]);
const ROUNDS = 20;

let scene: MultiContainerStack;
let stack: LocalStack;

beforeAll(async () => {
  scene = await multiContainerStack({
    containers: 4,
    chain: { chainId: CHAIN_ID, blockTimeSeconds: 2 },
    // The default check interval: the served head moves between the monitor's checks.
    config: { check_interval_seconds: 15 },
    providers: (node) => [
      { name: "a", url: node.url },
      { name: "b", url: `${node.url}/` },
    ],
  });
  ({ stack } = scene);
}, 60_000);

afterAll(async () => {
  await scene?.close();
});

describe("deploy, wait for the receipt, read the contract, round-robin over four containers", () => {
  it(`succeeds ${ROUNDS} times of ${ROUNDS} on a 2 s chain with 15 s checks`, async () => {
    const chain = { ...foundry, blockTime: 2000 };
    const transport = http(`${stack.url}/devnet`, { retryCount: 0 });
    const wallet = createWalletClient({ account, chain, transport });
    const reader = createPublicClient({ chain, transport });
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      try {
        const hash = await wallet.deployContract({ abi, bytecode: ANSWERS_42 });
        const receipt = await reader.waitForTransactionReceipt({ hash, timeout: 20_000 });
        if (receipt.contractAddress == null) throw new Error("no contract address");
        const value = await reader.readContract({
          address: receipt.contractAddress,
          abi,
          functionName: "value",
        });
        if (value !== 42n) throw new Error(`read ${value}`);
      } catch (error) {
        failures.push(`round ${round}: ${(error as Error).message.split("\n")[0]}`);
      }
    }
    expect(failures).toEqual([]);
  }, 150_000);
});
