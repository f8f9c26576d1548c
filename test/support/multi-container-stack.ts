import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, type LocalStackOptions, startLocalStack } from "../../local/stack.ts";
import { GatewayClient } from "./gateway-client.ts";

/**
 * The e2e scene most attacks on the gateway run in: an anvil chain, the providers the test
 * puts in front of it (fronts that forward, lie, lag or clamp), and the local stack over them
 * as Lambda runs it: several proxy containers over one DynamoDB, the monitor on its timer
 * every second (`check_interval_seconds` 1, unless `config` says otherwise), one network
 * `devnet`. What a scene needs beyond that (more networks, API keys, a clock, another check
 * interval) goes in `network`, `networks`, `config` and `stack`.
 */

type NetworkConfig = ConfigInput["networks"][string];

export interface MultiContainerStackOptions {
  /** Proxy runtimes behind the one port, as warm Lambda containers (default 1). */
  readonly containers?: number;
  /** The monitor on its timer (default true). */
  readonly monitor?: boolean;
  readonly chain?: {
    readonly chainId?: number;
    /** A block every this many seconds; absent: a block per transaction. */
    readonly blockTimeSeconds?: number;
    /** Blocks mined before anything starts (anvil's `finalized` is 64 behind its head). */
    readonly mine?: number;
  };
  /** The network's providers, given the node (a test starts its fronts here). */
  readonly providers: (
    node: AnvilNode,
  ) => NetworkConfig["providers"] | Promise<NetworkConfig["providers"]>;
  /** Keys of `devnet` beside its chain id, block time and providers. */
  readonly network?: Partial<NetworkConfig>;
  /** More networks, given the providers of `devnet`. */
  readonly networks?: (providers: NetworkConfig["providers"]) => Record<string, NetworkConfig>;
  /** Top-level config keys beside `check_interval_seconds` (1) and the networks. */
  readonly config?: Omit<Partial<ConfigInput>, "networks">;
  readonly stack?: Omit<LocalStackOptions, "config" | "containers" | "monitor">;
}

export interface MultiContainerStack {
  readonly node: AnvilNode;
  readonly stack: LocalStack;
  /** A client for the test's calls (keep-alive connections, closed with the scene). */
  readonly client: GatewayClient;
  /** Writes what the monitor would (a quorum snapshot, the chain position) for a scene to set up. */
  readonly monitorStore: DynamoMonitorStore;
  /** `stack.url/devnet`. */
  readonly url: string;
  close(): Promise<void>;
}

export const DEVNET = "devnet";

export async function multiContainerStack(
  options: MultiContainerStackOptions,
): Promise<MultiContainerStack> {
  const chainId = options.chain?.chainId ?? 31337;
  const blockTimeSeconds = options.chain?.blockTimeSeconds;
  const node = await startAnvil({
    chainId,
    ...(blockTimeSeconds === undefined ? {} : { blockTimeSeconds }),
  });
  try {
    const mine = options.chain?.mine ?? 0;
    if (mine > 0) await node.rpc("anvil_mine", [`0x${mine.toString(16)}`]);
    const providers = await options.providers(node);
    const stack = await startLocalStack({
      ...options.stack,
      containers: options.containers ?? 1,
      monitor: options.monitor ?? true,
      config: {
        check_interval_seconds: 1,
        ...options.config,
        networks: {
          [DEVNET]: {
            chain_id: chainId,
            block_time_seconds: blockTimeSeconds ?? 1,
            ...options.network,
            providers,
          },
          ...options.networks?.(providers),
        },
      },
    });
    const client = new GatewayClient();
    return {
      node,
      stack,
      client,
      monitorStore: new DynamoMonitorStore({
        client: stack.store.client,
        tableName: stack.store.tableName,
      }),
      url: `${stack.url}/${DEVNET}`,
      async close() {
        await stack.close();
        await client.close();
        await node.stop();
      },
    };
  } catch (error) {
    await node.stop();
    throw error;
  }
}
