import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { startLocalStack } from "../../local/stack.ts";
import { type RestartResult, restartedChain } from "./chain-restart.ts";
import {
  type DappResult,
  deployWaitRead,
  type FilterResult,
  filterFromLatestToLatest,
} from "./dapp-flows.ts";
import { GatewayClient } from "./gateway-client.ts";
import { type LagFigures, sampleHeadLag } from "./head-lag.ts";
import { type NodeFront, startNodeFront } from "./lying-front.ts";
import { startHonestFront } from "./provider-fronts.ts";
import { waitUntil } from "./wait-until.ts";

/**
 * The scenes of a `latest` that is the chain's (issue 25; docs/behaviour.md §10), side by side
 * on one prod-like stack: the default 15 s check interval, four proxy runtimes over one
 * DynamoDB that a client's calls reach in turn, every provider healthy, a network per scene:
 * - `dapp` (2 s blocks): viem's deploy → wait → read, and a filter from `latest` to `latest`;
 * - `restart` (1 s blocks): a devnet restarted 300 blocks lower under the same chain id;
 * - `lag-*`: the served head's lag against the node's, with and without `eth_blockNumber`
 *   traffic, at 1 s and 2 s blocks.
 * Every scene starts once each network serves a head, as on a gateway long in service.
 */

const CHAIN_ID = 31337;
const OLD_CHAIN_BLOCKS = 330;
const LAG_SAMPLES = 110;

export interface HeadScenes {
  readonly dapp: Promise<DappResult>;
  readonly filter: Promise<FilterResult>;
  readonly restart: Promise<RestartResult>;
  readonly lag: Promise<Record<string, LagFigures>>;
  /** Resolves once every scene is over and everything it started is stopped. */
  readonly done: Promise<void>;
}

export async function startHeadScenes(options: {
  readonly deploys: number;
  readonly filterPokes: number;
  readonly followWithinMs: number;
}): Promise<HeadScenes> {
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  };
  try {
    const [twoSeconds, oneSecond, oldChain] = await Promise.all([
      startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 2 }),
      startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 }),
      startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 }),
    ]);
    for (const node of [twoSeconds, oneSecond, oldChain]) closers.push(() => node.stop());
    await oldChain.rpc("anvil_mine", [`0x${OLD_CHAIN_BLOCKS.toString(16)}`]);
    const dappFronts = await Promise.all([0, 1, 2].map(() => startHonestFront(twoSeconds.url)));
    const restartFronts: Array<NodeFront & { target: AnvilNode }> = await Promise.all(
      [0, 1].map(() => startNodeFront(oldChain)),
    );
    for (const front of [...dappFronts, ...restartFronts]) closers.push(() => front.close());
    const alike = (node: AnvilNode, blockTime: number) => ({
      chain_id: CHAIN_ID,
      block_time_seconds: blockTime,
      providers: ["a", "b", "c"].map((name) => ({ name, url: node.url })),
    });
    const networks = {
      dapp: {
        chain_id: CHAIN_ID,
        block_time_seconds: 2,
        providers: dappFronts.map((front, index) => ({ name: `dapp-${index}`, url: front.url })),
      },
      restart: {
        chain_id: CHAIN_ID,
        block_time_seconds: 1,
        providers: restartFronts.map((front, index) => ({
          name: `devnet-${index}`,
          url: front.url,
        })),
      },
      "lag-1s-quiet": alike(oneSecond, 1),
      "lag-1s-busy": alike(oneSecond, 1),
      "lag-2s-quiet": alike(twoSeconds, 2),
      "lag-2s-busy": alike(twoSeconds, 2),
    };
    const stack = await startLocalStack({ containers: 4, monitor: true, config: { networks } });
    closers.push(() => stack.close());
    const status = new GatewayClient();
    closers.push(() => status.close());
    await waitUntil(async () => {
      const statuses = await Promise.all(
        Object.keys(networks).map((network) => status.status(stack.url, network)),
      );
      return statuses.every((each) => each.served_head.served !== null);
    }, 30_000);

    const at = (network: string) => `${stack.url}/${network}`;
    const measure = (network: string, node: AnvilNode, busy: boolean) =>
      sampleHeadLag({
        url: at(network),
        node,
        traffic: "latest blocks",
        until: { samples: LAG_SAMPLES },
        pace: { pause: 250 },
        retakeWhenMined: true,
        ...(busy ? { blockNumberEveryMs: 250 } : {}),
      });
    const lag = Promise.all([
      measure("lag-1s-quiet", oneSecond, false),
      measure("lag-1s-busy", oneSecond, true),
      measure("lag-2s-quiet", twoSeconds, false),
      measure("lag-2s-busy", twoSeconds, true),
    ]).then(([quiet1, busy1, quiet2, busy2]) => ({
      "1 s blocks, no eth_blockNumber traffic": quiet1,
      "1 s blocks, eth_blockNumber traffic": busy1,
      "2 s blocks, no eth_blockNumber traffic": quiet2,
      "2 s blocks, eth_blockNumber traffic": busy2,
    }));
    const scenes = {
      dapp: deployWaitRead(at("dapp"), options.deploys),
      filter: filterFromLatestToLatest(at("dapp"), twoSeconds, options.filterPokes),
      restart: restartedChain(at("restart"), {
        old: oldChain,
        oldHeight: OLD_CHAIN_BLOCKS,
        fronts: restartFronts,
        followWithinMs: options.followWithinMs,
        started: (node) => closers.push(() => node.stop()),
      }),
      lag,
    };
    // A scene that fails is the test's to report; nobody else awaits it meanwhile.
    for (const scene of Object.values(scenes)) scene.catch(() => undefined);
    const done = Promise.allSettled(Object.values(scenes)).then(closeAll);
    return { ...scenes, done };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
