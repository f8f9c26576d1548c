import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigSource } from "../../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../../functions/adapters/config/secrets.ts";
import {
  createDynamoClient,
  DynamoStateStore,
} from "../../../functions/adapters/store/state-store.ts";
import { createUpstream } from "../../../functions/adapters/upstream/upstream.ts";
import { createProxyRuntime, type ProxyRuntime } from "../../../functions/proxy/runtime.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import type { LocalDynamoDb } from "../../../local/dynamodb.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { rpcEvent } from "../../support/api-gateway-event.ts";
import { dynamoBackends } from "../../support/environment.ts";

/**
 * Many Lambda containers share provider health through DynamoDB (docs/behaviour.md §6): four
 * gateway instances with their own caches fire 50 concurrent requests at a primary that fails.
 * The one conditional write per incident means exactly one strike, and every request is served
 * by the other provider. Runs on dynalite and on AWS's DynamoDB Local (always under CI), since
 * the conditional write is what the two could disagree on.
 */

describe.each(dynamoBackends())("shared state on $name", (backend) => {
  let dynamo: LocalDynamoDb;
  let healthy: AnvilNode;
  let failing: FaultShim;
  let dir: string;
  let store: DynamoStateStore;
  const upstreams: Array<ReturnType<typeof createUpstream>> = [];
  let gateways: ProxyRuntime[] = [];
  // One clock for every container, so cache expiry is driven by the test, not by sleeping.
  let now = Date.now();
  const clock = () => now;

  beforeAll(async () => {
    [dynamo, healthy] = await Promise.all([
      backend.start({ tableName: "shared-state" }),
      startAnvil({ chainId: 31337 }),
    ]);
    const failingNode = await startAnvil({ chainId: 31337 });
    failing = await startFaultShim(failingNode.url);
    await failing.setFault({ kind: "http", status: 503, body: "<html>Service Unavailable</html>" });
    dir = await mkdtemp(join(tmpdir(), "shared-state-"));
    const configPath = join(dir, "config.json");
    await writeFile(
      configPath,
      JSON.stringify({
        networks: {
          devnet: {
            chain_id: 31337,
            providers: [
              { name: "primary", url: failing.url, priority: 2 },
              { name: "secondary", url: healthy.url, priority: 1 },
            ],
          },
        },
      }),
    );
    store = new DynamoStateStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
    });
    gateways = Array.from({ length: 4 }, () => {
      const upstream = createUpstream();
      upstreams.push(upstream);
      return createProxyRuntime({
        configSource: createConfigSource({ kind: "file", path: configPath }),
        secrets: envSecretResolver({}),
        // Each container has its own client and cache, as separate Lambdas would.
        store: new DynamoStateStore({
          client: createDynamoClient({ endpoint: dynamo.endpoint }),
          tableName: dynamo.tableName,
        }),
        upstream,
        clock,
        writeMetrics: () => undefined,
      });
    });
    await Promise.all(gateways.map((gateway) => gateway.current()));
    afterAll(async () => {
      await Promise.all(upstreams.map((upstream) => upstream.close()));
      await failing.close();
      await failingNode.stop();
      await healthy.stop();
      await dynamo.close();
      await rm(dir, { recursive: true, force: true });
    });
  }, 180_000);

  it("50 concurrent requests at a failing primary: all served, exactly one strike", async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        gateways[i % 4]?.handle(
          rpcEvent(`{"jsonrpc":"2.0","id":${i},"method":"eth_chainId","params":[]}`),
        ),
      ),
    );
    for (const [i, answer] of answers.entries()) {
      expect(answer?.statusCode).toBe(200);
      expect(answer?.headers?.["x-gateway-provider"]).toBe("secondary");
      expect(JSON.parse(String(answer?.body))).toEqual({
        jsonrpc: "2.0",
        id: i,
        result: "0x7a69",
      });
    }
    const health = await store.readHealth("devnet", "primary");
    expect(health).toMatchObject({ strikes: 1, reason: "connection", probeGated: true });
    expect((await store.readHealth("devnet", "secondary")).strikes).toBe(0);
  });

  it("a container sees another container's blacklist within its cache TTL", async () => {
    // Past the cache TTL (1 s) every container reads the blacklist: no request goes to the primary.
    const before = failing.requests;
    now += 1100;
    const answers = await Promise.all(
      gateways.map((gateway, i) =>
        gateway.handle(rpcEvent(`{"jsonrpc":"2.0","id":${i},"method":"eth_blockNumber"}`)),
      ),
    );
    for (const answer of answers) {
      expect(answer.statusCode).toBe(200);
      expect(answer.headers?.["x-gateway-provider"]).toBe("secondary");
      expect(answer.headers?.["x-gateway-attempts"]).toBe("1");
    }
    expect(failing.requests).toBe(before);
  });
});
