import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoMonitorStore } from "../../../functions/adapters/store/monitor-store.ts";
import {
  DynamoStateStore,
  networkKey,
  providerKey,
} from "../../../functions/adapters/store/state-store.ts";
import { DynamoStatsStore } from "../../../functions/adapters/store/stats-store.ts";
import { createUpstream } from "../../../functions/adapters/upstream/upstream.ts";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import {
  buildModel,
  type GatewayModel,
  parseConfig,
} from "../../../functions/core/config/network-model.ts";
import { HEALTHY } from "../../../functions/core/health/health.ts";
import { createMonitor, type MonitorStateStore } from "../../../functions/core/monitor/monitor.ts";
import type { StateStore, Telemetry } from "../../../functions/core/ports.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import {
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
} from "../../../local/dynamodb.ts";
import { recordingTelemetry } from "../../support/recording-telemetry.ts";

/**
 * The monitor's own health signals on real parts (anvil, dynalite): `monitor_ticks` counts a
 * tick only when it wrote a heartbeat, `monitor_errors` counts each network that failed, and
 * the health items of providers removed from the config are left to expire.
 */

const TABLE = "rpc-gateway-heartbeat-e2e";
const NOW = Date.now() + 3_600_000;

let node: AnvilNode;
let dynamo: LocalDynamoDb;
let client: DynamoDBClient;
let upstream: ReturnType<typeof createUpstream>;

beforeAll(async () => {
  [node, dynamo] = await Promise.all([
    startAnvil({ chainId: 31337 }),
    startDynalite({ tableName: TABLE }),
  ]);
  client = createLocalDynamoDbClient(dynamo.endpoint);
  upstream = createUpstream();
}, 60_000);

afterAll(async () => {
  await upstream?.close();
  client?.destroy();
  await dynamo?.close();
  await node?.stop();
});

function modelOf(networks: Record<string, string[]>): GatewayModel {
  const config: ConfigInput = {
    networks: Object.fromEntries(
      Object.entries(networks).map(([name, providers]) => [
        name,
        {
          chain_id: 31337,
          providers: providers.map((provider) => ({ name: provider, url: node.url })),
        },
      ]),
    ),
  };
  const parsed = parseConfig(config);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return buildModel(parsed.config, (url) => url);
}

/** A state store whose reads of one network fail, as when its partition is throttled. */
function failingFor(store: StateStore, broken: string): MonitorStateStore {
  return {
    readNetwork: (network) =>
      network === broken
        ? Promise.reject(new Error("ProvisionedThroughputExceededException"))
        : store.readNetwork(network),
    writeHealth: (...args) => store.writeHealth(...args),
    publishServed: (...args) => store.publishServed(...args),
    recordHistoryProbe: (...args) => store.recordHistoryProbe(...args),
    recordHistoryBound: (...args) => store.recordHistoryBound(...args),
    forgetHistoryBound: (...args) => store.forgetHistoryBound(...args),
  };
}

function monitorWith(model: GatewayModel, telemetry: Telemetry, store: MonitorStateStore) {
  const tables = { client, tableName: TABLE };
  return createMonitor({
    model: () => model,
    store,
    monitorStore: new DynamoMonitorStore(tables),
    statsStore: new DynamoStatsStore(tables),
    upstream,
    clock: () => NOW,
    telemetry,
  });
}

const stateStore = () => new DynamoStateStore({ client, tableName: TABLE, clock: () => NOW });

describe("monitor_ticks and monitor_errors", () => {
  it("a tick that wrote a heartbeat for some network counts once; each failed network counts an error", async () => {
    const telemetry = recordingTelemetry();
    const model = modelOf({ "hb-ok": ["a"], "hb-broken": ["a"] });
    await monitorWith(model, telemetry, failingFor(stateStore(), "hb-broken")).tick();

    expect(telemetry.counts.map(({ name, dimensions }) => [name, dimensions])).toEqual([
      ["monitor_errors", { network: "hb-broken" }],
      ["monitor_ticks", {}],
    ]);
  });

  it("regression: a tick that failed for every network counted as a tick; now it counts only errors", async () => {
    const telemetry = recordingTelemetry();
    const model = modelOf({ "hb-one": ["a"], "hb-two": ["a"] });
    const store = failingFor(failingFor(stateStore(), "hb-one") as StateStore, "hb-two");
    await monitorWith(model, telemetry, store).tick();

    expect(telemetry.counts.map(({ name }) => name)).toEqual(["monitor_errors", "monitor_errors"]);
  });
});

describe("health items of removed providers", () => {
  const ttlOf = async (network: string, provider: string): Promise<string | undefined> => {
    const item = await client.send(
      new GetItemCommand({
        TableName: TABLE,
        Key: { pk: { S: networkKey(network) }, sk: { S: providerKey(provider) } },
        ConsistentRead: true,
      }),
    );
    if (item.Item === undefined) throw new Error(`no item for ${provider}`);
    return item.Item.ttl?.N;
  };

  it("expire a week after the provider left the config; a provider added back keeps its item", async () => {
    const store = stateStore();
    for (const provider of ["kept", "removed"]) {
      await store.writeHealth("tidy", provider, 0, { ...HEALTHY, strikes: 2, version: 1 });
    }

    await monitorWith(modelOf({ tidy: ["kept"] }), recordingTelemetry(), store).tick();
    expect(await ttlOf("tidy", "kept")).toBeUndefined();
    expect(Number(await ttlOf("tidy", "removed"))).toBe(Math.ceil((NOW + 7 * 86_400_000) / 1000));
    expect((await store.readHealth("tidy", "removed")).strikes).toBe(2);

    // A fresh monitor container (the tidy runs at its first tick, then hourly).
    await monitorWith(modelOf({ tidy: ["kept", "removed"] }), recordingTelemetry(), store).tick();
    expect(await ttlOf("tidy", "removed")).toBeUndefined();
  });
});
