import { describe, expect, it } from "vitest";
import { buildModel, parseConfig } from "../../../functions/core/config/network-model.ts";
import {
  FOLLOWER_RUN_MS,
  type FollowRunDeps,
  runFollower,
} from "../../../functions/core/follower/follow-run.ts";
import { followerScene, subscription } from "../../support/follower-fakes.ts";
import { VirtualTime } from "../../support/virtual-time.ts";

/**
 * Runs of the follower as EventBridge starts them (docs/behaviour.md "Subscriptions over
 * WebSocket", where the follower runs): one a minute, each a little longer, so the next one
 * takes each network's lease over as the one before gives it back, and no block waits for it.
 */

const parsed = parseConfig({
  networks: {
    devnet: {
      chain_id: 31337,
      block_time_seconds: 1,
      providers: [{ name: "a", url: "http://127.0.0.1:1" }],
    },
    quiet: { chain_id: 1, providers: [{ name: "b", url: "http://127.0.0.1:2" }] },
  },
});
if (!parsed.ok) throw new Error("the test's config does not parse");
const model = buildModel(parsed.config, (url) => url);

function deps(
  scene: ReturnType<typeof followerScene>,
  time: VirtualTime,
  holder: string,
  inForce = model,
): FollowRunDeps {
  return {
    model: async () => inForce,
    handle: (_network, body) => scene.chain.handle(body),
    servedHead: () => scene.chain.servedHeadRead(),
    probeHead: () => scene.chain.probeHead(),
    subscriptions: {
      list: (network) => scene.subscriptions.list(network),
      advance: (...args) => scene.subscriptions.advance(...args),
      disconnect: (network, connection) => scene.subscriptions.disconnect(network, connection),
      networksWithSubscribers: async (names) =>
        (await scene.subscriptions.networksWithSubscribers(names)).filter(
          (name) => name === "devnet",
        ),
    },
    push: scene.push,
    store: scene.store,
    clock: time.clock,
    sleep: time.sleep,
    telemetry: scene.telemetry,
    holder,
    flush: async () => undefined,
  };
}

describe("runs of the follower", () => {
  it("hand each network over from one run to the next with no block waiting for it", async () => {
    const time = new VirtualTime();
    const scene = followerScene(5, time);
    const heads = subscription("c1", "newHeads", 5);
    scene.subscriptions.add(heads);
    const start = time.now;
    const seenAt = new Map<number, number>();
    const post = scene.push.post.bind(scene.push);
    scene.push.post = async (network, connection, data) => {
      const number = Number(JSON.parse(data).params.result.number);
      seenAt.set(number, time.now);
      return post(network, connection, data);
    };
    // A block a second for three minutes; a run a minute, each FOLLOWER_RUN_MS long.
    const mined = new Map<number, number>();
    for (let second = 1; second <= 180; second++) {
      time.at(start + second * 1000, () => {
        mined.set(scene.chain.mine(), time.now);
      });
    }
    const runs = [0, 1, 2].map(
      (minute) =>
        new Promise<void>((resolve) =>
          time.at(start + minute * 60_000, () => {
            const until = start + minute * 60_000 + FOLLOWER_RUN_MS;
            void runFollower(deps(scene, time, `run-${minute}`), () => until).then(() => resolve());
          }),
        ),
    );
    await time.run(Promise.all(runs));
    const got = scene.push.results("c1", heads.id).map((header) => Number(header.number));
    const expected = [...mined.keys()].filter((number) => number <= (got.at(-1) ?? -1));
    expect(got).toEqual([...new Set(got)]);
    expect(got).toEqual(expected);
    expect(got.length).toBeGreaterThan(170);
    const delays = got.map((number) => (seenAt.get(number) ?? 0) - (mined.get(number) ?? 0));
    expect(Math.max(...delays)).toBeLessThan(1_000);
  });

  it("follows only networks with subscriptions, and goes on after a step that failed", async () => {
    const time = new VirtualTime();
    const scene = followerScene(5, time);
    const heads = subscription("c1", "newHeads", 5);
    scene.subscriptions.add(heads);
    const list = scene.subscriptions.list.bind(scene.subscriptions);
    let failures = 1;
    scene.subscriptions.list = async () => {
      if (failures-- > 0) throw new Error("DynamoDB is out of reach");
      return list();
    };
    const start = time.now;
    for (let second = 1; second <= 10; second++)
      time.at(start + second * 1000, () => scene.chain.mine());
    const until = start + 14_000;
    const result = await time.run(runFollower(deps(scene, time, "run-0"), () => until));
    expect(result.networks).toBe(1);
    const got = scene.push.results("c1", heads.id).map((header) => Number(header.number));
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => 5 + i));
    expect(scene.telemetry.counts.get("follower_errors")).toBe(1);
    // The lease is given back at the end of the run.
    expect(scene.store.cursor?.holder).toBeNull();
  });

  it("regression: a silent connection whose API key was rotated since its connect was still streamed to; now the follower delivers nothing to a subscription its key no longer serves (docs/behaviour.md §15.3)", async () => {
    const keyed = parseConfig({
      api_keys: [{ name: "k", sha256: "a".repeat(64) }],
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          providers: [{ name: "a", url: "http://127.0.0.1:1" }],
        },
      },
    });
    if (!keyed.ok) throw new Error("the test's config does not parse");
    const time = new VirtualTime();
    const scene = followerScene(5, time);
    const served = { ...subscription("c1", "newHeads", 5), caller: "k", keySha256: "a".repeat(64) };
    const rotated = {
      ...subscription("c2", "newHeads", 5),
      caller: "k",
      keySha256: "b".repeat(64),
    };
    scene.subscriptions.add(served);
    scene.subscriptions.add(rotated);
    const start = time.now;
    for (let second = 1; second <= 5; second++)
      time.at(start + second * 1000, () => scene.chain.mine());
    const until = start + 8_000;
    const inForce = buildModel(keyed.config, (url) => url);
    await time.run(runFollower(deps(scene, time, "run-0", inForce), () => until));
    expect(scene.push.results("c1", served.id).length).toBeGreaterThan(0);
    expect(scene.push.results("c2", rotated.id)).toEqual([]);
  });
});
