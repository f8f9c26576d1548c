import { createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { DAPP_ABI, DAPP_BYTECODE } from "../support/event-chain.ts";
import { GatewayClient, rpcCall } from "../support/gateway-client.ts";
import { type LagFigures, measureHeadLag } from "../support/head-lag.ts";
import { firstLine } from "../support/indexers.ts";
import { type NodeFront, startNodeFront } from "../support/lying-front.ts";
import { type ProviderFront, startHonestFront } from "../support/provider-fronts.ts";

/**
 * A `latest` that is the chain's (issue 25; docs/behaviour.md §10), on a prod-like config: the
 * default 15 s check interval, four proxy runtimes over one DynamoDB that a client's calls
 * reach in turn, every provider healthy. The scenes run side by side, each on its own network:
 * - `dapp` (2 s blocks): viem's deploy → wait → read, 20 times in a row, must succeed every
 *   time, and the logs from the receipt's block to `latest` must hold the new log; a filter
 *   from `latest` to `latest` must report the logs of blocks mined after it;
 * - `restart`: a devnet restarted under the same chain id, 300 blocks lower, behind the same
 *   provider URLs, must be followed within a minute, no answer of the old chain served after;
 * - `lag-*`: the served head's lag against the node's, with and without `eth_blockNumber`
 *   traffic, at 1 s and 2 s blocks, recorded (the promise on it is asserted beside the head's
 *   own tests).
 */

const CHAIN_ID = 31337;
const DEPLOYS = 20;
const FILTER_POKES = 3;
const KEYS: readonly Hex[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
];
const OLD_CHAIN_BLOCKS = 330;
const RESTARTED_LOWER_BY = 300;
const FOLLOW_WITHIN_MS = 60_000;

let twoSeconds: AnvilNode;
let oneSecond: AnvilNode;
let oldChain: AnvilNode;
let newChain: AnvilNode | undefined;
let dappFronts: ProviderFront[] = [];
let restartFronts: Array<NodeFront & { target: AnvilNode }> = [];
let stack: LocalStack;
let scenes: {
  dapp: Promise<DappResult>;
  filter: Promise<FilterResult>;
  restart: Promise<RestartResult>;
  lag: Promise<Record<string, LagFigures>>;
};

const networkOf = (
  node: AnvilNode | ProviderFront | NodeFront,
  names: readonly string[],
  blockTime: number,
) => ({
  chain_id: CHAIN_ID,
  block_time_seconds: blockTime,
  providers: names.map((name) => ({ name, url: node.url })),
});

beforeAll(async () => {
  [twoSeconds, oneSecond, oldChain] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 2 }),
    startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 }),
    startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 }),
  ]);
  await oldChain.rpc("anvil_mine", [`0x${OLD_CHAIN_BLOCKS.toString(16)}`]);
  dappFronts = await Promise.all([0, 1, 2].map(() => startHonestFront(twoSeconds.url)));
  restartFronts = await Promise.all([0, 1].map(() => startNodeFront(oldChain)));
  stack = await startLocalStack({
    containers: 4,
    monitor: true,
    config: {
      networks: {
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
        "lag-1s-quiet": networkOf(oneSecond, ["a", "b", "c"], 1),
        "lag-1s-busy": networkOf(oneSecond, ["a", "b", "c"], 1),
        "lag-2s-quiet": networkOf(twoSeconds, ["a", "b", "c"], 2),
        "lag-2s-busy": networkOf(twoSeconds, ["a", "b", "c"], 2),
      },
    },
  });
  const settle = <T>(scene: Promise<T>) => {
    scene.catch(() => undefined);
    return scene;
  };
  scenes = {
    dapp: settle(deployWaitRead(`${stack.url}/dapp`)),
    filter: settle(filterFromLatestToLatest(`${stack.url}/dapp`)),
    restart: settle(restartedChain(`${stack.url}/restart`)),
    lag: settle(lagFigures()),
  };
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([...dappFronts, ...restartFronts].map((front) => front.close()));
  await Promise.all([twoSeconds, oneSecond, oldChain, newChain].map((node) => node?.stop()));
});

const chainAt = (url: string) =>
  defineChain({
    id: CHAIN_ID,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url] } },
    // As viem's own chain definitions carry it: polling then follows the block time.
    blockTime: 2000,
  });

interface DappResult {
  readonly reads: number;
  readonly ranges: number;
  readonly failures: readonly string[];
}

/** viem's everyday flow, `DEPLOYS` times in a row, each through the gateway alone. */
async function deployWaitRead(url: string): Promise<DappResult> {
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
  for (let round = 0; round < DEPLOYS; round++) {
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

interface FilterResult {
  readonly reported: number;
  readonly failures: readonly string[];
}

/** A filter from `latest` to `latest`, polled as viem does, while a contract is poked. */
async function filterFromLatestToLatest(url: string): Promise<FilterResult> {
  const [, from] = await twoSeconds.rpc<string[]>("eth_accounts");
  const deployed = await mined(
    twoSeconds,
    await twoSeconds.rpc<string>("eth_sendTransaction", [{ from, data: DAPP_BYTECODE }]),
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
    for (let poke = 0; poke < FILTER_POKES; poke++) {
      const sent = await twoSeconds.rpc<string>("eth_sendTransaction", [
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

interface RestartResult {
  /** Ms from the restart until eth_blockNumber and a block read were the new chain's, or null. */
  readonly followedAfterMs: number | null;
  /** Answers of the old chain after the gateway had followed the new one. */
  readonly oldAfterFollowing: number;
  readonly samples: readonly string[];
}

/** The devnet restarts 300 blocks lower under the same chain id; the gateway must follow. */
async function restartedChain(url: string): Promise<RestartResult> {
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
      Number((await call("eth_blockNumber", [])).result) >= OLD_CHAIN_BLOCKS;
    for (const started = Date.now(); !(await followsOld()); ) {
      if (Date.now() - started > 30_000)
        throw new Error("the gateway never followed the old chain");
      await sleep(500);
    }
    for (let block = 1; block <= 10; block++)
      await call("eth_getBlockByNumber", [`0x${block.toString(16)}`, false]);

    const restarted = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 });
    newChain = restarted;
    // A transfer in its first block makes it another chain than the old one from block 1 on.
    const [from] = await restarted.rpc<string[]>("eth_accounts");
    await restarted.rpc("eth_sendTransaction", [
      { from, to: `0x${"11".repeat(20)}`, value: "0x1" },
    ]);
    const oldHead = Number.parseInt(await oldChain.rpc<string>("eth_blockNumber"), 16);
    const newHeight = oldHead - RESTARTED_LOWER_BY;
    await restarted.rpc("anvil_mine", [`0x${(newHeight - 1).toString(16)}`]);
    for (const front of restartFronts) front.target = restarted;
    await oldChain.stop();

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
      if (followedAt === null ? now - restartedAt > FOLLOW_WITHIN_MS : now - followedAt > 5000)
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

/** The four lag measurements, side by side. */
async function lagFigures(): Promise<Record<string, LagFigures>> {
  const measure = (network: string, node: AnvilNode, busy: boolean) =>
    measureHeadLag({
      url: `${stack.url}/${network}`,
      node,
      samples: 110,
      everyMs: 250,
      ...(busy ? { blockNumberEveryMs: 250 } : {}),
    });
  const [quiet1, busy1, quiet2, busy2] = await Promise.all([
    measure("lag-1s-quiet", oneSecond, false),
    measure("lag-1s-busy", oneSecond, true),
    measure("lag-2s-quiet", twoSeconds, false),
    measure("lag-2s-busy", twoSeconds, true),
  ]);
  return {
    "1 s blocks, no eth_blockNumber traffic": quiet1,
    "1 s blocks, eth_blockNumber traffic": busy1,
    "2 s blocks, no eth_blockNumber traffic": quiet2,
    "2 s blocks, eth_blockNumber traffic": busy2,
  } as Record<string, LagFigures>;
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

describe("a latest that is the chain's, on the default 15 s checks", () => {
  it(`viem's deploy → wait → read succeeds ${DEPLOYS} times in a row, and the logs from the receipt's block to latest hold the new log`, async () => {
    const result = await scenes.dapp;
    console.log(`[dapp flow] ${JSON.stringify(result)}`);
    expect(result).toEqual({ reads: DEPLOYS, ranges: DEPLOYS, failures: [] });
  }, 180_000);

  it("a filter from latest to latest reports the logs of the blocks mined after it", async () => {
    const result = await scenes.filter;
    console.log(`[filter latest..latest] ${JSON.stringify(result)}`);
    expect(result).toEqual({ reported: FILTER_POKES, failures: [] });
  }, 180_000);

  it("a chain restarted 300 blocks lower under the same chain id is followed within a minute, and the old chain is never served again", async () => {
    const result = await scenes.restart;
    console.log(
      `[restart] followed after ${result.followedAfterMs} ms; old answers after: ${result.oldAfterFollowing}\n${result.samples.filter((_, index) => index % 5 === 0).join("\n")}`,
    );
    expect(result.followedAfterMs).not.toBeNull();
    expect(result.followedAfterMs).toBeLessThanOrEqual(FOLLOW_WITHIN_MS);
    expect(result.oldAfterFollowing).toBe(0);
  }, 180_000);

  it("the served head's lag against the node's is measured (figures printed), every sample answered", async () => {
    const figures = await scenes.lag;
    console.log(`[head lag, blocks behind the node] ${JSON.stringify(figures, null, 1)}`);
    for (const measured of Object.values(figures)) {
      expect(measured).toMatchObject({ samples: 110, failed: 0, attestedOtherwise: 0 });
      expect(measured.p50).toBeGreaterThanOrEqual(0);
    }
  }, 180_000);
});
