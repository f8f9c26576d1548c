import { keccak256, toHex } from "viem";
import { publicationDelayMs } from "../../functions/core/chain/chain-head.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { type ChainLog, type EventChain, startEventChain } from "./event-chain.ts";
import { GatewayClient } from "./gateway-client.ts";
import { startHonestFront, startLaggingFront } from "./provider-fronts.ts";
import {
  type EthersWatcher,
  type ResumingWatcher,
  type ViemWatcher,
  watchResuming,
  watchWithEthers,
  watchWithViem,
} from "./socket-watchers.ts";
import { waitUntil } from "./wait-until.ts";

/**
 * Issue 28's scene (docs/behaviour.md "Subscriptions over WebSocket"): one anvil chain with
 * `Tick` logs in every 1 s block, behind three providers; the preferred one, in turn, refuses
 * connections, hangs, lags 4 blocks behind and answers 503, 10 s each. Four proxy and socket
 * containers over one DynamoDB, the monitor at its default checks, the follower on runs of
 * 20 s (so it hands its lease over three times). Watching all along: viem's `webSocket()`
 * transport (`watchBlocks`, `watchContractEvent` and a raw `newHeads` timed on arrival), a
 * second viem client (another connection, so other socket containers), ethers'
 * `WebSocketProvider`, and a bare socket that drops during the faults and resumes with
 * `resumeFrom`. Then an `anvil_reorg` of two blocks with new logs. Everything is compared with
 * the node: its blocks' first appearance, its hashes, its logs.
 */

const CHAIN_ID = 31337;
export const BLOCK_MS = 1000;
/** When each fault of the preferred provider starts, into the scene, and how long it lasts. */
const FAULT_AT_MS = 8_000;
const FAULT_MS = 10_000;
/** The resuming socket is away from 15 s to 21 s (while the provider refuses, then hangs). */
const DROP_AT_MS = 15_000;
const RESUME_AT_MS = 21_000;
const REORG_AT_MS = 53_000;
const SCENE_MS = 60_000;
export const TICK_TOPIC = keccak256(toHex("Tick(uint256)"));

export interface SubscriptionSceneResult {
  /** Blocks compared: from the first block after every client subscribed to the last one mined. */
  readonly window: { readonly from: number; readonly to: number };
  /** Blocks the reorg replaced (heights), and the hashes they had. */
  readonly reorg: { readonly heights: readonly number[]; readonly oldHashes: readonly string[] };
  /** When each block first showed at the node (ms), polled every 25 ms. */
  readonly appearedAt: ReadonlyMap<number, number>;
  /**
   * When each block was first the gateway's served head: its publication's time plus the
   * publication delay, read from the head item (every 250 ms, beside the gateway: asking it
   * `eth_blockNumber` would make its containers poll providers and move the head sooner).
   */
  readonly servedAt: ReadonlyMap<number, number>;
  /** Each block's hash as the node has it now. */
  readonly canonicalHashes: ReadonlyMap<number, string>;
  readonly canonicalLogs: readonly ChainLog[];
  readonly viem: ViemWatcher;
  readonly viemOther: ViemWatcher;
  readonly ethers: EthersWatcher;
  readonly resuming: ResumingWatcher;
  /** HTTP requests the preferred provider's address received. */
  readonly primaryRequests: number;
}

export async function runSubscriptionScene(): Promise<SubscriptionSceneResult> {
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const chain = await startEventChain({ chainId: CHAIN_ID, blockTimeMs: BLOCK_MS });
    closers.push(() => chain.close());
    const lagging = await startLaggingFront(chain.node.url);
    closers.push(() => lagging.close());
    const primary = await startFaultShim(lagging.url, { keepReceived: false });
    closers.push(() => primary.close());
    const honest = await Promise.all([
      startHonestFront(chain.node.url),
      startHonestFront(chain.node.url),
    ]);
    for (const front of honest) closers.push(() => front.close());
    const stack = await startLocalStack({
      containers: 4,
      monitor: true,
      follower: { everyMs: 20_000, runMs: 23_000 },
      config: {
        networks: {
          devnet: {
            chain_id: CHAIN_ID,
            block_time_seconds: BLOCK_MS / 1000,
            providers: [
              { name: "primary", url: primary.url, priority: 3 },
              { name: "second", url: honest[0]?.url ?? "", priority: 2 },
              { name: "third", url: honest[1]?.url ?? "", priority: 1 },
            ],
          },
        },
      },
    });
    closers.push(() => stack.close());
    const status = new GatewayClient();
    closers.push(() => status.close());
    await waitUntil(
      async () => (await status.status(stack.url, "devnet")).served_head.served !== null,
      20_000,
    );
    const appearedAt = new Map<number, number>();
    const polling = pollHeads(() => chain.node.rpc<string>("eth_blockNumber"), appearedAt, 25);
    closers.push(() => polling.stop());
    const servedAt = new Map<number, number>();
    const served = watchPublications(stack, servedAt);
    closers.push(() => served.stop());

    const url = `${stack.wsUrl}/devnet`;
    const [viem, viemOther, ethers, resuming] = await Promise.all([
      watchWithViem(url, CHAIN_ID, chain.contract),
      // Its own socket (viem shares one per URL): another connection, other socket containers.
      watchWithViem(`${url}?client=2`, CHAIN_ID, chain.contract),
      watchWithEthers(url, CHAIN_ID, chain.contract, TICK_TOPIC),
      watchResuming(url),
    ]);
    for (const watcher of [viem, viemOther, ethers, resuming]) closers.push(() => watcher.stop());
    const from = chain.head + 2;
    const faults = inTurn(primary, lagging);
    const away = sleep(DROP_AT_MS)
      .then(() => resuming.drop())
      .then(() => sleep(RESUME_AT_MS - DROP_AT_MS))
      .then(() => resuming.resume());
    await sleep(REORG_AT_MS);
    const { heights, oldHashes } = await reorgOnceDelivered(chain, viem);
    await sleep(SCENE_MS - REORG_AT_MS);
    chain.stopEvents();
    await Promise.all([faults, away]);
    const to = chain.head;
    // Every client has the last block within a few seconds (bounded: one that never does misses it).
    await waitUntil(
      async () =>
        [viem, viemOther, resuming].every(
          (watcher) => (watcher.headers.at(-1)?.number ?? 0) >= to,
        ) && (ethers.blocks.at(-1) ?? 0) >= to,
      10_000,
    ).catch(() => undefined);
    await sleep(1_500);
    const canonicalHashes = new Map<number, string>();
    for (let number = from - 1; number <= to; number++) {
      canonicalHashes.set(number, await hashAt(chain, number));
    }
    return {
      window: { from, to },
      reorg: { heights, oldHashes },
      appearedAt,
      servedAt,
      canonicalHashes,
      canonicalLogs: await chain.logs(from, to),
      viem,
      viemOther,
      ethers,
      resuming,
      primaryRequests: primary.requests,
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/** The preferred provider refuses, hangs, lags and answers 503, one after the other. */
async function inTurn(primary: FaultShim, lagging: { lag: number }): Promise<void> {
  await sleep(FAULT_AT_MS);
  await primary.setFault({ kind: "refuse" });
  await sleep(FAULT_MS);
  await primary.setFault({ kind: "hang" });
  await sleep(FAULT_MS);
  await primary.setFault(null);
  lagging.lag = 4;
  await sleep(FAULT_MS);
  lagging.lag = 0;
  await primary.setFault({ kind: "http", status: 503, body: "Service Temporarily Unavailable" });
  await sleep(FAULT_MS);
  await primary.setFault(null);
}

/**
 * Replaces the two newest blocks once viem has the newest one's logs (so both replaced blocks'
 * logs were sent, and must be sent again as removed), before the next block comes.
 */
async function reorgOnceDelivered(
  chain: EventChain,
  viem: ViemWatcher,
): Promise<{ heights: number[]; oldHashes: string[] }> {
  for (let tries = 0; tries < 10; tries++) {
    const head = chain.head;
    const delivered = () => viem.logs.some((log) => log.blockNumber === head && !log.removed);
    await waitUntil(async () => delivered() || chain.head !== head, 3_000).catch(() => undefined);
    if (chain.head !== head || !delivered()) continue;
    const heights = [head - 1, head];
    const oldHashes = await Promise.all(heights.map((height) => hashAt(chain, height)));
    await reorgWithTicks(chain);
    return { heights, oldHashes };
  }
  throw new Error("viem never had the newest block's logs before the next block: no reorg made");
}

/** Replaces the two newest blocks by two new ones holding a `Tick` each. */
async function reorgWithTicks(chain: EventChain): Promise<void> {
  const [from] = await chain.node.rpc<string[]>("eth_accounts");
  const tick = (n: number) => ({
    from,
    to: chain.contract,
    data: `0x${n.toString(16).padStart(64, "0")}`,
    gas: "0x20000",
  });
  await chain.node.rpc("anvil_reorg", [
    2,
    [
      [tick(7_000_001), 0],
      [tick(7_000_002), 1],
    ],
  ]);
}

async function hashAt(chain: EventChain, number: number): Promise<string> {
  const block = await chain.node.rpc<{ hash: string } | null>("eth_getBlockByNumber", [
    `0x${number.toString(16)}`,
    false,
  ]);
  return block?.hash ?? "";
}

/** Records when each block first shows as the head `read` answers (every `everyMs`). */
function pollHeads(
  read: () => Promise<string>,
  seenAt: Map<number, number>,
  everyMs: number,
): { stop(): Promise<void> } {
  let running = true;
  const done = (async () => {
    while (running) {
      const head = Number.parseInt(await read(), 16);
      const now = Date.now();
      for (let number = head; number >= 0 && !seenAt.has(number); number--) {
        seenAt.set(number, now);
      }
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done.catch(() => undefined);
    },
  };
}

/** Records when each block became the served head, from the publications in the head item. */
function watchPublications(
  stack: LocalStack,
  servedAt: Map<number, number>,
): { stop(): Promise<void> } {
  let running = true;
  const done = (async () => {
    const network = (await stack.runtime.current()).model.networks.get("devnet");
    const delay = publicationDelayMs(network?.settings.head_cache_ms ?? 0);
    while (running) {
      const head = await stack.store.readHead("devnet");
      for (const publication of [head?.previousServed, head?.served]) {
        if (publication == null) continue;
        for (let number = publication.block; number >= 0 && !servedAt.has(number); number--) {
          servedAt.set(number, publication.at + delay);
        }
      }
      // Publications are at least a delay (500 ms) apart and the item keeps the last two.
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done.catch(() => undefined);
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
