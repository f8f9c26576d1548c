import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import type { AnvilNode } from "../../local/anvil.ts";
import type { LocalStack } from "../../local/stack.ts";

/**
 * Writes the chain position the monitor would share, for scenes without a monitor: `node`'s
 * blocks `latest` and `finalized` (`safe` at `finalized`) with their hashes, confirmed now, no
 * served head yet. Blocks up to `finalized` are then immutable to the answer cache.
 */
export async function shareChainPosition(
  stack: LocalStack,
  node: AnvilNode,
  networks: readonly string[],
  blocks: { readonly latest: number; readonly finalized: number },
): Promise<void> {
  const position = (number: number) =>
    node.rpc<{ hash: string }>("eth_getBlockByNumber", [`0x${number.toString(16)}`, false]);
  const [finalized, latest] = await Promise.all([
    position(blocks.finalized),
    position(blocks.latest),
  ]);
  const monitorStore = new DynamoMonitorStore({
    client: stack.store.client,
    tableName: stack.store.tableName,
  });
  for (const network of networks) {
    await monitorStore.writeHead(network, {
      latest: { number: blocks.latest, hash: latest.hash },
      safe: { number: blocks.finalized, hash: finalized.hash },
      finalized: { number: blocks.finalized, hash: finalized.hash },
      served: null,
      previousServed: null,
      updatedAt: Date.now(),
      reorgSeenAt: 0,
    });
  }
}
