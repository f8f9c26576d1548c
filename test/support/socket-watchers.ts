import { type Log as EthersLog, WebSocketProvider } from "ethers";
import { createPublicClient, defineChain, type Hex, webSocket } from "viem";
import WebSocket from "ws";
import { TICK_ABI } from "./event-chain.ts";

/**
 * Clients of the gateway's WebSocket as users run them, each recording what it is sent for a
 * scene to compare with the node (docs/behaviour.md "Subscriptions over WebSocket"): viem's
 * `webSocket()` transport with `watchBlocks` and `watchContractEvent` (and a raw `newHeads`
 * subscription beside them, timed on arrival), ethers' `WebSocketProvider`, and a bare socket
 * that can drop and come back with `resumeFrom`.
 */

export interface SeenHeader {
  readonly number: number;
  readonly hash: string;
  /** When it arrived (ms). */
  readonly at: number;
}

export interface SeenLog {
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly logIndex: number;
  readonly removed: boolean;
}

export interface Watcher {
  readonly name: string;
  /** Errors the client reported (its onError callbacks), as text. */
  readonly errors: string[];
  stop(): Promise<void>;
}

export interface ViemWatcher extends Watcher {
  readonly headers: SeenHeader[];
  /** Block numbers `watchBlocks` called `onBlock` with. */
  readonly blocks: number[];
  readonly logs: SeenLog[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export function watchWithViem(url: string, chainId: number, contract: Hex): Promise<ViemWatcher> {
  const chain = defineChain({
    id: chainId,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url.replace(/^ws/, "http")], webSocket: [url] } },
  });
  const client = createPublicClient({ chain, transport: webSocket(url) });
  const watcher: ViemWatcher = {
    name: "viem",
    headers: [],
    blocks: [],
    logs: [],
    errors: [],
    stop: async () => undefined,
  };
  return (async () => {
    const raw = await client.transport.subscribe({
      params: ["newHeads"],
      onData: (data: { result?: { number?: string; hash?: string } }) => {
        if (data.result?.number === undefined) return;
        watcher.headers.push({
          number: Number(data.result.number),
          hash: String(data.result.hash),
          at: Date.now(),
        });
      },
      onError: (error: unknown) => watcher.errors.push(errorText(error)),
    });
    const unwatchBlocks = client.watchBlocks({
      onBlock: (block) => watcher.blocks.push(Number(block.number)),
      onError: (error) => watcher.errors.push(errorText(error)),
    });
    const unwatchEvents = client.watchContractEvent({
      address: contract,
      abi: TICK_ABI,
      eventName: "Tick",
      onLogs: (logs) => {
        for (const log of logs) {
          watcher.logs.push({
            blockNumber: Number(log.blockNumber),
            blockHash: String(log.blockHash),
            logIndex: Number(log.logIndex),
            removed: log.removed,
          });
        }
      },
      onError: (error) => watcher.errors.push(errorText(error)),
    });
    return Object.assign(watcher, {
      stop: async () => {
        unwatchBlocks();
        unwatchEvents();
        await Promise.race([raw.unsubscribe().catch(() => undefined), sleep(1_000)]);
        const socket = await client.transport.getRpcClient();
        socket.close();
      },
    });
  })();
}

export interface EthersWatcher extends Watcher {
  readonly blocks: number[];
  readonly logs: SeenLog[];
}

export async function watchWithEthers(
  url: string,
  chainId: number,
  contract: string,
  topic: string,
): Promise<EthersWatcher> {
  const provider = new WebSocketProvider(url, chainId);
  const watcher: EthersWatcher = {
    name: "ethers",
    blocks: [],
    logs: [],
    errors: [],
    stop: async () => {
      await provider.destroy();
    },
  };
  provider.on("error", (error: unknown) => watcher.errors.push(errorText(error)));
  await provider.on("block", (number: number) => watcher.blocks.push(number));
  await provider.on({ address: contract, topics: [topic] }, (log: EthersLog) => {
    watcher.logs.push({
      blockNumber: log.blockNumber,
      blockHash: log.blockHash,
      logIndex: log.index,
      removed: log.removed,
    });
  });
  return watcher;
}

/** A bare socket with one `newHeads` subscription, which can drop and resume. */
export interface ResumingWatcher extends Watcher {
  readonly headers: SeenHeader[];
  /** Drops the socket (no unsubscribe): what a client losing its network does. */
  drop(): void;
  /** A new socket and subscription, with `resumeFrom` the last block seen. */
  resume(): Promise<void>;
}

export async function watchResuming(url: string): Promise<ResumingWatcher> {
  let socket: WebSocket | null = null;
  const watcher: ResumingWatcher = {
    name: "resuming socket",
    headers: [],
    errors: [],
    drop: () => {
      socket?.terminate();
      socket = null;
    },
    resume: async () => {
      const last = watcher.headers.at(-1)?.number;
      await open(last === undefined ? [] : [{ resumeFrom: `0x${last.toString(16)}` }]);
    },
    stop: async () => {
      socket?.close();
      socket = null;
    },
  };
  const open = async (extra: unknown[]) => {
    const next = new WebSocket(url);
    await new Promise((resolve, reject) => {
      next.once("open", resolve);
      next.once("error", reject);
    });
    const answered = new Promise<void>((resolve, reject) => {
      next.on("message", (data) => {
        const message = JSON.parse(String(data)) as {
          id?: number;
          error?: { message: string };
          params?: { result?: { number: string; hash: string }; error?: { message: string } };
        };
        if (message.id === 1) {
          if (message.error) reject(new Error(message.error.message));
          else resolve();
          return;
        }
        if (message.params?.error) watcher.errors.push(message.params.error.message);
        const result = message.params?.result;
        if (result) {
          watcher.headers.push({
            number: Number(result.number),
            hash: result.hash,
            at: Date.now(),
          });
        }
      });
    });
    next.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_subscribe",
        params: ["newHeads", ...extra],
      }),
    );
    await answered;
    socket = next;
  };
  await open([]);
  return watcher;
}
