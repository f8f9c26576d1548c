import type { GatewayModel } from "../config/network-model.ts";
import type { ConnectionPush, SubscriptionStore, Telemetry } from "../ports.ts";
import { keyStillServes } from "../subscriptions/key-standing.ts";
import { followerSettingsOf, READ_MARGIN_MS } from "./follow-settings.ts";
import type { FollowerStore, FollowerSubscriptions } from "./follower-ports.ts";
import { NetworkFollower } from "./network-follower.ts";

/**
 * One run of the head follower (docs/behaviour.md "Subscriptions over WebSocket", where the
 * follower runs): EventBridge starts one a minute, each lasting a little over a minute, so the
 * next one is waiting when it ends. Every few seconds the run looks for the networks that hold
 * subscriptions; for each, it takes the network's lease (waiting while the run before gives it
 * up) and steps its follower at the served head's pace until the run ends or the network has
 * no subscription left. A step that throws (DynamoDB out of reach) is logged and tried again.
 */

export interface FollowRunDeps {
  /** The config in force (reloaded as the source changes). */
  readonly model: () => Promise<GatewayModel>;
  /** Serves a request text through the gateway's pipeline, for `network`. */
  readonly handle: (
    network: string,
    body: string,
    remainingMs: number,
  ) => Promise<{ readonly body: string }>;
  /** The served head of `network`, never asked of a provider. */
  readonly servedHead: (network: string) => Promise<number | null>;
  /** Asks a quorum member of `network` for its head now, published as the gateway's polls are. */
  readonly probeHead: (network: string, timeoutMs: number) => Promise<number | null>;
  readonly subscriptions: FollowerSubscriptions &
    Pick<SubscriptionStore, "networksWithSubscribers">;
  readonly push: ConnectionPush;
  readonly store: FollowerStore;
  readonly clock: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly telemetry: Telemetry;
  /** Names this run in the leases (the Lambda request id). */
  readonly holder: string;
  /** Writes the stats and metrics gathered so far, when due. */
  readonly flush: () => Promise<void>;
}

export interface FollowRunResult {
  /** Networks this run followed (held the lease of) at some point. */
  readonly networks: number;
  readonly steps: number;
}

/** How often the run looks for networks that gained or lost their subscriptions. */
export const DISCOVERY_MS = 2_000;
/** How often a run waiting for a network's lease asks again, at first, and then. */
const LEASE_POLL_MS = 100;
const LEASE_POLL_SLOW_MS = 1_000;
const LEASE_POLL_FAST_FOR_MS = 5_000;

/** Follows every network with subscriptions until `until()` (ms), which may be brought forward to stop. */
export async function runFollower(
  deps: FollowRunDeps,
  until: () => number,
): Promise<FollowRunResult> {
  const { clock, sleep, telemetry } = deps;
  const following = new Map<string, Promise<void>>();
  const wanted = new Set<string>();
  let networks = 0;
  let steps = 0;
  const open = () => clock() < until() - READ_MARGIN_MS;

  async function follow(name: string): Promise<void> {
    const network = (await deps.model()).networks.get(name);
    if (network === undefined) return;
    const settings = followerSettingsOf(network);
    const follower = new NetworkFollower({
      network: name,
      holder: deps.holder,
      handle: (body, remainingMs) => deps.handle(name, body, remainingMs),
      servedHead: () => deps.servedHead(name),
      probeHead: (timeoutMs) => deps.probeHead(name, timeoutMs),
      subscriptions: servedByTheirKeys(deps.subscriptions, deps.model),
      push: deps.push,
      store: deps.store,
      clock,
      wait: sleep,
      telemetry,
      settings,
    });
    const waitingSince = clock();
    for (;;) {
      if (!open() || !wanted.has(name)) return;
      if (await follower.begin(until()).catch((error: unknown) => failed(name, error))) break;
      const fast = clock() - waitingSince < LEASE_POLL_FAST_FOR_MS;
      await sleep(fast ? LEASE_POLL_MS : LEASE_POLL_SLOW_MS);
    }
    networks++;
    try {
      while (open() && wanted.has(name)) {
        const result = await follower.step().catch((error: unknown) => {
          failed(name, error);
          return "idle" as const;
        });
        steps++;
        if (result === "stopped") break;
        await deps.flush();
        if (result !== "behind") await sleep(follower.waitMs());
      }
    } finally {
      await follower.end();
    }
  }

  function failed(network: string, error: unknown): false {
    telemetry.log("error", "the follower's step failed", {
      network,
      error: error instanceof Error ? error.message : String(error),
    });
    telemetry.count("follower_errors", { network });
    return false;
  }

  while (open()) {
    const names = [...(await deps.model()).networks.keys()];
    const busy = await deps.subscriptions.networksWithSubscribers(names).catch((error: unknown) => {
      failed("*", error);
      // Unknown for now: the networks being followed go on.
      return [...wanted];
    });
    wanted.clear();
    for (const name of busy) wanted.add(name);
    for (const name of busy) {
      if (following.has(name)) continue;
      following.set(
        name,
        follow(name).finally(() => following.delete(name)),
      );
    }
    await sleep(Math.max(0, Math.min(DISCOVERY_MS, until() - READ_MARGIN_MS - clock())));
  }
  await Promise.all(following.values());
  await deps.flush();
  return { networks, steps };
}

/**
 * A run lasts a little over the schedule's minute (it stops stepping `READ_MARGIN_MS` before its end),
 * so the next one, started on the minute, is waiting for each lease when this one gives it back.
 */
export const FOLLOWER_RUN_MS = 63_000;
/** Never run into the Lambda timeout (90 s): the last step ends this long before it. */
const LAMBDA_END_MARGIN_MS = 10_000;

/** When a scheduled run ends, from its start and `context.getRemainingTimeInMillis()`. */
export function runEndsAt(startedAt: number, remainingMs: number): number {
  return startedAt + Math.min(FOLLOWER_RUN_MS, remainingMs - LAMBDA_END_MARGIN_MS);
}

/**
 * The registry as the follower reads it: only the subscriptions whose API key still serves
 * them under the config in force (docs/behaviour.md §15.3), so a connection that stays silent
 * after its key was rotated or removed is not streamed to.
 */
function servedByTheirKeys(
  subscriptions: FollowerSubscriptions,
  model: () => Promise<GatewayModel>,
): FollowerSubscriptions {
  return {
    list: async (network) => {
      const [{ apiKeys }, listed] = await Promise.all([model(), subscriptions.list(network)]);
      return listed.filter((subscription) => keyStillServes(subscription, apiKeys));
    },
    advance: (...args) => subscriptions.advance(...args),
    disconnect: (network, connection) => subscriptions.disconnect(network, connection),
  };
}
