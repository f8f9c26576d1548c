import { createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { AnvilNode } from "../../local/anvil.ts";
import { DAPP_ABI, DAPP_BYTECODE } from "./event-chain.ts";
import { firstLine } from "./indexers.ts";

/**
 * A dapp's everyday flows through the gateway with viem (issue 25; docs/behaviour.md §10): deploy
 * → wait for the receipt → read the contract, with the logs from the receipt's block to
 * `latest`; and a filter from `latest` to `latest` polled while the contract is poked.
 */

const CHAIN_ID = 31337;
/** Anvil's first two dev accounts. */
const KEYS: readonly Hex[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
];

export const chainAt = (url: string) =>
  defineChain({
    id: CHAIN_ID,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url] } },
    // As viem's own chain definitions carry it: polling then follows the block time.
    blockTime: 2000,
  });

export interface DappResult {
  readonly reads: number;
  readonly ranges: number;
  readonly failures: readonly string[];
}

/** viem's everyday flow, `rounds` times in a row, each through the gateway alone. */
export async function deployWaitRead(url: string, rounds: number): Promise<DappResult> {
  const chain = chainAt(url);
  const wallet = createWalletClient({
    account: privateKeyToAccount(KEYS[0] as Hex),
    chain,
    transport: http(url),
  });
  const reader = createPublicClient({ chain, transport: http(url) });
  let reads = 0;
  let ranges = 0;
  const failures: string[] = [];
  for (let round = 0; round < rounds; round++) {
    try {
      const hash = await wallet.deployContract({ abi: DAPP_ABI, bytecode: DAPP_BYTECODE });
      const receipt = await reader.waitForTransactionReceipt({ hash });
      const address = receipt.contractAddress as Hex;
      const [value, logs] = await Promise.all([
        reader
          .readContract({ address, abi: DAPP_ABI, functionName: "value" })
          .catch((error: Error) => {
            failures.push(`read: ${firstLine(error)}`);
            return null;
          }),
        reader.getContractEvents({
          address,
          abi: DAPP_ABI,
          eventName: "Deployed",
          fromBlock: receipt.blockNumber,
          toBlock: "latest",
        }),
      ]);
      if (value === 42n) reads++;
      if (logs.length === 1) ranges++;
      else failures.push(`range ${receipt.blockNumber}..latest: ${logs.length} logs`);
    } catch (error) {
      failures.push(firstLine(error as Error));
    }
  }
  return { reads, ranges, failures };
}

export interface FilterResult {
  readonly reported: number;
  readonly failures: readonly string[];
}

/** A filter from `latest` to `latest`, polled as viem does, while `node` mines pokes of a contract. */
export async function filterFromLatestToLatest(
  url: string,
  node: AnvilNode,
  pokes: number,
): Promise<FilterResult> {
  const [, from] = await node.rpc<string[]>("eth_accounts");
  const deployed = await mined(
    node,
    await node.rpc<string>("eth_sendTransaction", [{ from, data: DAPP_BYTECODE }]),
  );
  const address = deployed.contractAddress as Hex;
  const client = createPublicClient({ chain: chainAt(url), transport: http(url) });
  const failures: string[] = [];
  let reported = 0;
  try {
    const filter = await client.createContractEventFilter({
      address,
      abi: DAPP_ABI,
      eventName: "Poked",
      fromBlock: "latest",
      toBlock: "latest",
    });
    for (let poke = 0; poke < pokes; poke++) {
      const sent = await node.rpc<string>("eth_sendTransaction", [
        { from, to: address, data: "0x" },
      ]);
      let seen = false;
      for (const started = Date.now(); !seen && Date.now() - started < 12_000; ) {
        await sleep(1000);
        const changes = await client.getFilterChanges({ filter });
        seen = changes.some((log) => log.transactionHash === sent);
      }
      if (seen) reported++;
      else failures.push(`poke ${poke}: not reported within 12 s`);
    }
  } catch (error) {
    failures.push(firstLine(error as Error));
  }
  return { reported, failures };
}

async function mined(
  node: AnvilNode,
  hash: string,
): Promise<{ contractAddress: string; blockNumber: string }> {
  for (let wait = 0; wait < 100; wait++) {
    const receipt = await node.rpc<{ contractAddress: string; blockNumber: string } | null>(
      "eth_getTransactionReceipt",
      [hash],
    );
    if (receipt !== null) return receipt;
    await sleep(100);
  }
  throw new Error(`transaction ${hash} was not mined`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
