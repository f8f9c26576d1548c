import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { GatewayClient, rpcCall } from "./gateway-client.ts";
import type { NodeFront } from "./lying-front.ts";

/**
 * A devnet restarted under the same chain id (issue 25; docs/behaviour.md §10.1): the gateway
 * follows the old chain and has answered its early blocks; then a fresh anvil 300 blocks lower
 * takes the old one's place behind the same provider URLs. Sampled every second: when do
 * `eth_blockNumber` and a block read become the new chain's, and is the old chain served after.
 */

const CHAIN_ID = 31337;
const RESTARTED_LOWER_BY = 300;

export interface RestartResult {
  /** Ms from the restart until eth_blockNumber and a block read were the new chain's, or null. */
  readonly followedAfterMs: number | null;
  /** Answers of the old chain after the gateway had followed the new one. */
  readonly oldAfterFollowing: number;
  readonly samples: readonly string[];
}

/** The devnet restarts 300 blocks lower under the same chain id; the gateway must follow. */
export async function restartedChain(
  url: string,
  chain: {
    readonly old: AnvilNode;
    readonly oldHeight: number;
    readonly fronts: ReadonlyArray<NodeFront & { target: AnvilNode }>;
    readonly followWithinMs: number;
    /** Told the new node as soon as it runs, so the caller can stop it. */
    readonly started: (node: AnvilNode) => void;
  },
): Promise<RestartResult> {
  const client = new GatewayClient();
  const call = async (method: string, params: unknown[]) => {
    const answer = await client.send(url, rpcCall(method, params));
    return {
      status: answer.status,
      result: (JSON.parse(answer.text) as { result?: unknown }).result,
    };
  };
  try {
    // The gateway follows the old chain, and has answered (and cached) its early blocks.
    const followsOld = async () =>
      Number((await call("eth_blockNumber", [])).result) >= chain.oldHeight;
    for (const started = Date.now(); !(await followsOld()); ) {
      if (Date.now() - started > 30_000)
        throw new Error("the gateway never followed the old chain");
      await sleep(500);
    }
    for (let block = 1; block <= 10; block++)
      await call("eth_getBlockByNumber", [`0x${block.toString(16)}`, false]);

    const restarted = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 });
    chain.started(restarted);
    // A transfer in its first block makes it another chain than the old one from block 1 on.
    const [from] = await restarted.rpc<string[]>("eth_accounts");
    await restarted.rpc("eth_sendTransaction", [
      { from, to: `0x${"11".repeat(20)}`, value: "0x1" },
    ]);
    const oldHead = Number.parseInt(await chain.old.rpc<string>("eth_blockNumber"), 16);
    const newHeight = oldHead - RESTARTED_LOWER_BY;
    await restarted.rpc("anvil_mine", [`0x${(newHeight - 1).toString(16)}`]);
    for (const front of chain.fronts) front.target = restarted;
    await chain.old.stop();

    const restartedAt = Date.now();
    let followedAt: number | null = null;
    let oldAfterFollowing = 0;
    const samples: string[] = [];
    // Sampled every second until followed (a minute at most), then 5 s more.
    for (;;) {
      const head = Number.parseInt(await restarted.rpc<string>("eth_blockNumber"), 16);
      const served = await call("eth_blockNumber", []);
      const servedHead = typeof served.result === "string" ? Number(served.result) : null;
      const block = await call("eth_getBlockByNumber", ["0x5", false]);
      const truth = await restarted.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x5", false]);
      const blockIsNew = (block.result as { hash?: string } | null)?.hash === truth.hash;
      const headIsNew = servedHead !== null && servedHead <= head && servedHead >= head - 3;
      samples.push(
        `${Date.now() - restartedAt}ms: node ${head}, served ${servedHead ?? served.status}, block 5 ${blockIsNew ? "new" : "old"}`,
      );
      if (followedAt === null && headIsNew && blockIsNew) followedAt = Date.now();
      else if (followedAt !== null && !(headIsNew && blockIsNew)) oldAfterFollowing++;
      const now = Date.now();
      if (followedAt === null ? now - restartedAt > chain.followWithinMs : now - followedAt > 5000)
        break;
      await sleep(1000);
    }
    return {
      followedAfterMs: followedAt === null ? null : followedAt - restartedAt,
      oldAfterFollowing,
      samples,
    };
  } finally {
    await client.close();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
