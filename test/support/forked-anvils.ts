import { type AnvilNode, startAnvil } from "../../local/anvil.ts";

/**
 * Two anvil nodes with the same chain id, both `blocks` high, on different chains: two nodes
 * started together can mine identical empty blocks, so a transfer in the forked one's first
 * block makes every block after it another.
 */
export async function startForkedPair(
  chainId: number,
  blocks: number,
): Promise<{ readonly honest: AnvilNode; readonly forked: AnvilNode }> {
  const [honest, forked] = await Promise.all([startAnvil({ chainId }), startAnvil({ chainId })]);
  const [from] = await forked.rpc<string[]>("eth_accounts");
  await forked.rpc("eth_sendTransaction", [{ from, to: `0x${"11".repeat(20)}`, value: "0x1" }]);
  const hex = (n: number) => `0x${n.toString(16)}`;
  await Promise.all([
    honest.rpc("anvil_mine", [hex(blocks)]),
    forked.rpc("anvil_mine", [hex(blocks - 1)]),
  ]);
  return { honest, forked };
}
