import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConfigSource } from "../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../functions/adapters/config/secrets.ts";
import { DynamoAnswerStore } from "../functions/adapters/store/answer-store.ts";
import { DynamoEventStore } from "../functions/adapters/store/event-store.ts";
import { DynamoFilterStore } from "../functions/adapters/store/filter-store.ts";
import { DynamoMonitorStore } from "../functions/adapters/store/monitor-store.ts";
import { createDynamoClient, DynamoStateStore } from "../functions/adapters/store/state-store.ts";
import { DynamoStatsStore } from "../functions/adapters/store/stats-store.ts";
import { DynamoTransactionLedger } from "../functions/adapters/store/transaction-ledger.ts";
import { DynamoUsageStore } from "../functions/adapters/store/usage-store.ts";
import { ApiGatewayConnectionPush } from "../functions/adapters/subscriptions/connection-push.ts";
import { DynamoFollowerStore } from "../functions/adapters/subscriptions/follower-store.ts";
import { DynamoSubscriptionStore } from "../functions/adapters/subscriptions/subscription-store.ts";
import { createUpstream } from "../functions/adapters/upstream/upstream.ts";
import type { ConfigInput } from "../functions/core/config/config-schema.ts";
import { startFollowerSchedule } from "../functions/core/follower/schedule.ts";
import { startMonitorTimer } from "../functions/core/monitor/loop.ts";
import type { Upstream } from "../functions/core/ports.ts";
import { createFollowerRuntime, type FollowerRuntime } from "../functions/follower/runtime.ts";
import { createMonitorRuntime, type MonitorRuntime } from "../functions/monitor/runtime.ts";
import { createProxyHandler, type ProxyHandler } from "../functions/proxy/lambda.ts";
import { createProxyRuntime, type ProxyRuntime } from "../functions/proxy/runtime.ts";
import { createSocketHandler, type SocketHandler } from "../functions/socket/lambda.ts";
import { createSocketRuntime, type SocketRuntime } from "../functions/socket/runtime.ts";
import { type ApiGatewayEmulator, startApiGateway } from "./apigw-emulator.ts";
import { type Devnet, type DevnetChain, startDevnet } from "./devnet.ts";
import {
  createGatewayTable,
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
} from "./dynamodb.ts";

/**
 * The whole gateway on one machine, on real parts: the proxy handler behind an API Gateway
 * emulator, dynalite as DynamoDB, and (for `npm start`) a devnet: one anvil chain per network
 * behind a front on each of its providers' ports (local/devnet.ts).
 * Used by `npm start`, the end-to-end tests and the benchmark.
 */
export interface LocalStackOptions {
  /** A config file, or a config object (written to a temp file so edits can be tested too). */
  readonly config: string | ConfigInput;
  readonly port?: number;
  /** The devnet to start first: the chains the config's providers point at (`devnetFor`). */
  readonly devnet?: readonly DevnetChain[];
  readonly clock?: () => number;
  readonly random?: () => number;
  readonly writeMetrics?: (line: string) => void;
  /** Environment for `${NAME}` placeholders (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Run the monitor on a timer every check interval, as the schedule does in AWS (default off). */
  readonly monitor?: boolean;
  /**
   * Proxy runtimes behind the one port, as many warm Lambda containers: each has its own
   * state cache, upstream connections and module state, and takes one request at a time
   * (default 1: one runtime serving every request).
   */
  readonly containers?: number;
  /**
   * An existing DynamoDB endpoint to keep state in (its table is created if missing), so
   * several local stacks share state; default: an embedded dynalite.
   */
  readonly dynamodb?: string;
  /**
   * The WebSocket API's idle and whole-life limits (API Gateway's 10 minutes and 2 hours),
   * shortened for tests.
   */
  readonly webSocket?: { readonly idleTimeoutMs?: number; readonly maxConnectionMs?: number };
  /**
   * The head follower on its schedule (a run every `everyMs`, each `runMs` long, as
   * EventBridge starts its function in AWS), delivering subscriptions' notifications; on by
   * default with the monitor, whose chain position it follows. `false` turns it off.
   */
  readonly follower?: false | { readonly everyMs?: number; readonly runMs?: number };
}

export interface LocalStack {
  readonly url: string;
  readonly configPath: string;
  /** The devnet started with the stack; null without one. */
  readonly devnet: Devnet | null;
  readonly dynamo: LocalDynamoDb;
  readonly store: DynamoStateStore;
  /** The answer cache's shared tier every container of this stack uses. */
  readonly answers: DynamoAnswerStore;
  readonly runtime: ProxyRuntime;
  /** The proxy as Lambda runs it (middy and its middlewares), behind the emulator. */
  readonly handler: ProxyHandler;
  readonly monitor: MonitorRuntime | null;
  /** `ws://127.0.0.1:<port>`: each network's WebSocket URL is this and `/<network>`. */
  readonly wsUrl: string;
  /** The connections and subscriptions every socket container registers (the follower's read). */
  readonly subscriptions: DynamoSubscriptionStore;
  /** Pushes to the emulator's sockets through its management API, as the follower does in AWS. */
  readonly push: ApiGatewayConnectionPush;
  /** The head follower (a container of its own), when it runs. */
  readonly follower: FollowerRuntime | null;
  /** The socket containers' runtimes, as made (tests flush their telemetry). */
  readonly sockets: readonly SocketRuntime[];
  close(): Promise<void>;
}

export const LOCAL_TABLE_NAME = "rpc-gateway-local";

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const cleanups: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    let configPath: string;
    if (typeof options.config === "string") {
      configPath = options.config;
    } else {
      const dir = await mkdtemp(join(tmpdir(), "rpc-gateway-config-"));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      configPath = join(dir, "config.json");
      writeFileSync(configPath, JSON.stringify(options.config, null, 2));
    }
    const devnet =
      options.devnet === undefined || options.devnet.length === 0
        ? null
        : await startDevnet(options.devnet);
    if (devnet !== null) cleanups.push(() => devnet.stop());

    const dynamo = options.dynamodb
      ? await connectDynamoDb(options.dynamodb, LOCAL_TABLE_NAME)
      : await startDynalite({ tableName: LOCAL_TABLE_NAME });
    cleanups.push(() => dynamo.close());
    const store = new DynamoStateStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const upstream = createUpstream();
    cleanups.push(() => upstream.close());
    const tables = { client: store.client, tableName: store.tableName };
    const statsStore = new DynamoStatsStore(tables);
    const eventStore = new DynamoEventStore(tables);
    const answers = new DynamoAnswerStore({
      ...tables,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    // One filter store for every container, as in AWS: a filter outlives the container polled.
    const filters = new DynamoFilterStore(tables);
    const secrets = envSecretResolver(options.env ?? process.env);
    const clockOption = options.clock ? { clock: options.clock } : {};
    const metricsOption = options.writeMetrics ? { writeMetrics: options.writeMetrics } : {};

    /** One proxy runtime as a Lambda container holds it: its own cache, agents and state. */
    const proxyRuntime = (containerUpstream: Upstream) =>
      createProxyRuntime({
        configSource: createConfigSource({ kind: "file", path: configPath, ...clockOption }),
        secrets,
        store,
        statsStore,
        usageStore: new DynamoUsageStore(tables),
        ledger: new DynamoTransactionLedger(tables),
        eventStore,
        sharedAnswers: answers,
        filterStore: filters,
        upstream: containerUpstream,
        ...clockOption,
        ...(options.random ? { random: options.random } : {}),
        ...metricsOption,
      });
    const runtime = proxyRuntime(upstream);
    // Fail at start-up, not on the first request, when the config cannot load.
    await runtime.current();
    const handler = createProxyHandler(runtime);
    const containers = Math.max(1, options.containers ?? 1);
    let created = 0;
    /** The first container is `runtime`; every other one gets upstream connections of its own. */
    const createContainer = (): ProxyHandler => {
      created++;
      if (created === 1) return handler;
      const own = createUpstream();
      cleanups.push(() => own.close());
      return createProxyHandler(proxyRuntime(own));
    };

    // The socket function: containers of its own (a function apart in AWS), each with its
    // own gateway runtime, over the one subscription store.
    const subscriptions = new DynamoSubscriptionStore({
      ...tables,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const sockets: SocketRuntime[] = [];
    const createSocketContainer = (): SocketHandler => {
      const own = createUpstream();
      cleanups.push(() => own.close());
      const socket = createSocketRuntime({
        proxy: proxyRuntime(own),
        store: subscriptions,
        ...clockOption,
      });
      sockets.push(socket);
      return createSocketHandler(socket);
    };

    let monitor: MonitorRuntime | null = null;
    if (options.monitor) {
      monitor = createMonitorRuntime({
        configSource: createConfigSource({ kind: "file", path: configPath, ...clockOption }),
        secrets,
        store,
        monitorStore: new DynamoMonitorStore(tables),
        statsStore,
        eventStore,
        upstream,
        ...clockOption,
        ...metricsOption,
      });
      const { checkIntervalSeconds } = await monitor.model();
      // Pushed after the upstream and the table, so it stops (and finishes its tick) first.
      cleanups.push(startMonitorTimer(monitor.monitor, checkIntervalSeconds * 1000));
    }
    const api: ApiGatewayEmulator = await startApiGateway({
      port: options.port ?? 0,
      corsOrigins: (await runtime.current()).model.corsOrigins,
      ...(containers === 1
        ? { handler }
        : { containers: { count: containers, create: createContainer } }),
      webSocket: {
        containers: { count: containers, create: createSocketContainer },
        stages: [...(await runtime.current()).model.networks.keys()],
        ...options.webSocket,
      },
    });
    cleanups.push(() => api.close());
    const push = new ApiGatewayConnectionPush({
      baseUrl: api.url,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    cleanups.push(async () => push.destroy());
    let follower: FollowerRuntime | null = null;
    if (options.monitor && options.follower !== false) {
      const own = createUpstream();
      cleanups.push(() => own.close());
      follower = createFollowerRuntime({
        proxy: proxyRuntime(own),
        subscriptions,
        push,
        store: new DynamoFollowerStore({ ...tables, ...clockOption }),
        ...clockOption,
      });
      // Stopped before the management API and the table close (cleanups run in reverse).
      cleanups.push(startFollowerSchedule(follower, options.follower ?? {}));
    }
    return {
      url: api.url,
      configPath,
      devnet,
      dynamo,
      store,
      answers,
      runtime,
      handler,
      monitor,
      wsUrl: api.url.replace(/^http:/, "ws:"),
      subscriptions,
      push,
      follower,
      sockets,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** An existing DynamoDB endpoint, with the gateway's table created if it is missing. */
async function connectDynamoDb(endpoint: string, tableName: string): Promise<LocalDynamoDb> {
  const client = createLocalDynamoDbClient(endpoint);
  try {
    await createGatewayTable(client, tableName);
  } finally {
    client.destroy();
  }
  return { endpoint, tableName, close: async () => undefined };
}
