import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigSource } from "../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../functions/adapters/config/secrets.ts";
import {
  createDynamoClient,
  DynamoStateStore,
} from "../../functions/adapters/store/state-store.ts";
import { createUpstream } from "../../functions/adapters/upstream/upstream.ts";
import { createProxyRuntime } from "../../functions/proxy/runtime.ts";
import type { AnvilNode } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { rpcEvent } from "../support/api-gateway-event.ts";
import { startForkedPair } from "../support/forked-anvils.ts";
import { startNodeFront } from "../support/lying-front.ts";
import { statusReader } from "../support/status-after-tick.ts";

/**
 * Attacks on the fork check as a misbehaving provider would make them, on real parts: anvil
 * nodes with the same chain id and their own histories, the local stack with its monitor
 * ticked by the test, and an HTTP front that forwards to a node and may rewrite its answers.
 */

process.env.POWERTOOLS_LOG_LEVEL = "CRITICAL";

const CHAIN_ID = 31337;
/** anvil's `finalized` is 64 blocks behind its head: 100 blocks give a finalized block 36. */
const BLOCKS = 100;
const hex = (n: number) => `0x${n.toString(16)}`;

interface Status {
  monitor: { last_tick_at: string | null };
  quorum: { head: number | null; members: string[] };
  served_head: { finalized: number | null };
  providers: Array<{ name: string; quorum_reason: string | null; quorum_detail: string | null }>;
}

let honest: AnvilNode;
let forked: AnvilNode;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  ({ honest, forked } = await startForkedPair(CHAIN_ID, BLOCKS));
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await Promise.all([honest, forked].map((node) => node?.stop()));
});

type Providers = Array<{ name: string; url: string; priority?: number }>;

async function gateway(
  providers: Providers,
  options: { forkCheck?: boolean; dynamodb?: string } = {},
): Promise<LocalStack & { tick(): Promise<Status> }> {
  const stack = await startLocalStack({
    monitor: true,
    writeMetrics: () => undefined,
    ...(options.dynamodb === undefined ? {} : { dynamodb: options.dynamodb }),
    config: {
      // The timer ticks once at start; the test ticks after that.
      check_interval_seconds: 3600,
      state_cache_ms: 0,
      networks: {
        devnet: {
          chain_id: CHAIN_ID,
          providers,
          quorum: { fork_check: options.forkCheck ?? true },
        },
      },
    },
  });
  cleanups.push(() => stack.close());
  const { status, statusAfter } = statusReader<Status>(stack.url, "devnet");
  await statusAfter(null);
  return {
    ...stack,
    async tick() {
      const before = (await status()).monitor.last_tick_at;
      await stack.monitor?.monitor.tick();
      return statusAfter(before);
    },
  };
}

const reasonOf = (status: Status, name: string) =>
  status.providers.find((one) => one.name === name)?.quorum_reason;

describe("fork_check turned off", () => {
  it("regression: a provider out as wrong_fork stayed out for good once fork_check was set false; now it rejoins at the next check", async () => {
    const front = await startNodeFront(forked);
    cleanups.push(() => front.close());
    const providers: Providers = [
      { name: "a", url: honest.url },
      { name: "b", url: `${honest.url}/` },
      { name: "f", url: front.url },
    ];
    const checked = await gateway(providers);
    expect(reasonOf(await checked.tick(), "f")).toBe("wrong_fork");

    // The same state, now served by a config with the check off (an operator's deliberate choice).
    const unchecked = await gateway(providers, {
      forkCheck: false,
      dynamodb: checked.dynamo.endpoint,
    });
    const status = await unchecked.tick();

    expect(reasonOf(status, "f")).toBeNull();
    expect(status.quorum.members).toEqual(["a", "b", "f"]);
  });
});

describe("a provider answering a huge garbage hash at the finalized height", () => {
  it("regression: its whole 'hash' went into the published quorum detail; now a hash that is not 32 bytes of hex is no block, and nothing of it is published", async () => {
    const junk = `0x${"ab".repeat(200_000)}`;
    const liar = await startNodeFront(honest, (call, result) => {
      const block = call.params[0];
      const numbered = typeof block === "string" && /^0x[0-9a-f]+$/.test(block);
      return call.method === "eth_getBlockByNumber" && numbered && result !== null
        ? { ...(result as object), hash: junk }
        : result;
    });
    cleanups.push(() => liar.close());
    const stack = await gateway([
      { name: "a", url: honest.url },
      { name: "b", url: `${honest.url}/` },
      { name: "liar", url: liar.url },
    ]);

    const status = await stack.tick();

    expect(JSON.stringify(status)).not.toContain("abababab");
    expect(status.quorum.members).toEqual(["a", "b", "liar"]);
  });
});

describe("a DynamoDB that accepts connections and never answers", () => {
  it("regression: a cold container's first request waited on its state read for good (the SDK only warned at its request timeout); now the read fails after two 2 s attempts and the request is served failing open", async () => {
    const silent = createServer(() => undefined);
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const dir = await mkdtemp(join(tmpdir(), "attacks-4-"));
    const upstream = createUpstream();
    cleanups.push(async () => {
      await upstream.close();
      silent.closeAllConnections();
      silent.close();
      await rm(dir, { recursive: true, force: true });
    });
    const configPath = join(dir, "config.json");
    await writeFile(
      configPath,
      JSON.stringify({
        networks: { devnet: { chain_id: CHAIN_ID, providers: [{ name: "a", url: honest.url }] } },
      }),
    );
    const runtime = createProxyRuntime({
      configSource: createConfigSource({ kind: "file", path: configPath }),
      secrets: envSecretResolver({}),
      store: new DynamoStateStore({
        client: createDynamoClient({
          endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        }),
        tableName: "silent",
      }),
      upstream,
      writeMetrics: () => undefined,
    });
    const body = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
    const startedAt = Date.now();

    const answer = (await runtime.handle(rpcEvent(body))) as { statusCode: number; body: string };

    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ result: hex(CHAIN_ID) });
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  }, 20_000);
});
