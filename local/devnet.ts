import { type AnvilNode, startAnvil } from "./anvil.ts";
import { type FaultShim, startFaultShim } from "./fault-shim.ts";

/**
 * The devnet `npm start` runs: one anvil chain per network of the config, with a front on
 * each port its providers name on this machine (`http://127.0.0.1:<port>`), all passing
 * everything through to that one node. The providers of a network then serve the same
 * blocks, as real providers of one chain do, so the config needs no safety feature turned off
 * (the fork check included). Separate chains with one chain id are a test's business
 * (test/support/forked-anvils.ts), not the devnet's.
 */

export interface DevnetChain {
  readonly chainId: number;
  readonly blockTimeSeconds: number;
  /** The ports of the network's providers: one front each. */
  readonly fronts: readonly number[];
}

export interface Devnet {
  readonly chains: ReadonlyArray<{
    readonly node: AnvilNode;
    readonly fronts: readonly FaultShim[];
  }>;
  stop(): Promise<void>;
}

/** The devnet's block time when the network sets none: a second, as a quick devnet mines. */
const DEFAULT_BLOCK_TIME_SECONDS = 1;
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost"]);

/**
 * The chains a config's networks point at on this machine: each network with providers on
 * `http://127.0.0.1:<port>` or `http://localhost:<port>` gets one, on the network's chain id
 * and block time. Anything it cannot read is left out (the config check reports it).
 */
export function devnetFor(config: unknown): DevnetChain[] {
  const networks = (config as { networks?: unknown } | null)?.networks;
  if (typeof networks !== "object" || networks === null) return [];
  const taken = new Set<number>();
  const chains: DevnetChain[] = [];
  for (const network of Object.values(networks) as Array<Record<string, unknown>>) {
    const providers = Array.isArray(network?.providers) ? network.providers : [];
    const fronts = [...new Set(providers.map(localPort))].filter(
      (port): port is number => port !== null && !taken.has(port),
    );
    if (typeof network.chain_id !== "number" || fronts.length === 0) continue;
    for (const port of fronts) taken.add(port);
    const blockTime = network.block_time_seconds;
    chains.push({
      chainId: network.chain_id,
      blockTimeSeconds:
        typeof blockTime === "number" && blockTime >= 1 ? blockTime : DEFAULT_BLOCK_TIME_SECONDS,
      fronts,
    });
  }
  return chains;
}

function localPort(provider: unknown): number | null {
  const url = (provider as { url?: unknown } | null)?.url;
  if (typeof url !== "string") return null;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" || !LOCAL_HOSTS.has(parsed.hostname)) return null;
    const port = Number(parsed.port);
    return Number.isInteger(port) && port > 0 ? port : null;
  } catch {
    return null;
  }
}

/** Starts each chain's anvil (on a free port) and its fronts; on any failure, stops them all. */
export async function startDevnet(chains: readonly DevnetChain[]): Promise<Devnet> {
  const started: Array<{ node: AnvilNode; fronts: FaultShim[] }> = [];
  const stop = async () => {
    for (const chain of [...started].reverse()) {
      await Promise.all(chain.fronts.map((front) => front.close()));
      await chain.node.stop();
    }
  };
  try {
    for (const chain of chains) {
      const node = await startAnvil({
        chainId: chain.chainId,
        blockTimeSeconds: chain.blockTimeSeconds,
      });
      const entry = { node, fronts: [] as FaultShim[] };
      started.push(entry);
      for (const port of chain.fronts) {
        entry.fronts.push(await startFaultShim(node.url, { port, keepReceived: false }));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { chains: started.map((chain) => ({ ...chain })), stop };
}
