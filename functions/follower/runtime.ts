import { type FollowRunResult, runFollower } from "../core/follower/follow-run.ts";
import type { FollowerStore, FollowerSubscriptions } from "../core/follower/follower-ports.ts";
import type { ConnectionPush, SubscriptionStore } from "../core/ports.ts";
import type { ProxyRuntime } from "../proxy/runtime.ts";

/**
 * The head follower's composition root (docs/behaviour.md "Subscriptions over WebSocket",
 * where the follower runs), used by its Lambda handler and the local stack alike: the proxy's
 * runtime (config, the gateway whose pipeline serves every read, telemetry), the registry's
 * subscriptions, the pushes and the follower's own store.
 */

export interface FollowerRuntimeOptions {
  /** The gateway and its config, as the proxy function holds them. */
  readonly proxy: ProxyRuntime;
  readonly subscriptions: FollowerSubscriptions &
    Pick<SubscriptionStore, "networksWithSubscribers">;
  readonly push: ConnectionPush;
  readonly store: FollowerStore;
  readonly clock?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface FollowerRuntime {
  /** One run, as `holder`, until `until()` (ms; it may be brought forward to stop the run). */
  run(holder: string, until: () => number): Promise<FollowRunResult>;
  readonly proxy: ProxyRuntime;
  /** The clock runs are timed by. */
  readonly clock: () => number;
}

export function createFollowerRuntime(options: FollowerRuntimeOptions): FollowerRuntime {
  const clock = options.clock ?? Date.now;
  const sleep =
    options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const { proxy } = options;
  return {
    proxy,
    clock,
    async run(holder, until) {
      try {
        return await runFollower(
          {
            model: async () => (await proxy.current()).model,
            handle: (network, body, remainingMs) =>
              proxy.gateway.handleRpc(network, body, { startedAt: clock(), remainingMs }),
            servedHead: (network) => proxy.gateway.servedHead(network),
            probeHead: (network, timeoutMs) => proxy.gateway.pollHead(network, timeoutMs),
            subscriptions: options.subscriptions,
            push: options.push,
            store: options.store,
            clock,
            sleep,
            telemetry: proxy.telemetry,
            holder,
            flush: () => proxy.flushIfDue(),
          },
          until,
        );
      } finally {
        proxy.telemetry.flush();
      }
    },
  };
}
