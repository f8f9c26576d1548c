import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import WebSocket from "ws";
import { DynamoFollowerStore } from "../../functions/adapters/subscriptions/follower-store.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { messageEvent } from "../../local/websocket/websocket-events.ts";
import { startEventChain } from "../../test/support/event-chain.ts";
import { buildBundle } from "../tools/bundles.ts";
import { startCountingRelay } from "../tools/counting-relay.ts";
import { startPushSink } from "../tools/push-sink.ts";
import { billedMs, type Invocation } from "./cost.ts";

/**
 * What subscriptions cost (`npm run bench -- --only subscriptions`; docs/operate.md, what
 * subscriptions cost): an anvil chain with one or two `Tick` logs in every 1 s block, `npm
 * start`'s stack (in this process) with its monitor, and for each size (1, 100, 1,000
 * subscriptions: one `newHeads`, or half `newHeads` and half `logs` on the contract, two to a
 * connection) two runs of the head follower's shipped bundle in a process of its own,
 * invoked as EventBridge invokes it: one to make every subscription live (a write each, once),
 * then the measured one. Everything it spends is counted from outside it: its DynamoDB calls
 * and their capacity units (a relay in front of dynalite that asks every call for its
 * `ConsumedCapacity`), its provider calls (a relay in front of anvil), its CPU and wall time,
 * and its pushes (the `@connections` API played by a sink that counts them, so the local
 * emulator's delivery to hundreds of sockets in this process costs the follower nothing). Then viem's keep-alive (`net_version` every
 * 30 s) through the socket's runtime, its billed duration. Prices: subscriptions-cost.ts.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const CHILD = join(ROOT, "bench", "tools", "follower-child.ts");
const CHAIN_ID = 31337;
export const BENCH_BLOCK_SECONDS = 1;
const SOCKET_MEMORY_MB = 512;
/** The run before the measured one, which makes every subscription live. */
const WARMUP_SECONDS = 12;
const run = promisify(execFile);

export interface SubscriptionsOptions {
  readonly seconds: number;
  readonly sizes: readonly number[];
}

export interface SizeRecord {
  readonly subscriptions: number;
  readonly connections: number;
  /** The follower's run: how long it lasted, its CPU, and its time waiting for a core (ms). */
  readonly run: { readonly wallMs: number; readonly cpuMs: number; readonly waitMs: number };
  /** Blocks mined while it ran, and how many of them the first `newHeads` socket was sent. */
  readonly blocks: number;
  readonly delivered: number;
  readonly notifications: number;
  /** API Gateway's billed messages for them (one per 32 KB). */
  readonly billedMessages: number;
  readonly meanNotificationBytes: number;
  /** The follower's DynamoDB calls by operation and item kind, and their capacity units. */
  readonly dynamoCalls: Readonly<Record<string, number>>;
  readonly readUnits: number;
  readonly writeUnits: number;
  /** The follower's provider calls by method (a batch's members each). */
  readonly providerCalls: Readonly<Record<string, number>>;
  readonly problems: readonly string[];
}

export interface SubscriptionsMeasurement {
  readonly seconds: number;
  readonly records: readonly SizeRecord[];
  /** The socket function's billed duration for one keep-alive `net_version` (ms, 512 MB). */
  readonly keepAliveBilledMs: number;
}

interface Counters {
  dynamo: Record<string, number>;
  read: number;
  write: number;
  provider: Record<string, number>;
}

const ITEM_KINDS = /"(WSFOLLOW|WSSUB|WSCONN|NET|STATS|EVENTS|CACHE|USAGE|FILTER)#/;

export async function measureSubscriptions(
  options: SubscriptionsOptions,
  log: (line: string) => void,
): Promise<SubscriptionsMeasurement> {
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const scratch = mkdtempSync(join(tmpdir(), "bench-follower-"));
    closers.push(async () => rmSync(scratch, { recursive: true, force: true }));
    const chain = await startEventChain({
      chainId: CHAIN_ID,
      blockTimeMs: BENCH_BLOCK_SECONDS * 1000,
    });
    closers.push(() => chain.close());
    const counters: Counters = { dynamo: {}, read: 0, write: 0, provider: {} };
    const upstream = await startCountingRelay(chain.node.url, (exchange) => {
      const parsed = JSON.parse(exchange.body) as { method?: string } | Array<{ method?: string }>;
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
        const method = call.method ?? "?";
        counters.provider[method] = (counters.provider[method] ?? 0) + 1;
      }
    });
    closers.push(() => upstream.close());
    // One provider, the node behind the relay: only the follower's process is pointed at it.
    const configFor = (url: string) => ({
      networks: {
        devnet: {
          chain_id: CHAIN_ID,
          block_time_seconds: BENCH_BLOCK_SECONDS,
          providers: [{ name: "node", url }],
          subscriptions: { max_connections_per_key: 1000, max_per_key: 10_000 },
        },
      },
    });
    const stack = await startLocalStack({
      monitor: true,
      follower: false,
      config: configFor(chain.node.url),
    });
    closers.push(() => stack.close());
    const dynamo = await startCountingRelay(
      stack.dynamo.endpoint,
      (exchange) => countDynamo(counters, exchange),
      { rewrite: withConsumedCapacity },
    );
    closers.push(() => dynamo.close());
    // The pushes go to a sink that counts them, in a process of its own: the follower's work
    // is measured, not the local emulator's delivery to 500 sockets in this busy process.
    const sink = await startPushSink();
    closers.push(() => sink.close());
    log("subscriptions: building the follower's bundle");
    const configText = JSON.stringify(configFor(upstream.url));
    const bundle = await buildBundle({
      name: "follower",
      entry: "functions/follower/handler.ts",
      configText,
    });
    const env = {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      TABLE_NAME: stack.dynamo.tableName,
      DYNAMODB_ENDPOINT: dynamo.url,
      BUNDLED_CONFIG_PATH: join(resolve(bundle.file, ".."), "config.json"),
      CONFIG_FILE: join(resolve(bundle.file, ".."), "config.json"),
      WEBSOCKET_MANAGEMENT_URL: sink.url,
      POWERTOOLS_SERVICE_NAME: "rpc-gateway-follower",
      POWERTOOLS_METRICS_NAMESPACE: "RpcGateway",
      POWERTOOLS_LOG_LEVEL: "WARN",
      NODE_NO_WARNINGS: "1",
    };
    const cursors = new DynamoFollowerStore({
      client: stack.store.client,
      tableName: stack.store.tableName,
    });
    let runs = 0;
    /** One run of the follower's Lambda, in a process of its own, for `seconds`. */
    const follow = async (seconds: number, problems: string[]) => {
      const out = join(scratch, `run-${++runs}.json`);
      const job = { module: bundle.file, seconds, requestId: `bench-${runs}`, out };
      await run(process.execPath, [CHILD, JSON.stringify(job)], {
        cwd: ROOT,
        env,
        maxBuffer: 64 * 1024 * 1024,
        timeout: (seconds + 120) * 1000,
      }).catch((error: unknown) => problems.push(`the follower's run failed: ${String(error)}`));
      const measured = JSON.parse(readFileSync(out, "utf8")) as SizeRecord["run"] & {
        error?: string;
      };
      if (measured.error !== undefined) problems.push(measured.error);
      return measured;
    };
    const records: SizeRecord[] = [];
    for (const size of options.sizes) {
      const sockets = await subscribe(stack, size, chain.contract);
      const problems: string[] = [];
      // Runs until the follower caught up with the chain make every subscription live (one
      // write each, once) and send the blocks mined while they were made: not a block's cost.
      log(`subscriptions: ${size} on ${sockets.list.length} sockets, warming up`);
      for (let warmups = 0; warmups < 6; warmups++) {
        await sink.reset();
        const before = chain.head;
        await follow(WARMUP_SECONDS, problems);
        // Steady: the first subscription was sent what was mined meanwhile, no backlog.
        const sent = (await sink.counts()).bySubscription[sockets.firstHeads] ?? 0;
        const cursor = await cursors.readCursor("devnet").catch(() => null);
        const caughtUp = cursor !== null && cursor.next >= chain.head - 1;
        if (caughtUp && cursor.catchingUp.length === 0 && sent <= chain.head - before + 2) break;
      }
      log(`subscriptions: ${size}, following for ${options.seconds} s`);
      Object.assign(counters, { dynamo: {}, read: 0, write: 0, provider: {} });
      await sink.reset();
      const firstBlock = chain.head;
      const measured = await follow(options.seconds, problems);
      const blocks = chain.head - firstBlock;
      const pushed = await sink.counts();
      const delivered = pushed.bySubscription[sockets.firstHeads] ?? 0;
      if (delivered < blocks - 3)
        problems.push(`the follower fell behind: ${delivered} of ${blocks} blocks sent`);
      const { messages, bytes, billed } = pushed;
      records.push({
        subscriptions: size,
        connections: sockets.list.length,
        run: { wallMs: measured.wallMs, cpuMs: measured.cpuMs, waitMs: measured.waitMs },
        blocks,
        delivered,
        notifications: messages,
        billedMessages: billed,
        meanNotificationBytes: messages === 0 ? 0 : bytes / messages,
        dynamoCalls: { ...counters.dynamo },
        readUnits: counters.read,
        writeUnits: counters.write,
        providerCalls: { ...counters.provider },
        problems,
      });
      await sockets.close();
    }
    return { seconds: options.seconds, records, keepAliveBilledMs: await keepAliveCost(stack) };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/** Every DynamoDB call asks for the capacity it consumed (DynamoDB's own rules, as dynalite applies them). */
function withConsumedCapacity(body: string): string {
  const call = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify({ ...call, ReturnConsumedCapacity: "TOTAL" });
}

function countDynamo(
  counters: Counters,
  exchange: { headers: Record<string, unknown>; body: string; response: string },
): void {
  const operation = String(exchange.headers["x-amz-target"] ?? "").replace(/^.*\./, "");
  const name = `${operation} ${ITEM_KINDS.exec(exchange.body)?.[1] ?? ""}`.trim();
  counters.dynamo[name] = (counters.dynamo[name] ?? 0) + 1;
  const answer = JSON.parse(exchange.response || "{}") as {
    ConsumedCapacity?: { CapacityUnits?: number } | Array<{ CapacityUnits?: number }>;
  };
  const consumed = answer.ConsumedCapacity;
  const units = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
    (sum, one) => sum + (one.CapacityUnits ?? 0),
    0,
  );
  const reads = new Set(["GetItem", "Query", "Scan", "BatchGetItem"]);
  if (reads.has(operation)) counters.read += units;
  else counters.write += units;
}

interface Subscribers {
  readonly list: WebSocket[];
  /** The id of the first connection's `newHeads` subscription. */
  firstHeads: string;
  close(): Promise<void>;
}

/**
 * `count` subscriptions: one `newHeads` alone, or half `newHeads` and half `logs` (the
 * contract's), a pair to a connection.
 */
async function subscribe(stack: LocalStack, count: number, contract: string): Promise<Subscribers> {
  const subscribers: Subscribers = {
    list: [],
    firstHeads: "",
    async close() {
      // Each $disconnect forgets the connection's subscriptions: the next size starts alone.
      // A few dozen at a time: hundreds at once time out on the embedded DynamoDB.
      const left = async () =>
        (await stack.subscriptions.list("devnet").catch(() => [null])).length;
      for (let start = 0; start < this.list.length; start += 25) {
        for (const socket of this.list.slice(start, start + 25)) socket.close();
        await sleep(250);
      }
      for (let i = 0; i < 200 && (await left()) > 0; i++) await sleep(100);
    },
  };
  const connections = Math.ceil(count / 2);
  for (let index = 0; index < connections; index++) {
    const socket = new WebSocket(`${stack.wsUrl}/devnet`);
    await new Promise((done, fail) => {
      socket.once("open", done);
      socket.once("error", fail);
    });
    const kinds = count === 1 ? 1 : Math.min(2, count - index * 2);
    const subscribed = new Promise<void>((done) => {
      let answered = 0;
      socket.on("message", (data: Buffer) => {
        const reply = JSON.parse(data.toString("utf8")) as { id?: unknown; result?: unknown };
        if (reply.id === undefined) return;
        if (index === 0 && reply.id === 1) subscribers.firstHeads = String(reply.result);
        if (++answered === kinds) done();
      });
    });
    socket.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
    if (kinds === 2) {
      const params = ["logs", { address: contract }];
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "eth_subscribe", params }));
    }
    await subscribed;
    subscribers.list.push(socket);
  }
  return subscribers;
}

/** The socket function's billed duration for viem's keep-alive, median of 200 after 50 warm. */
async function keepAliveCost(stack: LocalStack): Promise<number> {
  const socket = stack.sockets[0];
  if (socket === undefined) return Number.NaN;
  // A connection of the registry's (the $default route reads its record), found by its subscription.
  const client = new WebSocket(`${stack.wsUrl}/devnet`);
  await new Promise((done) => client.once("open", done));
  const subscribed = new Promise((done) => client.once("message", done));
  client.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
  await subscribed;
  const [subscription] = await stack.subscriptions.list("devnet");
  const connection = {
    connectionId: subscription?.connection ?? "bench",
    stage: "devnet",
    connectedAt: Date.now(),
    domainName: "127.0.0.1",
    sourceIp: "127.0.0.1",
    userAgent: "bench",
  };
  const body = '{"jsonrpc":"2.0","id":null,"method":"net_version","params":[]}';
  const billed: number[] = [];
  for (let index = 0; index < 250; index++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await socket.handle(messageEvent(connection, body));
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const invocation: Invocation = { wallMs, cpuMs: (used.user + used.system) / 1000, waitMs: 0 };
    if (index >= 50) billed.push(billedMs(invocation, SOCKET_MEMORY_MB));
  }
  client.close();
  billed.sort((a, b) => a - b);
  return billed[Math.floor(billed.length / 2)] ?? Number.NaN;
}
