import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createConfigSource } from "../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../functions/adapters/config/secrets.ts";
import {
  createDynamoClient,
  DynamoStateStore,
} from "../../functions/adapters/store/state-store.ts";
import { createUpstream } from "../../functions/adapters/upstream/upstream.ts";
import { createProxyRuntime, type ProxyRuntime } from "../../functions/proxy/runtime.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalDynamoDb, startDynalite } from "../../local/dynamodb.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { rpcEvent } from "../support/api-gateway-event.ts";
import { type DynamoFront, type DynamoMode, startDynamoFront } from "../support/dynamo-front.ts";

/**
 * Infrastructure faults (docs/behaviour.md §3, §6): DynamoDB unreachable or
 * throttling must not stop the proxy. It keeps serving from its cached state, fails open when
 * it has none, still avoids a provider it saw fail, and says so in its logs.
 */

let dynalite: LocalDynamoDb;
let front: DynamoFront;
let primaryNode: AnvilNode;
let secondary: AnvilNode;
let primary: FaultShim;
let dir: string;
let configPath: string;
let now = Date.UTC(2026, 10, 29, 12);
const logs: string[] = [];
const originalWrites: Array<[NodeJS.WriteStream, NodeJS.WriteStream["write"]]> = [];

function newRuntime(): { runtime: ProxyRuntime; metrics: string[]; close(): Promise<void> } {
  const upstream = createUpstream();
  const metrics: string[] = [];
  const runtime = createProxyRuntime({
    configSource: createConfigSource({ kind: "file", path: configPath }),
    secrets: envSecretResolver({}),
    store: new DynamoStateStore({
      client: createDynamoClient({ endpoint: front.endpoint }),
      tableName: dynalite.tableName,
    }),
    upstream,
    clock: () => now,
    writeMetrics: (line) => metrics.push(line),
  });
  return { runtime, metrics, close: () => upstream.close() };
}

beforeAll(async () => {
  dynalite = await startDynalite({ tableName: "infra-faults" });
  front = await startDynamoFront(dynalite.endpoint);
  [primaryNode, secondary] = await Promise.all([
    startAnvil({ chainId: 31337 }),
    startAnvil({ chainId: 31337 }),
  ]);
  // Heads 5 and 9: an answer says which node gave it.
  await Promise.all([primaryNode.rpc("anvil_mine", ["0x5"]), secondary.rpc("anvil_mine", ["0x9"])]);
  primary = await startFaultShim(primaryNode.url);
  dir = await mkdtemp(join(tmpdir(), "infra-faults-"));
  configPath = join(dir, "config.json");
  await writeFile(
    configPath,
    JSON.stringify({
      networks: {
        devnet: {
          chain_id: 31337,
          providers: [
            { name: "primary", url: primary.url, priority: 2 },
            { name: "secondary", url: secondary.url, priority: 1 },
          ],
        },
      },
    }),
  );
  // Capture the gateway's log lines (info on stdout, warn and error on stderr).
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    originalWrites.push([stream, write]);
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      logs.push(String(chunk));
      return write(chunk as string, ...(rest as []));
    }) as typeof stream.write;
  }
}, 60_000);

afterEach(async () => {
  front.setMode("pass");
  await primary.setFault(null);
});

afterAll(async () => {
  for (const [stream, write] of originalWrites) stream.write = write;
  await primary?.close();
  await Promise.all([primaryNode?.stop(), secondary?.stop()]);
  await front?.close();
  await dynalite?.close();
  await rm(dir, { recursive: true, force: true });
});

const blockNumber = (id: number) =>
  `{"jsonrpc":"2.0","id":${id},"method":"eth_blockNumber","params":[]}`;
const call = (runtime: ProxyRuntime, id: number) => runtime.handle(rpcEvent(blockNumber(id)));

/** The node's own answer to the same call. */
async function direct(node: AnvilNode, id: number): Promise<string> {
  const response = await fetch(node.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: blockNumber(id),
  });
  return response.text();
}

/** The `state_store_errors` counts in EMF lines, by network. */
function stateStoreErrors(metrics: readonly string[]): Array<{ network: unknown; count: unknown }> {
  return metrics
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((metric) => "state_store_errors" in metric)
    .map((metric) => ({ network: metric.network, count: metric.state_store_errors }));
}

describe.each<[string, DynamoMode]>([
  ["unreachable", "down"],
  ["throttling", "throttle"],
])("DynamoDB %s", (_name, mode) => {
  it("the proxy keeps serving from its cached state and still avoids a failing provider", async () => {
    const { runtime, metrics, close } = newRuntime();
    const first = await call(runtime, 1);
    expect(first.statusCode).toBe(200);
    expect(first.body).toBe(await direct(primaryNode, 1));
    front.setMode(mode);
    logs.length = 0;
    now += 5000; // past the cache TTL: every read now goes to the broken store
    await primary.setFault({ kind: "refuse" });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call(runtime, i)));
    for (const [i, answer] of answers.entries()) {
      expect(answer.statusCode).toBe(200);
      expect(answer.headers?.["x-gateway-provider"]).toBe("secondary");
      expect(answer.body).toBe(await direct(secondary, i));
    }
    // The write of the blacklist failed, but this container keeps it and sends nothing more there.
    const before = primary.requests;
    for (let i = 0; i < 5; i++) {
      const answer = await call(runtime, 100 + i);
      expect(answer.headers?.["x-gateway-provider"]).toBe("secondary");
      expect(answer.headers?.["x-gateway-attempts"]).toBe("1");
      expect(answer.body).toBe(await direct(secondary, 100 + i));
    }
    expect(primary.requests).toBe(before);
    // The background refresh of the state fails after the SDK's own retry: wait for its log line.
    await vi.waitFor(
      () => {
        expect(logs.join("")).toContain("state store unreachable: serving cached state");
        // The blacklist write runs beside the answer and fails after the SDK's retry too.
        expect(logs.join("")).toContain("state store write failed: kept locally");
      },
      {
        timeout: 10_000,
        interval: 50,
      },
    );
    // Both failures are counted, per network.
    runtime.telemetry.flush();
    const errors = stateStoreErrors(metrics);
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) expect(error.network).toBe("devnet");
    expect(errors.reduce((sum, error) => sum + Number(error.count), 0)).toBeGreaterThanOrEqual(2);
    await close();
  });

  it("a cold container with no state fails open: every provider counts as healthy", async () => {
    front.setMode(mode);
    const { runtime, close } = newRuntime();
    const answer = await call(runtime, 1);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers?.["x-gateway-provider"]).toBe("primary");
    expect(answer.body).toBe(await direct(primaryNode, 1));
    await close();
  });
});
