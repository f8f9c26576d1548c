import {
  type Chain,
  createPublicClient,
  custom,
  http,
  MethodNotSupportedRpcError,
  type PublicClient,
  type Transport,
} from "viem";
import { viemRetries } from "./client-retry.ts";
import { type ChainLog, chainLog, TICK_ABI, TICK_EVENT } from "./event-chain.ts";

/**
 * Indexers as their users run them, following a contract's `Tick` logs through one RPC URL,
 * each keeping every log it was handed and every error it saw. `comparedWithChain` then holds
 * what each got against the chain's own logs.
 */

export interface IndexerRun {
  readonly name: string;
  /** Every log handed to the indexer, in order (a log handed twice is here twice). */
  readonly delivered: ChainLog[];
  /** Errors the indexer saw after its client's own retries. */
  readonly errors: Error[];
  /** The highest block the indexer is known to have covered (the cursor), when it tells. */
  covered(): number;
  stop(): Promise<void>;
}

const POLL_MS = 1000;

export function publicClient(url: string, chain: Chain, transport?: Transport): PublicClient {
  return createPublicClient({ chain, transport: transport ?? http(url), pollingInterval: POLL_MS });
}

/**
 * A cursor indexer: `eth_blockNumber`, then `eth_getLogs` from the cursor + 1 to it, the
 * cursor moved only once the logs are in; an error leaves the cursor where it was, for the next
 * round to try again.
 */
export function runCursorIndexer(
  client: PublicClient,
  address: `0x${string}`,
  from: number,
): IndexerRun {
  const run = newRun("cursor loop");
  let cursor = BigInt(from - 1);
  let active = true;
  const loop = (async () => {
    while (active) {
      try {
        const head = await client.getBlockNumber({ cacheTime: 0 });
        if (head > cursor) {
          const logs = await client.getLogs({
            address,
            event: TICK_EVENT,
            fromBlock: cursor + 1n,
            toBlock: head,
          });
          run.delivered.push(...logs.map(chainLog));
          cursor = head;
        }
      } catch (error) {
        run.errors.push(error as Error);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS / 2));
    }
  })();
  return {
    ...run,
    covered: () => Number(cursor),
    stop: async () => {
      active = false;
      await loop;
    },
  };
}

/**
 * viem's `watchEvent` on its `eth_getLogs` path: the path viem takes when a provider does not
 * install filters, here a client whose transport refuses `eth_newFilter` (every other call
 * goes to the URL through viem's http transport, with its retries).
 */
export function runWatchEvent(
  url: string,
  chain: Chain,
  address: `0x${string}`,
  from: number,
): IndexerRun {
  const run = newRun("viem watchEvent (eth_getLogs)");
  const inner = http(url, { retryCount: 0 })({ chain });
  const withoutFilters = custom({
    request: ({ method, params }) => {
      if (method === "eth_newFilter")
        throw new MethodNotSupportedRpcError(new Error("no filters here"));
      return inner.request({ method, params } as never);
    },
  });
  const client = publicClient(url, chain, withoutFilters);
  const unwatch = client.watchEvent({
    address,
    event: TICK_EVENT,
    fromBlock: BigInt(from),
    poll: true,
    onLogs: (logs) => run.delivered.push(...logs.map(chainLog)),
    onError: (error) => run.errors.push(error),
  });
  return { ...run, covered: () => Number.NaN, stop: async () => unwatch() };
}

/** viem's `watchContractEvent` as it runs by default over HTTP: a filter, polled. */
export function runWatchContractEvent(client: PublicClient, address: `0x${string}`): IndexerRun {
  const run = newRun("viem watchContractEvent (filter)");
  const unwatch = client.watchContractEvent({
    address,
    abi: TICK_ABI,
    eventName: "Tick",
    onLogs: (logs) => run.delivered.push(...logs.map(chainLog)),
    onError: (error) => run.errors.push(error),
  });
  return { ...run, covered: () => Number.NaN, stop: async () => unwatch() };
}

function newRun(name: string): Pick<IndexerRun, "name" | "delivered" | "errors"> {
  return { name, delivered: [], errors: [] };
}

/** What an indexer got of the chain's logs in a window of blocks. */
export interface Tally {
  readonly indexer: string;
  readonly onChain: number;
  readonly got: number;
  readonly missing: number;
  readonly duplicates: number;
  /** Logs handed over that the chain does not have (another block hash, or no such log). */
  readonly notCanonical: number;
  /** The blocks of the logs missing, so a failure says where the gap is. */
  readonly missingBlocks: readonly number[];
  /** Errors seen, and those the client's own retry rule gives up on at once (fatal). */
  readonly errors: ErrorCount;
}

export interface ErrorCount {
  readonly seen: number;
  readonly fatal: number;
  readonly first: readonly string[];
}

/** An indexer's errors, fatal being those viem's retry rule does not retry. */
export async function viemErrors(errors: readonly Error[]): Promise<ErrorCount> {
  const retried = await Promise.all(errors.map(viemRetries));
  return {
    seen: errors.length,
    fatal: retried.filter((again) => !again).length,
    first: errors.slice(0, 3).map(firstLine),
  };
}

/** An error's first line, with what the provider or gateway said when the client keeps it apart. */
export function firstLine(error: Error | string): string {
  if (typeof error === "string") return error.split("\n")[0]?.slice(0, 240) ?? "";
  const said = (error as { details?: unknown }).details;
  const first = error.message.split("\n")[0] ?? "";
  return (
    typeof said === "string" && said !== "" && !first.includes(said) ? `${first} (${said})` : first
  ).slice(0, 240);
}

const keyOf = (log: ChainLog) => `${log.blockNumber}:${log.logIndex}`;

/** `delivered` against `canonical`, both cut to blocks `from`..`to`. */
export function comparedWithChain(
  indexer: string,
  delivered: readonly ChainLog[],
  canonical: readonly ChainLog[],
  window: { readonly from: number; readonly to: number },
  errors: ErrorCount,
): Tally {
  const inWindow = (log: ChainLog) =>
    log.blockNumber >= window.from && log.blockNumber <= window.to;
  const chainLogs = new Map(canonical.filter(inWindow).map((log) => [keyOf(log), log]));
  const seen = new Map<string, number>();
  let notCanonical = 0;
  for (const log of delivered.filter(inWindow)) {
    const onChain = chainLogs.get(keyOf(log));
    if (onChain === undefined || onChain.blockHash !== log.blockHash) {
      notCanonical++;
      continue;
    }
    seen.set(keyOf(log), (seen.get(keyOf(log)) ?? 0) + 1);
  }
  const duplicates = [...seen.values()].reduce((sum, times) => sum + times - 1, 0);
  return {
    indexer,
    onChain: chainLogs.size,
    got: seen.size,
    missing: chainLogs.size - seen.size,
    duplicates,
    notCanonical,
    missingBlocks: [...chainLogs.entries()]
      .filter(([key]) => !seen.has(key))
      .map(([, log]) => log.blockNumber),
    errors,
  };
}
