import { describe, expect, it } from "vitest";
import { errorMessage, followerScene, subscription } from "../../support/follower-fakes.ts";
import { sceneFollower, stepUntilIdle } from "../../support/follower-harness.ts";

/**
 * Reorgs as the head follower delivers them (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower), as geth does: the replaced blocks' logs again with
 * `removed: true`, oldest first, then the new branch's headers and logs.
 */

const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const UNTIL = 10_000_000;
const tick = (n: number) => [{ address: A, topics: [`0x${n.toString(16).padStart(64, "0")}`] }];

describe("a reorg", () => {
  it.each([1, 3, 12])("of %i blocks: removed logs first, then the new branch", async (depth) => {
    const scene = followerScene(5);
    const logs = subscription("c1", "logs", 5, { address: [A] });
    const heads = subscription("c2", "newHeads", 5);
    scene.subscriptions.add(logs, heads);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    for (let i = 0; i < 15; i++) scene.chain.mine(tick(i));
    await stepUntilIdle(follower);
    const replacedHashes = scene.chain.blocks.slice(-depth).map((block) => block.hash);
    scene.chain.reorg(depth, (number) => tick(100 + number));
    scene.chain.mine(tick(200));
    await stepUntilIdle(follower);

    const got = scene.push
      .results("c1", logs.id)
      .map((log) => `${Number(log.blockNumber)}${log.removed ? "-" : "+"}`);
    const firstReplaced = 20 - depth;
    const delivered = Array.from({ length: 15 }, (_, i) => 5 + i);
    const replaced = Array.from({ length: depth }, (_, i) => firstReplaced + i);
    expect(got).toEqual([
      ...delivered.map((n) => `${n}+`),
      ...replaced.map((n) => `${n}-`),
      ...replaced.map((n) => `${n}+`),
      "20+",
    ]);
    const removed = scene.push.results("c1", logs.id).filter((log) => log.removed === true);
    expect(removed.map((log) => log.blockHash)).toEqual(replacedHashes);
    // The new branch's headers follow the old ones at the same heights, with the new hashes.
    const headers = scene.push.results("c2", heads.id);
    expect(headers.map((header) => Number(header.number))).toEqual([...delivered, ...replaced, 20]);
    expect(headers.at(-2)?.hash).toBe(scene.chain.block(19)?.hash);
  });

  it("sends removed logs only to subscriptions that were sent them", async () => {
    const scene = followerScene(5);
    const before = subscription("c1", "logs", 5, {});
    const otherAddress = subscription("c2", "logs", 5, { address: [B] });
    scene.subscriptions.add(before, otherAddress);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine(tick(1));
    await stepUntilIdle(follower);
    // Subscribed after block 5 was delivered: its first block is 6.
    const after = subscription("c3", "logs", 6, {});
    scene.subscriptions.add(after);
    scene.chain.reorg(1, () => tick(2));
    scene.chain.mine(tick(3));
    await stepUntilIdle(follower);
    const flags = (connection: string, id: string) =>
      scene.push
        .results(connection, id)
        .map((log) => `${Number(log.blockNumber)}${log.removed ? "-" : "+"}`);
    expect(flags("c1", before.id)).toEqual(["5+", "5-", "5+", "6+"]);
    expect(flags("c2", otherAddress.id)).toEqual([]);
    expect(flags("c3", after.id)).toEqual(["6+"]);
  });

  it("closes every socket with a reason when the chain restarted below every block remembered", async () => {
    const scene = followerScene(50);
    const heads = subscription("c1", "newHeads", 50);
    scene.subscriptions.add(heads);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    for (let i = 0; i < 5; i++) scene.chain.mine();
    await stepUntilIdle(follower);
    // A devnet reset: the same chain id from block 0 again, now at 20.
    scene.chain.blocks = [];
    scene.chain.reorg(0);
    for (let i = 0; i < 21; i++) scene.chain.mine();
    await stepUntilIdle(follower);
    expect(scene.push.closed.get("c1")).toBe("the chain restarted");
    const last = scene.push.results("c1", heads.id).at(-1);
    expect(errorMessage(last)).toMatch(/chain was replaced/);
    expect(follower.cursor?.next).toBe(21);
  });

  it("regression: a reorg deeper than the blocks remembered went on from the oldest of them as its fork, and the subscriber kept the replaced headers and logs below it without a word; now who was sent one is told and closed, and a later subscription gets its removed logs and the new branch", async () => {
    const scene = followerScene(10);
    const old = subscription("c1", "logs", 10, {});
    scene.subscriptions.add(old);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    for (let i = 0; i < 70; i++) scene.chain.mine(tick(i));
    await stepUntilIdle(follower, 200);
    const recent = follower.cursor?.recent ?? [];
    expect(recent).toHaveLength(64);
    const oldest = recent[0]?.number ?? 0;
    // A subscription made after the oldest remembered block: every block it was sent is known.
    const late = subscription("c2", "logs", scene.chain.tip + 1, {});
    scene.subscriptions.add(late);
    scene.chain.mine(tick(100));
    await stepUntilIdle(follower);
    scene.chain.reorg(scene.chain.tip - oldest + 3, () => tick(7));
    scene.chain.mine(tick(8));
    await stepUntilIdle(follower, 200);
    expect(scene.push.closed.get("c1")).toBe("deep reorg");
    expect(errorMessage(scene.push.results("c1", old.id).at(-1))).toMatch(/deeper than the blocks/);
    expect(scene.push.closed.has("c2")).toBe(false);
    const lateGot = scene.push.results("c2", late.id);
    expect(lateGot.filter((log) => log.removed === true)).toHaveLength(1);
    expect(lateGot.at(-1)?.removed).toBe(false);
  });

  it("counts the replaced blocks whose logs were not kept, and sends the new branch", async () => {
    const scene = followerScene(5);
    const logs = subscription("c1", "logs", 5, {});
    scene.subscriptions.add(logs);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine(tick(1));
    await stepUntilIdle(follower);
    scene.store.logs.clear();
    scene.chain.reorg(1, () => tick(2));
    // No block comes after it: the tip is read again once two block times passed without one.
    await stepUntilIdle(follower);
    expect(scene.push.results("c1", logs.id)).toHaveLength(1);
    scene.clock.now += 2000;
    await stepUntilIdle(follower);
    const got = scene.push
      .results("c1", logs.id)
      .map((log) => `${Number(log.blockNumber)}${log.removed ? "-" : "+"}`);
    expect(got).toEqual(["5+", "5+"]);
    expect(
      scene.telemetry.logs.find((line) => line.message === "the follower saw a reorg")?.fields,
    ).toMatchObject({ fork: 4, replaced: 1, removed_logs: 0 });
  });
});
