import { describe, expect, it } from "vitest";
import { MOVE_CONCURRENCY } from "../../../functions/core/follower/delivery/listing.ts";
import { MAX_MESSAGE_BYTES } from "../../../functions/core/follower/delivery/notifications.ts";
import { errorMessage, followerScene, subscription } from "../../support/follower-fakes.ts";
import { sceneFollower, stepUntilIdle } from "../../support/follower-harness.ts";

/**
 * The head follower's delivery (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower): every block once, in order, to every subscriber from its first block on; logs
 * matched per subscription from one query per block; the 128 KB bound; slow consumers.
 */

const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const T1 = `0x${"1".repeat(64)}`;
const T2 = `0x${"2".repeat(64)}`;
const UNTIL = 10_000_000;

const numbers = (results: Array<Record<string, unknown>>) =>
  results.map((result) => Number(result.number ?? result.blockNumber));

describe("the head follower delivers every block once, in order", () => {
  it("sends each new header to a newHeads subscription exactly once, however the head moves", async () => {
    const scene = followerScene(10);
    const heads = subscription("c1", "newHeads", 10);
    scene.subscriptions.add(heads);
    const follower = sceneFollower(scene);
    expect(await follower.begin(UNTIL)).toBe(true);
    // The head moves one block, several at once, not at all, and past a step's worth.
    for (const mined of [1, 3, 0, 1, 40, 2]) {
      for (let i = 0; i < mined; i++) scene.chain.mine();
      await stepUntilIdle(follower);
    }
    const got = numbers(scene.push.results("c1", heads.id));
    expect(got).toEqual(Array.from({ length: 47 }, (_, i) => 10 + i));
    // One write to make it live, none per block after that.
    expect(scene.subscriptions.advances).toBe(1);
  });

  it("regression: it listed the subscriptions (a Query growing with them) at every look at the served head, 8 a second; now only with a block to send or a tip to check", async () => {
    const scene = followerScene(5);
    const heads = subscription("c1", "newHeads", 5);
    scene.subscriptions.add(heads);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine();
    await stepUntilIdle(follower);
    const before = scene.subscriptions.lists;
    // Looks at the served head for 1.9 s with no new block: no list.
    for (let i = 0; i < 19; i++) {
      scene.clock.now += 100;
      await follower.step();
    }
    expect(scene.subscriptions.lists).toBe(before);
    // A new block: one list to send it.
    scene.chain.mine();
    await follower.step();
    expect(scene.subscriptions.lists).toBe(before + 1);
    // Two block times with none: the tip is read again (a reorg at its height), with a list.
    for (let i = 0; i < 20; i++) {
      scene.clock.now += 100;
      await follower.step();
    }
    expect(scene.subscriptions.lists).toBe(before + 2);
    expect(numbers(scene.push.results("c1", heads.id))).toEqual([5, 6]);
  });

  it("regression: a subscription's move to live whose answer was lost threw after its block was claimed, and the block went to nobody (a silent gap); now the block goes out and the subscription is caught up", async () => {
    const scene = followerScene(5);
    const heads = subscription("c1", "newHeads", 5);
    const other = subscription("c2", "newHeads", 5);
    scene.subscriptions.add(heads, other);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine();
    scene.subscriptions.lostAnswers = 1;
    await follower.step().catch(() => "threw");
    for (let i = 0; i < 2; i++) {
      scene.chain.mine();
      await stepUntilIdle(follower);
    }
    expect(numbers(scene.push.results("c1", heads.id))).toEqual([5, 6, 7]);
    expect(numbers(scene.push.results("c2", other.id))).toEqual([5, 6, 7]);
    expect(scene.push.closed.size).toBe(0);
  });

  it("regression: a step that threw while a block's logs were asked for went on past the block, its logs never sent; now they are left pending and sent at the next step", async () => {
    const scene = followerScene(5);
    const logs = subscription("c1", "logs", 5, {});
    scene.subscriptions.add(logs);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine([{ address: A, topics: [T1] }]);
    scene.chain.throwing.set("eth_getLogs", 1);
    await expect(follower.step()).rejects.toThrow(/eth_getLogs/);
    scene.chain.mine([{ address: A, topics: [T2] }]);
    await stepUntilIdle(follower);
    expect(numbers(scene.push.results("c1", logs.id))).toEqual([5, 6]);
    expect(scene.push.closed.size).toBe(0);
  });

  it("regression: a step that threw after a block was claimed went on past it, a silent gap; now the block's subscribers are told and their sockets closed", async () => {
    const scene = followerScene(5);
    const logs = subscription("c1", "logs", 5, {});
    scene.subscriptions.add(logs);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine([{ address: A, topics: [T1] }]);
    // The block is claimed, its logs' read throws, and so does the write leaving them pending.
    scene.chain.throwing.set("eth_getLogs", 1);
    scene.store.beforeWrite = (cursor) => {
      if (cursor.logsPending !== null) throw new Error("connect ECONNREFUSED (DynamoDB)");
    };
    await expect(follower.step()).rejects.toThrow(/ECONNREFUSED/);
    scene.store.beforeWrite = null;
    scene.chain.mine([{ address: A, topics: [T2] }]);
    await stepUntilIdle(follower);
    expect(scene.push.closed.get("c1")).toBe("delivery interrupted");
    const [told] = scene.push.results("c1", logs.id);
    expect(errorMessage(told)).toMatch(/resumeFrom 0x4/);
  });

  it("regression: subscriptions going live were moved one at a time before their block went out, so 1,000 clients subscribing at once held every subscriber's block for 1,000 writes in a row (the cost bench fell behind); now 32 at once", async () => {
    const scene = followerScene(5);
    const subs = Array.from({ length: 200 }, (_, i) => subscription(`c${i}`, "newHeads", 5));
    scene.subscriptions.add(...subs);
    scene.subscriptions.slowAdvances = true;
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine();
    await stepUntilIdle(follower);
    expect(scene.subscriptions.mostAdvancesAtOnce).toBe(MOVE_CONCURRENCY);
    expect(scene.subscriptions.advances).toBe(200);
    for (const sub of subs)
      expect(numbers(scene.push.results(sub.connection, sub.id))).toEqual([5]);
  });

  it("regression: a list read as it was before a subscription went live costs it no block", async () => {
    const scene = followerScene(5);
    const heads = subscription("c1", "newHeads", 5);
    scene.subscriptions.add(heads);
    scene.subscriptions.staleReads = true;
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    await follower.step();
    for (let i = 0; i < 3; i++) {
      scene.chain.mine();
      await stepUntilIdle(follower);
    }
    expect(numbers(scene.push.results("c1", heads.id))).toEqual([5, 6, 7]);
  });

  it("sends geth's header shape: the block without its body", async () => {
    const scene = followerScene(3);
    const heads = subscription("c1", "newHeads", 3);
    scene.subscriptions.add(heads);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine();
    await stepUntilIdle(follower);
    const [message] = scene.push.sent.get("c1") ?? [];
    expect(message).toMatchObject({ jsonrpc: "2.0", method: "eth_subscription" });
    const [header] = scene.push.results("c1", heads.id);
    expect(Object.keys(header ?? {}).sort()).toEqual(
      ["extraData", "hash", "logsBloom", "number", "parentHash", "timestamp"].sort(),
    );
  });

  it("starts a new subscription at its first block and never sends it an earlier one", async () => {
    const scene = followerScene(5);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    const early = subscription("c1", "newHeads", 5);
    const late = subscription("c2", "newHeads", 8);
    scene.subscriptions.add(early, late);
    for (let i = 0; i < 6; i++) scene.chain.mine();
    await stepUntilIdle(follower);
    expect(numbers(scene.push.results("c1", early.id))).toEqual([5, 6, 7, 8, 9, 10]);
    expect(numbers(scene.push.results("c2", late.id))).toEqual([8, 9, 10]);
  });

  it("matches each logs subscription's filter against one query per block", async () => {
    const scene = followerScene(2);
    const byAddress = subscription("c1", "logs", 2, { address: [A] });
    const byTopic = subscription("c2", "logs", 2, { topics: [T2] });
    const byBoth = subscription("c2", "logs", 2, { address: [B], topics: [[T1, T2]] });
    const any = subscription("c3", "logs", 2, {});
    scene.subscriptions.add(byAddress, byTopic, byBoth, any);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine([
      { address: A, topics: [T1] },
      { address: B, topics: [T2] },
    ]);
    scene.chain.mine([{ address: B, topics: [T1] }]);
    scene.chain.mine();
    await stepUntilIdle(follower);
    const logs = (connection: string, id: string) =>
      scene.push
        .results(connection, id)
        .map((log) => `${Number(log.blockNumber)}:${Number(log.logIndex)}`);
    expect(logs("c1", byAddress.id)).toEqual(["2:0"]);
    expect(logs("c2", byTopic.id)).toEqual(["2:1"]);
    expect(logs("c2", byBoth.id)).toEqual(["2:1", "3:0"]);
    expect(logs("c3", any.id)).toEqual(["2:0", "2:1", "3:0"]);
    // One eth_getLogs per block with logs subscribers, whatever their number.
    expect(scene.chain.calls.get("eth_getLogs")).toBe(3);
  });

  it("sends an error notification in place of a header over 128 KB, never a cut one, and goes on", async () => {
    const scene = followerScene(2);
    const heads = subscription("c1", "newHeads", 2);
    scene.subscriptions.add(heads);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.headerPadding = MAX_MESSAGE_BYTES / 2;
    scene.chain.mine();
    await stepUntilIdle(follower);
    scene.chain.headerPadding = 0;
    scene.chain.mine();
    await stepUntilIdle(follower);
    const [tooBig, next] = scene.push.results("c1", heads.id);
    expect(tooBig).toMatchObject({ error: { code: -32000 } });
    expect(errorMessage(tooBig)).toMatch(
      /header of block 0x2 is \d+ bytes as a notification, over the 131072 bytes/,
    );
    expect(Number(next?.number)).toBe(3);
    for (const message of scene.push.sent.get("c1") ?? []) {
      expect(JSON.stringify(message).length).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    }
    expect(scene.telemetry.counts.get("subscription_notifications:too_large")).toBe(1);
  });

  it("drops a consumer whose pushes fail, with its subscriptions, and keeps serving the others", async () => {
    const scene = followerScene(2);
    const slow = subscription("slow", "newHeads", 2);
    const slowLogs = subscription("slow", "logs", 2, {});
    const gone = subscription("gone", "newHeads", 2);
    const fine = subscription("fine", "newHeads", 2);
    scene.subscriptions.add(slow, slowLogs, gone, fine);
    scene.push.outcomes.set("slow", "failed");
    scene.push.outcomes.set("gone", "gone");
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine([{ address: A, topics: [] }]);
    scene.chain.mine();
    await stepUntilIdle(follower);
    expect(scene.push.closed.get("slow")).toMatch(/slow or broken consumer/);
    expect(scene.push.closed.has("gone")).toBe(false);
    expect(scene.subscriptions.disconnected.sort()).toEqual(["gone", "slow"]);
    expect([...scene.subscriptions.subs.values()].map((sub) => sub.connection)).toEqual(["fine"]);
    expect(numbers(scene.push.results("fine", fine.id))).toEqual([2, 3]);
    expect(scene.telemetry.counts.get("subscription_delivery_failures")).toBe(1);
  });
});

describe("a block whose logs no provider serves", () => {
  it("is asked again until a provider serves it: no gap, no error", async () => {
    const scene = followerScene(2);
    const logs = subscription("c1", "logs", 2, {});
    scene.subscriptions.add(logs);
    const follower = sceneFollower(scene);
    await follower.begin(UNTIL);
    scene.chain.mine([{ address: A, topics: [] }]);
    scene.chain.failingLogs.set(2, 5);
    const started = scene.clock.now;
    await stepUntilIdle(follower);
    expect(scene.clock.now - started).toBeGreaterThan(1_000);
    expect(scene.push.results("c1", logs.id).map((log) => Number(log.blockNumber))).toEqual([2]);
    expect(scene.push.closed.size).toBe(0);
  });

  it("is an error notification and a closed socket for its logs subscribers after the bound; newHeads go on", async () => {
    const scene = followerScene(2);
    const logs = subscription("c1", "logs", 2, {});
    const heads = subscription("c2", "newHeads", 2);
    scene.subscriptions.add(logs, heads);
    const follower = sceneFollower(scene, "run-1", { deliveryTimeoutMs: 5_000 });
    await follower.begin(UNTIL);
    scene.chain.mine([{ address: A, topics: [] }]);
    scene.chain.failingLogs.set(2, Number.POSITIVE_INFINITY);
    scene.chain.mine();
    await stepUntilIdle(follower);
    const [error] = scene.push.results("c1", logs.id);
    expect(errorMessage(error)).toMatch(
      /logs of block 0x2 .* could not be read from any provider within 5 s .*resumeFrom 0x1/,
    );
    expect(scene.push.closed.get("c1")).toMatch(/logs of block 0x2 undeliverable/);
    expect(numbers(scene.push.results("c2", heads.id))).toEqual([2, 3]);
    expect(scene.telemetry.counts.get("subscription_delivery_failures")).toBe(1);
  });
});
