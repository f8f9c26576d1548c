import { describe, expect, it } from "vitest";
import {
  claimed,
  type FollowerCursor,
  MARK_SLOT_MS,
  newCursor,
  RECENT_BLOCKS,
} from "../../functions/core/follower/cursor.ts";
import { resumeStart } from "../../functions/core/follower/resume.ts";
import { errorMessage, followerScene, subscription } from "../support/follower-fakes.ts";
import { sceneFollower, stepUntilIdle } from "../support/follower-harness.ts";

/**
 * Resume (docs/behaviour.md "Subscriptions over WebSocket", the follower): a client that
 * subscribes again with `resumeFrom` gets every block after it, in order, then the live
 * stream, when the blocks were delivered within the resume window.
 */

const WINDOW = 600_000;
const T0 = 1_000_000;

/** A cursor that claimed blocks `from`..`to`, one a second from T0. */
function cursorOver(from: number, to: number): FollowerCursor {
  let cursor = newCursor(from);
  for (let number = from; number <= to; number++) {
    cursor = claimed(cursor, { number, key: `0x${number}` }, T0 + (number - from) * 1000, WINDOW);
  }
  return cursor;
}

describe("resumeStart", () => {
  const cursor = cursorOver(100, 1_000);
  const now = T0 + 900_000;
  it.each([
    ["the block after the last one seen", 999, { ok: true, nextBlock: 1_000 }],
    ["the newest delivered block: nothing missed yet", 1_000, { ok: true, nextBlock: 1_001 }],
    ["a block inside the window", 400, { ok: true, nextBlock: 401 }],
  ])("accepts %s", (_case, resumeFrom, expected) => {
    expect(resumeStart(cursor, resumeFrom, now, WINDOW)).toEqual(expected);
  });

  it.each([
    [
      "older than the window",
      250,
      /older than the resume window \(600 s\).*oldest resumeFrom accepted now is 0x/,
    ],
    [
      "past the newest block delivered",
      1_001,
      /past the newest block delivered on this network \(0x3e8\)/,
    ],
  ])("refuses one %s, naming what it accepts", (_case, resumeFrom, message) => {
    const start = resumeStart(cursor, resumeFrom, now, WINDOW);
    expect(start.ok).toBe(false);
    expect(start.ok ? "" : start.message).toMatch(message);
  });

  it("refuses on a network that delivered nothing in the window", () => {
    expect(resumeStart(null, 5, now, WINDOW).ok).toBe(false);
    expect(resumeStart(cursorOver(1, 10), 5, T0 + 10 * WINDOW, WINDOW).ok).toBe(false);
  });

  it("offers no block claimed before the window, to within a mark's slot", () => {
    const start = resumeStart(cursor, 0, now, WINDOW);
    const oldest =
      Number.parseInt(/is (0x[0-9a-f]+);/.exec(start.ok ? "" : start.message)?.[1] ?? "", 16) + 1;
    const claimedAt = T0 + (oldest - 100) * 1000;
    expect(claimedAt).toBeGreaterThanOrEqual(now - WINDOW);
    expect(claimedAt).toBeLessThan(now - WINDOW + MARK_SLOT_MS);
  });

  it("keeps the cursor bounded: the remembered blocks and the marks", () => {
    expect(cursor.recent).toHaveLength(RECENT_BLOCKS);
    expect(cursor.recent.at(-1)?.number).toBe(1_000);
    expect(cursor.marks.length).toBeLessThanOrEqual(WINDOW / MARK_SLOT_MS + 2);
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
    await stepUntilIdle(follower);
    expect(scene.push.closed.get("c1")).toBe("too far behind");
    expect(errorMessage(scene.push.results("c1", stale.id)[0])).toMatch(/blocks behind the chain/);
  });
});
