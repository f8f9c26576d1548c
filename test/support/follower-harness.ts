import type { FollowerSettings } from "../../functions/core/follower/follow-settings.ts";
import { NetworkFollower } from "../../functions/core/follower/network-follower.ts";
import type { FollowerScene } from "./follower-fakes.ts";

/** A network's follower over a scene's in-memory parts (test/support/follower-fakes.ts). */
export function sceneFollower(
  scene: FollowerScene,
  holder = "run-1",
  settings: Partial<FollowerSettings> = {},
): NetworkFollower {
  return new NetworkFollower({
    network: "devnet",
    holder,
    handle: scene.chain.handle,
    servedHead: scene.chain.servedHeadRead,
    probeHead: scene.chain.probeHead,
    subscriptions: scene.subscriptions,
    push: scene.push,
    store: scene.store,
    clock: () => scene.clock.now,
    wait: async (ms) => {
      scene.clock.now += ms;
    },
    telemetry: scene.telemetry,
    settings: {
      blockTimeMs: 1000,
      resumeWindowMs: 600_000,
      deliveryTimeoutMs: 10_000,
      maxBatch: 100,
      headCacheMs: 250,
      publicationDelayMs: 500,
      ...settings,
    },
  });
}

/** Runs steps until the follower has nothing left to deliver now (at most `max`). */
export async function stepUntilIdle(follower: NetworkFollower, max = 50): Promise<void> {
  for (let i = 0; i < max; i++) {
    const result = await follower.step();
    if (result !== "behind") return;
  }
}
