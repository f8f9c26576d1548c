import { describe, expect, it } from "vitest";
import { claimed, newCursor, RECENT_BLOCKS } from "../../../functions/core/follower/cursor.ts";
import { errorMessage, followerScene, subscription } from "../../support/follower-fakes.ts";
import { sceneFollower, stepUntilIdle } from "../../support/follower-harness.ts";

/**
 * Resume (docs/behaviour.md "Subscriptions over WebSocket", the follower): a subscription
 * made with `resumeFrom` starts behind the cursor and gets every block after it, in order,
 * then the live stream; the cursor stays bounded however long it runs.
 */

const T0 = 1_000_000;

describe("the cursor", () => {
  it("remembers a bounded run of consecutive blocks, the newest last", () => {
    let cursor = newCursor(100);
    for (let number = 100; number <= 1_000; number++) {
      cursor = claimed(cursor, { number, key: `0x${number}` });
    }
    expect(cursor.recent).toHaveLength(RECENT_BLOCKS);
    expect(cursor.recent.at(-1)?.number).toBe(1_000);
    expect(
      cursor.recent.every(
        (block, i) => i === 0 || block.number === (cursor.recent[i - 1]?.number ?? 0) + 1,
      ),
    ).toBe(true);
    // A block of a new branch below the tip drops what was remembered above it.
    const forked = claimed(cursor, { number: 990, key: "0xother" });
    expect(forked.recent.at(-1)).toEqual({ number: 990, key: "0xother" });
    expect(forked.next).toBe(991);
  });
});

describe("a subscription behind the cursor", () => {
  it("is caught up in order, then goes live: every block once", async () => {
    const scene = followerScene(5);
    const live = subscription("c1", "newHeads", 5);
    scene.subscriptions.add(live);
    const follower = sceneFollower(scene);
    await follower.begin(T0 + 10_000_000);
    for (let i = 0; i < 100; i++) scene.chain.mine();
    await stepUntilIdle(follower);
    // The client of c1 lost its socket after block 30 and comes back with resumeFrom 30.
    const resumed = subscription("c2", "newHeads", 31);
    const logs = subscription("c2", "logs", 31, {});
    scene.subscriptions.add(resumed, logs);
    await stepUntilIdle(follower);
    for (let i = 0; i < 3; i++) {
      scene.chain.mine([{ address: `0x${"a".repeat(40)}`, topics: [] }]);
      await stepUntilIdle(follower);
    }
    const got = scene.push.results("c2", resumed.id).map((header) => Number(header.number));
    expect(got).toEqual(Array.from({ length: 77 }, (_, i) => 31 + i));
    const gotLogs = scene.push.results("c2", logs.id).map((log) => Number(log.blockNumber));
    expect(gotLogs).toEqual([105, 106, 107]);
    expect(scene.subscriptions.subs.get(resumed.id)?.live).toBe(true);
  });

  it("is told and closed when it is further behind than the window holds", async () => {
    const scene = followerScene(5);
    const follower = sceneFollower(scene, "run-1", { resumeWindowMs: 10_000 });
    scene.subscriptions.add(subscription("c0", "newHeads", 5));
    await follower.begin(T0 + 10_000_000);
    for (let i = 0; i < 200; i++) scene.chain.mine();
    await stepUntilIdle(follower);
    const stale = subscription("c1", "newHeads", 6);
    scene.subscriptions.add(stale);
    // With no block to deliver, the subscriptions are read again three seconds later (LIST_IDLE_MS).
    scene.clock.now += 3000;
    await stepUntilIdle(follower);
    expect(scene.push.closed.get("c1")).toBe("too far behind");
    expect(errorMessage(scene.push.results("c1", stale.id)[0])).toMatch(/blocks behind the chain/);
  });
});
