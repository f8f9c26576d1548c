import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigSource } from "../../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../../functions/adapters/config/secrets.ts";
import { DynamoEventStore } from "../../../functions/adapters/store/event-store.ts";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import { DynamoStatsStore } from "../../../functions/adapters/store/stats-store.ts";
import {
  createUpstream,
  type UpstreamClient,
} from "../../../functions/adapters/upstream/upstream.ts";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import type { NetworkStatus } from "../../../functions/core/status/status.ts";
import { createMonitorRuntime, type MonitorRuntime } from "../../../functions/monitor/runtime.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * What the monitor records on its own, end to end: the quorum head stalling (an anvil node
 * that mines only when told to, under an injected clock) and moving again, and the config in
 * force recorded once per version however many monitor containers load it.
 */

process.env.POWERTOOLS_LOG_LEVEL = "CRITICAL";

const CHAIN_ID = 31337;
let clockNow = Date.now();
const clock = () => clockNow;

let node: AnvilNode;
let stack: LocalStack;
let upstream: UpstreamClient;
const monitors: MonitorRuntime[] = [];

const config = (stallBlockTimes: number): ConfigInput => ({
  check_interval_seconds: 60,
  block_time_seconds: 2,
  events: { head_stall_block_times: stallBlockTimes },
  networks: {
    devnet: { chain_id: CHAIN_ID, providers: [{ name: "solo", url: node.url }] },
  },
});

/** A monitor container of its own: its own config source, memory and event recorder. */
function newMonitor(): MonitorRuntime {
  const tables = { client: stack.store.client, tableName: stack.store.tableName };
  const monitor = createMonitorRuntime({
    configSource: createConfigSource({ kind: "file", path: stack.configPath, clock }),
    secrets: envSecretResolver({}),
    store: stack.store,
    monitorStore: new DynamoMonitorStore(tables),
    statsStore: new DynamoStatsStore(tables),
    eventStore: new DynamoEventStore(tables),
    upstream,
    clock,
    writeMetrics: () => undefined,
  });
  monitors.push(monitor);
  return monitor;
}

async function events(): Promise<Array<[string | null, string, string]>> {
  const response = await fetch(`${stack.url}/devnet/status`);
  const status = (await response.json()) as NetworkStatus;
  return status.events
    .map((event) => [event.provider, event.kind, event.reason])
    .reverse() as Array<[string | null, string, string]>;
}

/** Mines one block stamped with the injected clock's time. */
async function mineAtClock(): Promise<void> {
  await node.rpc("evm_setNextBlockTimestamp", [Math.floor(clockNow / 1000)]);
  await node.rpc("evm_mine", []);
}

beforeAll(async () => {
  // No interval mining: the head moves only when the test mines.
  node = await startAnvil({ chainId: CHAIN_ID });
  // The clock starts after the genesis block, which anvil stamps with its own start.
  const genesis = await node.rpc<{ timestamp: string }>("eth_getBlockByNumber", ["latest", false]);
  clockNow = Math.max(Date.now(), (Number(genesis.timestamp) + 1) * 1000);
  await mineAtClock();
  stack = await startLocalStack({ clock, config: config(5), writeMetrics: () => undefined });
  upstream = createUpstream();
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await upstream?.close();
  await node?.stop();
});

describe("events the monitor records", () => {
  it("the config in force once, a stall of the quorum head once, its recovery, and a config change", async () => {
    const first = newMonitor();
    await first.monitor.tick();
    // Another monitor container loads the same config: it is recorded once.
    clockNow += 1_000;
    await newMonitor().monitor.tick();
    expect(await events()).toEqual([[null, "config_changed", "file"]]);

    // 5 block times of 2 s pass without a block: stalled, reported by the first check that sees it.
    clockNow += 11_000;
    await first.monitor.tick();
    clockNow += 15_000;
    await first.monitor.tick();
    expect((await events()).slice(1)).toEqual([[null, "head_stalled", "no_new_block"]]);

    // A block: the head moves again.
    clockNow += 5_000;
    await mineAtClock();
    await first.monitor.tick();
    expect((await events()).slice(1)).toEqual([
      [null, "head_stalled", "no_new_block"],
      [null, "head_resumed", "new_block"],
    ]);

    // An edited config file is a new config in force; recorded once more.
    await writeFile(stack.configPath, JSON.stringify(config(10)));
    clockNow += 31_000;
    await mineAtClock();
    await first.monitor.tick();
    expect((await events()).map(([, kind]) => kind)).toEqual([
      "config_changed",
      "head_stalled",
      "head_resumed",
      "config_changed",
    ]);
  });
});
