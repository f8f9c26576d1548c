import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join, resolve } from "node:path";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import { createDynamoClient } from "../../functions/adapters/store/state-store.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { startDynalite } from "../../local/dynamodb.ts";
import { LOCAL_TABLE_NAME } from "../../local/stack.ts";
import { startCountingRelay } from "../tools/counting-relay.ts";
import { median } from "../tools/machine.ts";
import { GATEWAY_NETWORK, type ServerProcess, startGatewayWithConfig } from "../tools/servers.ts";

/**
 * The answer cache under an indexer's load (`npm run bench -- --only replay`): an indexer walks
 * finalized blocks (each block with its transactions, its receipts, an eth_call at it, and
 * the logs of every ten blocks), then walks them again as a restarted indexer would, and a
 * third time after the gateway itself restarted (every container cold). The gateway runs as
 * users run it, `npm start -- --containers 4`, on a DynamoDB of the bench's own, once with the
 * cache off and once with it on. Counted from outside: calls reaching the node (a relay in
 * front of anvil) and DynamoDB calls (a relay in front of dynalite). Then the latency a
 * memory hit adds over a request that needs no upstream at all.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const TMP = join(ROOT, "bench", ".tmp");
const CHAIN_ID = 31337;
const CONTAINERS = 4;
/** Walkers of the indexer, each taking the next call as soon as it has an answer. */
const WALKERS = 4;
/** anvil's finalized block trails its latest by 64 blocks. */
const LATEST = 400;
const REPLAYED_TO = 330;
/** The identity precompile: an eth_call whose answer is its input, at any block. */
const IDENTITY = "0x0000000000000000000000000000000000000004";
/** Init code that emits LOG1(topic 7, data 42) while deploying: logs to index. */
const LOG_EMITTER = "0x602a600052600760206000a100";
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

const hex = (n: number) => `0x${n.toString(16)}`;

export interface PassFigures {
  readonly upstreamCalls: number;
  /** x-gateway-cache values and how many answers carried each. */
  readonly statuses: Readonly<Record<string, number>>;
  /** GetItem / BatchGetItem of the cache's partition. */
  readonly sharedReads: number;
  /** UpdateItem of the cache's partition. */
  readonly sharedWrites: number;
  readonly seconds: number;
}

export interface ReplayRecord {
  readonly latest: number;
  readonly finalized: number;
  readonly replayedTo: number;
  readonly callsPerPass: number;
  readonly containers: number;
  /** Per pass: what the gateway did with the cache off and on. */
  readonly passes: ReadonlyArray<{
    readonly pass: number;
    readonly gateway: string;
    readonly off: PassFigures;
    readonly on: PassFigures;
  }>;
  readonly answersCompared: number;
  readonly answersDiffering: number;
  readonly latency: {
    readonly samples: number;
    readonly hitP50Ms: number;
    readonly noUpstreamP50Ms: number;
    readonly addedP50Ms: number;
  };
  readonly problems: readonly string[];
}

interface Call {
  readonly method: string;
  readonly params: unknown[];
}

/** One pass of the indexer: every finalized block from 1 on, in order. */
function indexerCalls(to: number): Call[] {
  const calls: Call[] = [];
  for (let block = 1; block <= to; block++) {
    calls.push({ method: "eth_getBlockByNumber", params: [hex(block), true] });
    calls.push({ method: "eth_getBlockReceipts", params: [hex(block)] });
    calls.push({
      method: "eth_call",
      params: [{ to: IDENTITY, data: `0x${block.toString(16).padStart(8, "0")}` }, hex(block)],
    });
    if (block % 10 === 0) {
      calls.push({
        method: "eth_getLogs",
        params: [{ fromBlock: hex(block - 9), toBlock: hex(block) }],
      });
    }
  }
  return calls;
}

/** A chain with logs to index: a deployment that logs every few blocks, up to block 400. */
async function buildChain(node: AnvilNode): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await node.rpc("eth_sendTransaction", [{ from: DEPLOYER, data: LOG_EMITTER }]);
    await node.rpc("anvil_mine", ["0x4"]);
  }
  const now = Number.parseInt(await node.rpc<string>("eth_blockNumber", []), 16);
  await node.rpc("anvil_mine", [hex(LATEST - now)]);
}

class Counters {
  upstreamCalls = 0;
  sharedReads = 0;
  sharedWrites = 0;

  snapshot() {
    return {
      upstreamCalls: this.upstreamCalls,
      sharedReads: this.sharedReads,
      sharedWrites: this.sharedWrites,
    };
  }
}

export async function measureReplay(log: (line: string) => void): Promise<ReplayRecord> {
  const closers: Array<() => Promise<unknown>> = [];
  const problems: string[] = [];
  try {
    const node = await startAnvil({ chainId: CHAIN_ID });
    closers.push(() => node.stop());
    log("replay: building a chain of 400 blocks with logs");
    await buildChain(node);
    const counters = new Counters();
    const nodeRelay = await startCountingRelay(node.url, ({ body }) => {
      try {
        const parsed = JSON.parse(body) as unknown;
        counters.upstreamCalls += Array.isArray(parsed) ? parsed.length : 1;
      } catch {
        counters.upstreamCalls++;
      }
    });
    closers.push(() => nodeRelay.close());
    const dynamo = await startDynalite({ tableName: LOCAL_TABLE_NAME });
    closers.push(() => dynamo.close());
    const dynamoRelay = await startCountingRelay(dynamo.endpoint, ({ headers, body }) => {
      if (!body.includes('"CACHE#')) return;
      const operation = String(headers["x-amz-target"] ?? "").replace(/^.*\./, "");
      if (operation === "GetItem" || operation === "BatchGetItem") counters.sharedReads++;
      if (operation === "UpdateItem") counters.sharedWrites++;
    });
    closers.push(() => dynamoRelay.close());
    const finalized = await writeChainPosition(node, dynamo.endpoint);

    const calls = indexerCalls(REPLAYED_TO);
    const passes: Array<{ pass: number; gateway: string; off: PassFigures; on: PassFigures }> = [];
    const answers = new Map<string, string>();
    let compared = 0;
    let differing = 0;
    let latency: ReplayRecord["latency"] = {
      samples: 0,
      hitP50Ms: Number.NaN,
      noUpstreamP50Ms: Number.NaN,
      addedP50Ms: Number.NaN,
    };
    for (const mode of ["off", "on"] as const) {
      const configPath = writeConfig(mode, nodeRelay.url);
      const args = [
        "--containers",
        String(CONTAINERS),
        "--dynamodb",
        dynamoRelay.url,
        "--no-monitor",
      ];
      let gateway: ServerProcess | null = await startGatewayWithConfig(
        `gateway (cache ${mode})`,
        configPath,
        args,
      );
      try {
        for (const pass of [1, 2, 3]) {
          if (pass === 3) {
            // A redeployed gateway: every container starts cold.
            await gateway.stop();
            gateway = null;
            gateway = await startGatewayWithConfig(
              `gateway (cache ${mode}, restarted)`,
              configPath,
              args,
            );
          }
          const before = counters.snapshot();
          const started = performance.now();
          const results = await walk(gateway.url, calls);
          const seconds = (performance.now() - started) / 1000;
          const after = counters.snapshot();
          const figures: PassFigures = {
            upstreamCalls: after.upstreamCalls - before.upstreamCalls,
            statuses: countStatuses(results.map((r) => r.cache)),
            sharedReads: after.sharedReads - before.sharedReads,
            sharedWrites: after.sharedWrites - before.sharedWrites,
            seconds,
          };
          results.forEach((result, index) => {
            if (result.status !== 200)
              problems.push(`cache ${mode}, pass ${pass}, call ${index}: HTTP ${result.status}`);
            const key = `${pass}/${index}`;
            const other = answers.get(key);
            if (other === undefined) answers.set(key, result.text);
            else {
              compared++;
              if (other !== result.text) differing++;
            }
          });
          const entry = passes.find((p) => p.pass === pass);
          const gatewayName = pass === 3 ? "restarted (cold containers)" : "warm";
          if (entry === undefined)
            passes.push({ pass, gateway: gatewayName, off: figures, on: figures });
          else Object.assign(entry, { [mode]: figures });
          log(
            `replay: cache ${mode}, pass ${pass}: ${figures.upstreamCalls} upstream calls, ${JSON.stringify(figures.statuses)}, ${figures.sharedReads} shared reads, ${seconds.toFixed(1)} s`,
          );
        }
        if (mode === "on") {
          log("replay: memory hit vs a request answered by the gateway alone");
          latency = await hitLatency(gateway.url);
        }
      } finally {
        await gateway?.stop();
      }
    }
    return {
      latest: LATEST,
      finalized,
      replayedTo: REPLAYED_TO,
      callsPerPass: calls.length,
      containers: CONTAINERS,
      passes,
      answersCompared: compared,
      answersDiffering: differing,
      latency,
      problems: problems.slice(0, 20),
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/**
 * The chain position as the monitor writes it (the replay runs the gateway without its
 * monitor, so every call the node sees is the indexer's). Returns the finalized block.
 */
async function writeChainPosition(node: AnvilNode, endpoint: string): Promise<number> {
  const block = async (tag: string) => {
    const found = await node.rpc<{ number: string; hash: string }>("eth_getBlockByNumber", [
      tag,
      false,
    ]);
    return { number: Number.parseInt(found.number, 16), hash: found.hash };
  };
  const [latest, safe, finalized] = await Promise.all([
    block("latest"),
    block("safe"),
    block("finalized"),
  ]);
  const client = createDynamoClient({ endpoint });
  try {
    await new DynamoMonitorStore({ client, tableName: LOCAL_TABLE_NAME }).writeHead(
      GATEWAY_NETWORK,
      {
        latest,
        safe,
        finalized,
        served: null,
        previousServed: null,
        updatedAt: Date.now(),
        reorgSeenAt: 0,
      },
    );
  } finally {
    client.destroy();
  }
  if (finalized.number < REPLAYED_TO)
    throw new Error(`anvil's finalized block is ${finalized.number}, below ${REPLAYED_TO}`);
  return finalized.number;
}

function writeConfig(mode: "on" | "off", upstreamUrl: string): string {
  const config: ConfigInput = {
    // No monitor runs; the chain position written at the start counts for three intervals.
    check_interval_seconds: 3600,
    cache: mode === "on",
    networks: {
      [GATEWAY_NETWORK]: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: upstreamUrl }] },
    },
  };
  mkdirSync(TMP, { recursive: true });
  const path = join(TMP, `replay-cache-${mode}.json`);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

interface Result {
  readonly status: number;
  readonly text: string;
  readonly cache: string;
}

/** The indexer: WALKERS walkers share the calls in order, one call per request. */
async function walk(url: string, calls: readonly Call[]): Promise<Result[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: WALKERS });
  const results: Result[] = new Array(calls.length);
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: WALKERS }, async () => {
        for (let index = next++; index < calls.length; index = next++) {
          const call = calls[index] as Call;
          const body = JSON.stringify({
            jsonrpc: "2.0",
            id: index,
            method: call.method,
            params: call.params,
          });
          results[index] = await post(agent, `${url}/${GATEWAY_NETWORK}`, body);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return results;
}

function post(agent: http.Agent, url: string, body: string): Promise<Result> {
  return new Promise((done, fail) => {
    const request = http.request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          done({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString("utf8"),
            cache: String(response.headers["x-gateway-cache"] ?? "none"),
          }),
        );
      },
    );
    request.on("error", fail);
    request.end(body);
  });
}

function countStatuses(statuses: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/**
 * p50 of eth_chainId served from memory against p50 of a denied method the gateway answers
 * itself (no upstream, no cache), one request at a time, alternated in rounds.
 */
async function hitLatency(url: string): Promise<ReplayRecord["latency"]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = `${url}/${GATEWAY_NETWORK}`;
  const hit = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
  const local = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "admin_peers", params: [] });
  const timed = async (body: string, count: number, into: number[]) => {
    for (let i = 0; i < count; i++) {
      const started = process.hrtime.bigint();
      await post(agent, target, body);
      into.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  try {
    await timed(hit, 200, []);
    await timed(local, 200, []);
    const hits: number[] = [];
    const locals: number[] = [];
    for (let round = 0; round < 10; round++) {
      await timed(hit, 200, hits);
      await timed(local, 200, locals);
    }
    const hitP50Ms = median(hits);
    const noUpstreamP50Ms = median(locals);
    return {
      samples: hits.length,
      hitP50Ms,
      noUpstreamP50Ms,
      addedP50Ms: hitP50Ms - noUpstreamP50Ms,
    };
  } finally {
    agent.destroy();
  }
}
