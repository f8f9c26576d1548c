import type { Hex } from "viem";
import type { AnvilNode } from "../../local/anvil.ts";
import { waitUntil } from "./wait-until.ts";

/**
 * Deploys `data` from `from` on an automining node and gives the contract's address. Automine
 * mines the deployment at once, but a loaded machine may answer its receipt late (a `null`).
 */
export async function deployContract(node: AnvilNode, from: string, data: Hex): Promise<Hex> {
  const deploy = await node.rpc<string>("eth_sendTransaction", [{ from, data }]);
  const receiptOf = () =>
    node.rpc<{ contractAddress: Hex } | null>("eth_getTransactionReceipt", [deploy]);
  await waitUntil(async () => (await receiptOf()) !== null, 10_000).catch(() => undefined);
  const receipt = await receiptOf();
  if (receipt === null) throw new Error(`the deployment ${deploy} was not mined`);
  return receipt.contractAddress;
}
