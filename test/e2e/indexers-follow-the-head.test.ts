import { defineChain } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { type EventChain, startEventChain } from "../support/event-chain.ts";
import {
  comparedWithChain,
  firstLine,
  publicClient,
  runCursorIndexer,
  runWatchContractEvent,
  runWatchEvent,
  type Tally,
  viemErrors,
} from "../support/indexers.ts";
import {
  type ProviderFront,
  startHonestFront,
  startTroubledFront,
} from "../support/provider-fronts.ts";
import { startSquid } from "../support/squid-supervisor.ts";
import { waitUntil } from "../support/wait-until.ts";

/**
 * "Nothing lost" for indexers (issue 25's scene; docs/behaviour.md §10, §12): one anvil chain
 * with 1–2 `Tick` logs in every 1 s block, behind three providers, four proxy runtimes over
 * one DynamoDB and the monitor on its default 15 s checks. The preferred provider has a real
 * provider's everyday troubles at once: its log index trails its head by 3 blocks (log
 * queries touching its newest 3 blocks answer `[]`), it is a load balancer whose second
 * backend is 2–4 blocks behind (its head steps back and forth; ranges past it are clamped
 * silently), and 40 s into the minute it refuses connections, then answers 503, for 1 s each
 * (the gateway then rests it, as a real outage would: the last 20 s test failover). Four
 * indexers follow the head through the gateway together for a minute: a cursor loop, viem's
 * `watchEvent` on its `eth_getLogs` path, viem's `watchContractEvent` on filters (its default
 * over HTTP), and subsquid's `EvmBatchProcessor` at 1 confirmation. Afterwards each must hold
 * exactly the chain's own logs of the minute (read from anvil): none missing, none twice, none
 * from another chain, and no error it cannot retry past.
 */

const CHAIN_ID = 31337;
const FOLLOW_MS = 60_000;
/** When the troubled provider refuses, then answers 503, into the minute, and for how long each. */
const OUTAGE_AT_MS = 40_000;
const OUTAGE_STEP_MS = 1000;

let chain: EventChain;
let primaryFront: ProviderFront;
let primary: FaultShim;
let honest: ProviderFront[] = [];
let stack: LocalStack;
const tallies = new Map<string, Tally>();
let squidCrashes: readonly string[] = [];
let window = { from: 0, to: 0 };

beforeAll(async () => {
  chain = await startEventChain({ chainId: CHAIN_ID, blockTimeMs: 1000 });
  primaryFront = await startTroubledFront(chain.node.url, {
    logIndexLagBlocks: 3,
    lagSteps: [2, 3, 4, 3],
    stepMs: 2000,
  });
  primary = await startFaultShim(primaryFront.url);
  honest = await Promise.all([startHonestFront(chain.node.url), startHonestFront(chain.node.url)]);
  stack = await startLocalStack({
    containers: 4,
    monitor: true,
    config: {
      networks: {
        devnet: {
          chain_id: CHAIN_ID,
          block_time_seconds: 1,
          providers: [
            { name: "troubled", url: primary.url, priority: 3 },
            { name: "second", url: honest[0]?.url ?? "", priority: 2 },
            { name: "third", url: honest[1]?.url ?? "", priority: 1 },
          ],
        },
      },
    },
  });
  const url = `${stack.url}/devnet`;
  const devnet = defineChain({
    id: CHAIN_ID,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  // The indexers start once the gateway serves a head, as they would against a live one.
  await waitUntil(async () => (await served(url)) !== null, 20_000);
  const start = chain.head + 1;
  const client = publicClient(url, devnet);
  const indexers = [
    runCursorIndexer(client, chain.contract, start),
    runWatchEvent(url, devnet, chain.contract, start),
    runWatchContractEvent(client, chain.contract),
  ];
  const squid = await startSquid({ url, contract: chain.contract, fromBlock: start });
  const outage = sleep(OUTAGE_AT_MS).then(() => refuseThen503(primary));

  // The filter of watchContractEvent is installed at its first poll: the window starts after.
  await sleep(3000);
  const from = chain.head + 1;
  await sleep(FOLLOW_MS);
  chain.stopEvents();
  await outage;
  // A block whose calls were sent as the events stopped is mined within a block time.
  await sleep(1500);
  window = { from, to: chain.head };
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
  squidCrashes = squid.crashes;

  const canonical = await chain.logs(window.from, window.to);
  for (const indexer of indexers) {
    tallies.set(
      indexer.name,
      comparedWithChain(
        indexer.name,
        indexer.delivered,
        canonical,
        window,
        await viemErrors(indexer.errors),
      ),
    );
  }
  tallies.set(
    "subsquid",
    comparedWithChain(
      "subsquid EvmBatchProcessor (1 confirmation)",
      squidResult.logs,
      canonical,
      window,
      {
        seen: squid.crashes.length,
        fatal: squid.crashes.length,
        first: squid.crashes.slice(0, 3).map(firstLine),
      },
    ),
  );
  const duplicatesInStore = squidResult.duplicates;
  console.log(
    `[indexer scene] blocks ${window.from}-${window.to}, the troubled provider's calls: ${JSON.stringify(Object.fromEntries(primaryFront.seen))}\n${[...tallies.values()].map((tally) => JSON.stringify(tally)).join("\n")}\nsubsquid: ${squidCrashes.length} crashes, ${duplicatesInStore} logs stored twice`,
  );
}, 150_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([
    primary?.close(),
    primaryFront?.close(),
    ...honest.map((front) => front.close()),
  ]);
  await chain?.close();
});

/** Connections refused for a second, then 503 for a second. */
async function refuseThen503(shim: FaultShim): Promise<void> {
  await shim.setFault({ kind: "refuse" });
  await sleep(OUTAGE_STEP_MS);
  await shim.setFault({ kind: "http", status: 503, body: "Service Temporarily Unavailable" });
  await sleep(OUTAGE_STEP_MS);
  await shim.setFault(null);
}

async function served(url: string): Promise<number | null> {
  const status = (await fetch(`${url}/status`).then((response) => response.json())) as {
    served_head: { served: number | null };
  };
  return status.served_head.served;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const tallyOf = (name: string): Tally => {
  const tally = tallies.get(name);
  if (tally === undefined) throw new Error(`no tally for ${name}`);
  return tally;
};

const exactlyTheChain = (tally: Tally) => ({
  onChain: tally.onChain,
  got: tally.onChain,
  missing: 0,
  duplicates: 0,
  notCanonical: 0,
});

describe("four indexers follow the head for a minute through a troubled provider", () => {
  it("the scene is the one promised: a minute of blocks, each with events, and the provider's troubles met", () => {
    expect(window.to - window.from + 1).toBeGreaterThanOrEqual(55);
    expect(tallyOf("cursor loop").onChain).toBeGreaterThanOrEqual(1.4 * (window.to - window.from));
    // The troubled provider had its share of the log queries and the filter before its outage.
    expect(primaryFront.seen.get("eth_getLogs") ?? 0).toBeGreaterThanOrEqual(20);
    expect(primaryFront.seen.get("eth_newFilter") ?? 0).toBeGreaterThanOrEqual(1);
    expect(primary.requests).toBeGreaterThan(primaryFront.seen.size);
  });

  it("the cursor loop (eth_blockNumber, then eth_getLogs from cursor + 1 to it) gets every log exactly once", () => {
    const tally = tallyOf("cursor loop");
    expect(tally).toMatchObject(exactlyTheChain(tally));
  });

  it("viem's watchEvent polling eth_getLogs gets every log exactly once", () => {
    const tally = tallyOf("viem watchEvent (eth_getLogs)");
    expect(tally).toMatchObject(exactlyTheChain(tally));
  });

  it("viem's watchContractEvent on filters gets every log exactly once", () => {
    const tally = tallyOf("viem watchContractEvent (filter)");
    expect(tally).toMatchObject(exactlyTheChain(tally));
  });

  it("subsquid's EvmBatchProcessor at 1 confirmation gets every log exactly once", () => {
    const tally = tallyOf("subsquid");
    expect(tally).toMatchObject(exactlyTheChain(tally));
  });

  it("no indexer meets an error it cannot retry past (viem's retry rule; subsquid does not crash)", () => {
    expect(
      [...tallies.values()].map((tally) => [tally.indexer, tally.errors.fatal, tally.errors.first]),
    ).toEqual([...tallies.values()].map((tally) => [tally.indexer, 0, tally.errors.first]));
    expect(squidCrashes).toEqual([]);
  });
});
