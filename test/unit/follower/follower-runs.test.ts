import { describe, expect, it } from "vitest";
import { blockKey } from "../../../functions/core/follower/cursor.ts";
import { errorMessage, followerScene, subscription } from "../../support/follower-fakes.ts";
import { sceneFollower, stepUntilIdle } from "../../support/follower-harness.ts";

/**
 * The follower across runs (docs/behaviour.md "Subscriptions over WebSocket", the follower):
 * one run at a time holds a network's lease; a new run goes on from the stored cursor with no
 * gap and no duplicate; a run that stopped mid-block is never a silent gap.
 */

const A = `0x${"a".repeat(40)}`;

describe("runs of the follower", () => {
  it("take turns on the lease and deliver every block once between them", async () => {
    const scene = followerScene(5);
    const heads = subscription("c1", "newHeads", 5);
    const logs = subscription("c1", "logs", 5, {});
    scene.subscriptions.add(heads, logs);
    const first = sceneFollower(scene, "run-1");
    const second = sceneFollower(scene, "run-2");
    const until = scene.clock.now + 60_000;
    expect(await first.begin(until)).toBe(true);
    expect(await second.begin(until)).toBe(false);
    for (let i = 0; i < 3; i++) scene.chain.mine([{ address: A, topics: [] }]);
    await stepUntilIdle(first);
    await first.end();
    for (let i = 0; i < 3; i++) scene.chain.mine([{ address: A, topics: [] }]);
    expect(await second.begin(until)).toBe(true);
    await stepUntilIdle(second);
    const got = scene.push.results("c1", heads.id).map((header) => Number(header.number));
    expect(got).toEqual([5, 6, 7, 8, 9, 10]);
    expect(scene.push.results("c1", logs.id).map((log) => Number(log.blockNumber))).toEqual([
      5, 6, 7, 8, 9, 10,
    ]);
    expect(scene.push.closed.size).toBe(0);
  });

  it.each([
    ["the claim of a block", "an error", 1, "lostAnswers"],
    ["the lease itself", "an error", 0, "lostAnswers"],
    ["the claim of a block", "the SDK's retry refused by the write itself", 1, "retriedAnswers"],
    ["the lease itself", "the SDK's retry refused by the write itself", 0, "retriedAnswers"],
  ] as const)(
    "regression: a cursor write whose answer was lost (%s made, answered by %s) stopped the run for the rest of its lease and closed the block's sockets; now the follower reads the cursor back and goes on",
    async (_name, _answer, writesBefore, how) => {
      const scene = followerScene(5);
      const heads = subscription("c1", "newHeads", 5);
      scene.subscriptions.add(heads);
      const follower = sceneFollower(scene, "run-1");
      if (writesBefore === 0) scene.store[how] = 1;
      expect(await follower.begin(scene.clock.now + 60_000)).toBe(true);
      scene.chain.mine();
      scene.store[how] = 1;
      await stepUntilIdle(follower);
      for (let i = 0; i < 3; i++) {
        scene.chain.mine();
        await stepUntilIdle(follower);
      }
      const got = scene.push.results("c1", heads.id).map((header) => Number(header.number));
      expect(got).toEqual([5, 6, 7, 8]);
      expect(scene.push.closed.size).toBe(0);
      expect(scene.store.cursor?.holder).toBe("run-1");
    },
  );

  it("takes over an expired lease", async () => {
    const scene = followerScene(5);
    scene.subscriptions.add(subscription("c1", "newHeads", 5));
    const first = sceneFollower(scene, "run-1");
    expect(await first.begin(scene.clock.now + 5_000)).toBe(true);
    const second = sceneFollower(scene, "run-2");
    scene.clock.now += 5_001;
    expect(await second.begin(scene.clock.now + 60_000)).toBe(true);
    // Past its lease the first run reads nothing, so sends nothing.
    scene.chain.mine();
    expect(await first.step()).toBe("idle");
    expect(scene.push.sent.size).toBe(0);
  });

  it("stops at once when another run wrote the cursor: its claim loses, nothing is sent", async () => {
    const scene = followerScene(5);
    scene.subscriptions.add(subscription("c1", "newHeads", 5));
    const first = sceneFollower(scene, "run-1");
    expect(await first.begin(scene.clock.now + 60_000)).toBe(true);
    const stored = scene.store.cursor;
    if (stored === null) throw new Error("no cursor");
    scene.store.cursor = { ...stored, holder: "run-2", version: stored.version + 1 };
    scene.chain.mine();
    expect(await first.step()).toBe("stopped");
    expect(scene.push.sent.size).toBe(0);
    expect(first.cursor).toBeNull();
  });

  it("leaves a block's logs pending when the run ends before a provider serves them; the next run sends them", async () => {
    const scene = followerScene(5);
    const heads = subscription("c1", "newHeads", 5);
    const logs = subscription("c2", "logs", 5, {});
    scene.subscriptions.add(heads, logs);
    const first = sceneFollower(scene, "run-1", { deliveryTimeoutMs: 60_000 });
    expect(await first.begin(scene.clock.now + 5_000)).toBe(true);
    scene.chain.mine([{ address: A, topics: [] }]);
    scene.chain.failingLogs.set(5, Number.POSITIVE_INFINITY);
    expect(await first.step()).toBe("stopped");
    await first.end();
    expect(scene.store.cursor?.logsPending).toBe(scene.chain.block(5)?.hash);
    scene.chain.failingLogs.clear();
    scene.chain.mine();
    const second = sceneFollower(scene, "run-2");
    expect(await second.begin(scene.clock.now + 60_000)).toBe(true);
    await stepUntilIdle(second);
    expect(scene.push.results("c1", heads.id).map((header) => Number(header.number))).toEqual([
      5, 6,
    ]);
    expect(scene.push.results("c2", logs.id).map((log) => Number(log.blockNumber))).toEqual([5]);
    expect(scene.push.closed.size).toBe(0);
  });

  it("tells the subscribers of a block a stopped run left half-sent, and closes their sockets", async () => {
    const scene = followerScene(5);
    const live = subscription("c1", "newHeads", 5);
    const later = subscription("c2", "newHeads", 9);
    scene.subscriptions.add({ ...live, live: true }, later);
    // A run claimed block 7 and stopped (its Lambda ended) before it was done.
    scene.store.cursor = {
      next: 8,
      done: 7,
      logsPending: null,
      pendingSince: 0,
      recent: [{ number: 7, key: blockKey(scene.chain.block(7)?.hash ?? "") }],
      catchingUp: [],
      holder: "run-1",
      leaseUntil: scene.clock.now - 1,
      version: 3,
    };
    const second = sceneFollower(scene, "run-2");
    expect(await second.begin(scene.clock.now + 60_000)).toBe(true);
    expect(scene.push.closed.get("c1")).toBe("delivery interrupted");
    const [told] = scene.push.results("c1", live.id);
    expect(errorMessage(told)).toMatch(/resumeFrom 0x6/);
    expect(scene.push.closed.has("c2")).toBe(false);
    expect(scene.store.cursor?.done).toBe(8);
  });
});
