import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoFollowerStore } from "../../../functions/adapters/subscriptions/follower-store.ts";
import { createFollowerRuntime } from "../../../functions/follower/runtime.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { type EventChain, startEventChain } from "../../support/event-chain.ts";
import { MemorySubscriptions, RecordingPush, subscription } from "../../support/follower-fakes.ts";
import { GatewayClient, rpcCall } from "../../support/gateway-client.ts";
import { type ProviderFront, startHonestFront } from "../../support/provider-fronts.ts";
import { waitUntil } from "../../support/wait-until.ts";

/**
 * The head follower on the gateway's own pipeline (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower), with real parts but the socket: an anvil chain with `Tick` logs
 * in every 1 s block behind two providers, the local stack with its monitor, the follower's
 * store in its DynamoDB, pushes recorded. While the preferred provider answers every log query
 * with 503 the logs come from the other; an `anvil_reorg` of two blocks is sent as removed logs
 * and the new branch. Every header and log is compared with the node's own.
 */

const CHAIN_ID = 31337;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Delivered {
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly logIndex: number;
  readonly removed: boolean;
}

describe("the head follower through the gateway's pipeline", () => {
  let chain: EventChain;
  let primary: FaultShim;
  let second: ProviderFront;
  let stack: LocalStack;
  const client = new GatewayClient();

  beforeAll(async () => {
    chain = await startEventChain({ chainId: CHAIN_ID, blockTimeMs: 1000 });
    primary = await startFaultShim(chain.node.url);
    second = await startHonestFront(chain.node.url);
    stack = await startLocalStack({
      monitor: true,
      config: {
        networks: {
          devnet: {
            chain_id: CHAIN_ID,
            block_time_seconds: 1,
            providers: [
              { name: "primary", url: primary.url, priority: 2 },
              { name: "second", url: second.url, priority: 1 },
            ],
          },
        },
      },
    });
    await waitUntil(
      async () => (await client.status(stack.url, "devnet")).served_head.served !== null,
      20_000,
    );
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await primary?.close();
    await second?.close();
    await chain?.close();
    await client.close();
  });

  it("delivers every header and log once, logs from the other provider while one fails, and a reorg as removed logs", async () => {
    const answer = await client.send(`${stack.url}/devnet`, rpcCall("eth_blockNumber", []));
    const start = Number(JSON.parse(answer.text).result) + 1;
    const subscriptions = new MemorySubscriptions();
    const heads = subscription("c1", "newHeads", start);
    const logs = subscription("c2", "logs", start, { address: [chain.contract.toLowerCase()] });
    subscriptions.add(heads, logs);
    const push = new RecordingPush();
    const follower = createFollowerRuntime({
      proxy: stack.runtime,
      subscriptions,
      push,
      store: new DynamoFollowerStore({
        client: stack.store.client,
        tableName: stack.store.tableName,
      }),
    });
    // A run as the schedule starts one, brought to an end once the scene is over.
    let stopAt = Date.now() + 60_000;
    const run = follower.run("e2e", () => stopAt);
    await sleep(3_000);
    await primary.setFault({
      kind: "for_method",
      method: "eth_getLogs",
      fault: { kind: "http", status: 503, body: "Service Temporarily Unavailable" },
    });
    await sleep(4_000);
    await primary.setFault(null);
    await sleep(1_000);
    const [from] = await chain.node.rpc<string[]>("eth_accounts");
    const tick = (n: number) => ({
      from,
      to: chain.contract,
      data: `0x${n.toString(16).padStart(64, "0")}`,
      gas: "0x20000",
    });
    // The reorg comes once the newest block's logs went out (so both replaced blocks were sent).
    let beforeReorg = 0;
    await waitUntil(async () => {
      beforeReorg = chain.head;
      const sentLogs = push.results("c2", logs.id).map((log) => Number(log.blockNumber));
      return sentLogs.includes(beforeReorg) && chain.head === beforeReorg;
    }, 10_000);
    await chain.node.rpc("anvil_reorg", [
      2,
      [
        [tick(900_001), 0],
        [tick(900_002), 1],
      ],
    ]);
    await sleep(4_000);
    chain.stopEvents();
    await sleep(2_500);
    stopAt = Date.now();
    await run;

    const headers = push.results("c1", heads.id);
    const numbers = headers.map((header) => Number(header.number));
    const last = numbers.at(-1) ?? 0;
    expect(last).toBeGreaterThan(start + 10);
    // Every height once, in order, but the two the reorg replaced: their new headers follow.
    const replaced = [beforeReorg - 1, beforeReorg];
    const once = Array.from({ length: last - start + 1 }, (_, i) => start + i);
    const expected = [
      ...once.filter((n) => n <= beforeReorg),
      ...replaced,
      ...once.filter((n) => n > beforeReorg),
    ];
    expect(numbers).toEqual(expected);
    // The last header sent at each height is the chain's.
    const lastAt = new Map(headers.map((header) => [Number(header.number), header.hash]));
    for (const number of [start, ...replaced, last]) {
      const block = await chain.node.rpc<{ hash: string }>("eth_getBlockByNumber", [
        `0x${number.toString(16)}`,
        false,
      ]);
      expect(lastAt.get(number)).toBe(block.hash);
    }

    const sent: Delivered[] = push.results("c2", logs.id).map((log) => ({
      blockNumber: Number(log.blockNumber),
      blockHash: String(log.blockHash),
      logIndex: Number(log.logIndex),
      removed: log.removed === true,
    }));
    const key = (log: { blockHash: string; logIndex: number }) =>
      `${log.blockHash}#${log.logIndex}`;
    const removed = sent.filter((log) => log.removed);
    expect(removed.length).toBeGreaterThanOrEqual(2);
    expect(new Set(removed.map((log) => log.blockNumber))).toEqual(new Set(replaced));
    const kept = new Map<string, Delivered>();
    for (const log of sent) {
      if (log.removed) kept.delete(key(log));
      else {
        expect(kept.has(key(log))).toBe(false);
        kept.set(key(log), log);
      }
    }
    const canonical = await chain.logs(start, last);
    expect([...kept.keys()].sort()).toEqual(canonical.map(key).sort());
    expect(push.closed.size).toBe(0);
    // The preferred provider was asked for logs while it failed them: the other served them.
    expect(primary.received.some((request) => request.methods.includes("eth_getLogs"))).toBe(true);
  }, 60_000);
});
