import { afterAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { GatewayClient } from "../support/gateway-client.ts";
import { type LagFigures, sampleLag } from "../support/head-lag.ts";

/**
 * How far the served head trails the chain (docs/behaviour.md §10.2), measured: four proxy
 * containers over one DynamoDB, two providers on one anvil chain, the monitor at its default
 * check interval (15 s), and a client whose calls take the containers in turn. First with
 * `eth_blockNumber` traffic, then with only `latest` reads (an `eth_getBalance` at `latest`
 * and an `eth_getBlockByNumber("latest")`), each head an answer stated against the node's
 * own head. Goal: p95 ≤ 2 blocks at 1 s blocks, ≤ 1 block at 2 s, never a step back.
 */

const SAMPLE_MS = 15_000;
const INTERVAL_MS = 60;

interface Scene {
  readonly node: AnvilNode;
  readonly stack: LocalStack;
}

const scenes: Scene[] = [];
const client = new GatewayClient();

afterAll(async () => {
  await Promise.all(scenes.map((scene) => scene.stack.close()));
  await Promise.all(scenes.map((scene) => scene.node.stop()));
  await client.close();
});

async function startScene(blockTimeSeconds: number): Promise<Scene> {
  const node = await startAnvil({ chainId: 31337, blockTimeSeconds });
  await node.rpc("anvil_mine", ["0x5"]);
  const stack = await startLocalStack({
    containers: 4,
    monitor: true,
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: blockTimeSeconds,
          providers: [
            { name: "a", url: node.url },
            { name: "b", url: `${node.url}/` },
          ],
        },
      },
    },
  });
  const scene = { node, stack };
  scenes.push(scene);
  // The monitor's first tick writes the chain position; served once a publication is old enough.
  for (let wait = 0; wait < 100; wait++) {
    const status = await client.status(stack.url, "devnet");
    if (status.served_head.served !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return scene;
}

function report(label: string, figures: LagFigures): void {
  if (process.env.REPORT_FIGURES) console.info(`served head lag ${label}`, figures);
}

describe.concurrent("the served head's lag behind the chain, four containers", () => {
  it.each([
    { blockTimeSeconds: 1, goal: 2 },
    { blockTimeSeconds: 2, goal: 1 },
  ])(
    "at $blockTimeSeconds s blocks: p95 ≤ $goal with and without eth_blockNumber traffic, never back",
    async ({ blockTimeSeconds, goal }) => {
      const { node, stack } = await startScene(blockTimeSeconds);
      const url = `${stack.url}/devnet`;
      const common = { client, url, node, durationMs: SAMPLE_MS, intervalMs: INTERVAL_MS };
      const withBlockNumber = await sampleLag({ ...common, traffic: "eth_blockNumber" });
      const latestOnly = await sampleLag({ ...common, traffic: "latest reads" });
      report(`${blockTimeSeconds} s, eth_blockNumber traffic`, withBlockNumber);
      report(`${blockTimeSeconds} s, latest reads only`, latestOnly);
      for (const figures of [withBlockNumber, latestOnly]) {
        expect(figures.samples).toBeGreaterThanOrEqual(100);
        expect(figures.p95, JSON.stringify(figures)).toBeLessThanOrEqual(goal);
        expect(figures.backwards, JSON.stringify(figures)).toBe(0);
      }
    },
    60_000,
  );
});
