import { defineChain } from "viem";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { startLocalStack } from "../../local/stack.ts";
import { startEventChain } from "./event-chain.ts";
import { GatewayClient } from "./gateway-client.ts";
import {
  comparedWithChain,
  firstLine,
  publicClient,
  runCursorIndexer,
  runWatchContractEvent,
  runWatchEvent,
  type Tally,
  viemErrors,
} from "./indexers.ts";
import { startHonestFront, startTroubledFront } from "./provider-fronts.ts";
import { startSquid } from "./squid-supervisor.ts";
import { waitUntil } from "./wait-until.ts";

/**
 * Issue 25's indexer scene, run whole: one anvil chain with 1–2 `Tick` logs in every 1 s block,
 * behind three providers, four proxy runtimes over one DynamoDB and the monitor on its default
 * 15 s checks. The preferred provider has a real provider's everyday troubles at once: its log
 * index trails its head by 3 blocks (log queries touching its newest 3 blocks answer `[]`), it
 * is a load balancer whose second backend is 2–4 blocks behind (its head steps back and
 * forth; ranges past it are clamped silently), and 40 s into the minute it refuses
 * connections, then answers 503, for a second each (the gateway then rests it, as after a real
 * outage: the last 20 s test failover). Four indexers follow the head through the gateway
 * together for a minute: a cursor loop, viem's `watchEvent` on its `eth_getLogs` path, viem's
 * `watchContractEvent` on filters (its default over HTTP) and subsquid's `EvmBatchProcessor`
 * at 1 confirmation. Afterwards what each holds is compared with the chain's own logs of the
 * minute, read from anvil.
 */

const CHAIN_ID = 31337;
const FOLLOW_MS = 60_000;
/** When the troubled provider refuses, then answers 503, into the minute, and for how long each. */
const OUTAGE_AT_MS = 40_000;
const OUTAGE_STEP_MS = 1000;

export interface IndexerSceneResult {
  /** The blocks compared: from after every indexer started to the last block with events. */
  readonly window: { readonly from: number; readonly to: number };
  readonly tallies: ReadonlyMap<string, Tally>;
  readonly squidCrashes: readonly string[];
  /** Logs the squid's store holds twice in a block. */
  readonly squidDuplicates: number;
  /** The calls the troubled provider received, by method. */
  readonly troubledCalls: ReadonlyMap<string, number>;
  /** HTTP requests that reached the troubled provider's address (refused ones included). */
  readonly troubledRequests: number;
}

export async function runIndexerScene(): Promise<IndexerSceneResult> {
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const chain = await startEventChain({ chainId: CHAIN_ID, blockTimeMs: 1000 });
    closers.push(() => chain.close());
    const troubledFront = await startTroubledFront(chain.node.url, {
      logIndexLagBlocks: 3,
      lagSteps: [2, 3, 4, 3],
      stepMs: 2000,
    });
    closers.push(() => troubledFront.close());
    const troubled = await startFaultShim(troubledFront.url);
    closers.push(() => troubled.close());
    const honest = await Promise.all([
      startHonestFront(chain.node.url),
      startHonestFront(chain.node.url),
    ]);
    for (const front of honest) closers.push(() => front.close());
    const stack = await startLocalStack({
      containers: 4,
      monitor: true,
      config: {
        networks: {
          devnet: {
            chain_id: CHAIN_ID,
            block_time_seconds: 1,
            providers: [
              { name: "troubled", url: troubled.url, priority: 3 },
              { name: "second", url: honest[0]?.url ?? "", priority: 2 },
              { name: "third", url: honest[1]?.url ?? "", priority: 1 },
            ],
          },
        },
      },
    });
    closers.push(() => stack.close());
    const url = `${stack.url}/devnet`;
    const devnet = defineChain({
      id: CHAIN_ID,
      name: "devnet",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [url] } },
    });
    // The indexers start once the gateway serves a head, as they would against a live one.
    const status = new GatewayClient();
    closers.push(() => status.close());
    await waitUntil(
      async () => (await status.status(stack.url, "devnet")).served_head.served !== null,
      20_000,
    );
    const start = chain.head + 1;
    const client = publicClient(url, devnet);
    const indexers = [
      runCursorIndexer(client, chain.contract, start),
      runWatchEvent(url, devnet, chain.contract, start),
      runWatchContractEvent(client, chain.contract),
    ];
    for (const indexer of indexers) closers.push(() => indexer.stop());
    const squid = await startSquid({ url, contract: chain.contract, fromBlock: start });
    closers.push(() => squid.stop());
    const outage = sleep(OUTAGE_AT_MS).then(() => refuseThen503(troubled));

    // The filter of watchContractEvent is installed at its first poll: the window starts after.
    await sleep(3000);
    const from = chain.head + 1;
    await sleep(FOLLOW_MS);
    chain.stopEvents();
    await outage;
    // A block whose calls were sent as the events stopped is mined within a block time.
    await sleep(1500);
    const window = { from, to: chain.head };
    // Each indexer catches up on the last blocks with events (bounded: one that never does is
    // missing them).
    await waitUntil(
      async () =>
        (indexers[0]?.covered() ?? 0) >= window.to && (await squid.committedHead()) >= window.to,
      20_000,
    ).catch(() => undefined);
    await sleep(3000);
    await Promise.all(indexers.map((indexer) => indexer.stop()));
    const squidResult = await squid.stop();

    const canonical = await chain.logs(window.from, window.to);
    const tallies = new Map<string, Tally>();
    for (const indexer of indexers) {
      const errors = await viemErrors(indexer.errors);
      tallies.set(
        indexer.name,
        comparedWithChain(indexer.name, indexer.delivered, canonical, window, errors),
      );
    }
    tallies.set(
      "subsquid",
      comparedWithChain("subsquid (1 confirmation)", squidResult.logs, canonical, window, {
        seen: squid.crashes.length,
        fatal: squid.crashes.length,
        first: squid.crashes.slice(0, 3).map(firstLine),
      }),
    );
    return {
      window,
      tallies,
      squidCrashes: squid.crashes,
      squidDuplicates: squidResult.duplicates,
      troubledCalls: new Map(troubledFront.seen),
      troubledRequests: troubled.requests,
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/** Connections refused for a second, then 503 for a second. */
async function refuseThen503(shim: FaultShim): Promise<void> {
  await shim.setFault({ kind: "refuse" });
  await sleep(OUTAGE_STEP_MS);
  await shim.setFault({ kind: "http", status: 503, body: "Service Temporarily Unavailable" });
  await sleep(OUTAGE_STEP_MS);
  await shim.setFault(null);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
