import type { AnvilNode } from "./anvil.ts";

/**
 * A chain with logs spread over many blocks, for log queries against a real node: a contract
 * that emits two logs per call (topic: the calldata word, then the caller), called every
 * `every` blocks up to `blocks`, twice in the same block every third time, so pieces hold
 * logs at different log indexes and transaction indexes. The node must mine on demand (no
 * block time).
 */

// Runtime: LOG1(topic = calldata[0..32]) then LOG1(topic = caller), both with no data; STOP.
const RUNTIME = "60003560006000a13360006000a100";
// Init: copy the 15-byte runtime (after these 12 bytes) to memory and return it.
const INIT = `0x600f600c600039600f6000f3${RUNTIME}`;

export interface LogChain {
  readonly contract: string;
  /** The last block mined (at least the blocks asked for). */
  readonly head: number;
  /** Calls made, each of which emitted two logs. */
  readonly calls: number;
}

export async function buildLogChain(
  node: AnvilNode,
  options: { readonly blocks: number; readonly every: number },
): Promise<LogChain> {
  const [from] = await node.rpc<string[]>("eth_accounts");
  if (from === undefined) throw new Error("the node has no unlocked account");
  const deploy = await node.rpc<string>("eth_sendTransaction", [{ from, data: INIT }]);
  const contract = (await receiptOf(node, deploy)).contractAddress;
  const emit = (topic: number) =>
    node.rpc("eth_sendTransaction", [
      { from, to: contract, data: `0x${topic.toString(16).padStart(64, "0")}`, gas: "0x20000" },
    ]);
  let calls = 0;
  let head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
  while (head + options.every <= options.blocks) {
    await node.rpc("anvil_mine", [`0x${(options.every - 1).toString(16)}`]);
    if (calls % 3 === 2) {
      // Two calls in one block: logs 0-3 of the block.
      await node.rpc("evm_setAutomine", [false]);
      await emit(calls++);
      await emit(calls++);
      await node.rpc("evm_mine");
      await node.rpc("evm_setAutomine", [true]);
    } else {
      await emit(calls++);
    }
    head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
  }
  if (head < options.blocks) {
    await node.rpc("anvil_mine", [`0x${(options.blocks - head).toString(16)}`]);
  }
  // A call's block may be mined a moment after it is sent: the head is read, not assumed.
  await new Promise((resolve) => setTimeout(resolve, 100));
  head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
  return { contract, head, calls };
}

/** The receipt of a sent transaction, once the node has mined it (within a few seconds). */
async function receiptOf(node: AnvilNode, hash: string): Promise<{ contractAddress: string }> {
  for (let wait = 0; wait < 100; wait++) {
    const receipt = await node.rpc<{ contractAddress: string } | null>(
      "eth_getTransactionReceipt",
      [hash],
    );
    if (receipt !== null) return receipt;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`transaction ${hash} was not mined`);
}
