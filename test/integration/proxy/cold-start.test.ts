import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConfigSource,
  createConfigSource,
  type LoadedConfig,
} from "../../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../../functions/adapters/config/secrets.ts";
import { createUpstream } from "../../../functions/adapters/upstream/upstream.ts";
import type { NetworkState } from "../../../functions/core/routing/network-state.ts";
import { createProxyRuntime } from "../../../functions/proxy/runtime.ts";
import { rpcEvent } from "../../support/api-gateway-event.ts";
import { MemoryStateStore } from "../../support/memory-state-store.ts";
import {
  type ScriptedHttpUpstream,
  startScriptedHttpUpstream,
} from "../../support/scripted-http-upstream.ts";

/**
 * A cold container's first request: the config load and the state read of the requested
 * network run side by side, not one after the other, and the request uses that one read.
 */

/** The state store, noting each network read and whether the config had loaded by then. */
class ObservedStateStore extends MemoryStateStore {
  readonly reads: Array<{ network: string; configLoaded: boolean }> = [];
  configLoaded = false;

  override async readNetwork(network: string): Promise<NetworkState> {
    this.reads.push({ network, configLoaded: this.configLoaded });
    return super.readNetwork(network);
  }
}

/** A real file config source whose first load waits until the test lets it finish. */
function heldConfigSource(source: ConfigSource, store: ObservedStateStore) {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const configSource: ConfigSource = {
    subscribe: (listener) => source.subscribe(listener),
    async current(): Promise<LoadedConfig> {
      await held;
      const loaded = await source.current();
      store.configLoaded = true;
      return loaded;
    },
  };
  return { configSource, release };
}

let upstream: ScriptedHttpUpstream;
let dir: string;
let configPath: string;
const upstreamClient = createUpstream();

beforeAll(async () => {
  upstream = await startScriptedHttpUpstream("http://127.0.0.1:9", () => ({ result: "0x10" }));
  dir = await mkdtemp(join(tmpdir(), "cold-start-"));
  configPath = join(dir, "config.json");
  await writeFile(
    configPath,
    JSON.stringify({
      networks: { devnet: { chain_id: 31337, providers: [{ name: "a", url: upstream.url }] } },
    }),
  );
});

afterAll(async () => {
  await upstreamClient.close();
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
});

function coldRuntime() {
  const store = new ObservedStateStore();
  const { configSource, release } = heldConfigSource(
    createConfigSource({ kind: "file", path: configPath }),
    store,
  );
  const runtime = createProxyRuntime({
    configSource,
    secrets: envSecretResolver({}),
    store,
    upstream: upstreamClient,
    writeMetrics: () => undefined,
  });
  return { runtime, store, release };
}

const blockNumber = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

describe("a cold container's first request", () => {
  it("reads the network's state while the config loads, and only once", async () => {
    const { runtime, store, release } = coldRuntime();

    const answer = runtime.handle(rpcEvent(blockNumber, "devnet"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.reads).toEqual([{ network: "devnet", configLoaded: false }]);

    release();
    const result = await answer;
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body ?? "")).toEqual({ jsonrpc: "2.0", id: 1, result: "0x10" });
    expect(store.reads).toEqual([{ network: "devnet", configLoaded: false }]);
  });

  it("reads no state early for a path without a network", async () => {
    const { runtime, store, release } = coldRuntime();
    const health = {
      ...rpcEvent("", "health"),
      requestContext: { http: { method: "GET", path: "/health" } },
    } as unknown as APIGatewayProxyEventV2;

    const answer = runtime.handle(health);
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.reads).toEqual([]);

    release();
    expect((await answer).statusCode).toBe(200);
  });

  it("only the first request reads early: names the config does not have cost one read, and still get their error", async () => {
    const { runtime, store, release } = coldRuntime();

    const answers = ["nonet", "other", "third"].map((network) =>
      runtime.handle(rpcEvent(blockNumber, network)),
    );
    await new Promise((resolve) => setImmediate(resolve));
    release();
    const results = await Promise.all(answers);

    expect(results.map((result) => result.statusCode)).toEqual([404, 404, 404]);
    expect(results[0]?.body).toContain('unknown network \\"nonet\\"');
    expect(store.reads).toEqual([{ network: "nonet", configLoaded: false }]);
  });
});
