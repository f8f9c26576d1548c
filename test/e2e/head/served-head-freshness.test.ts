import { afterAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../../local/anvil.ts";
import type { LocalStack } from "../../../local/stack.ts";
import { GatewayClient } from "../../support/gateway-client.ts";
import { sampleHeadLag } from "../../support/head-lag.ts";
import {
  type MultiContainerStack,
  multiContainerStack,
} from "../../support/multi-container-stack.ts";

/**
 * How far the served head trails the chain (docs/behaviour.md §10.2), measured: four proxy
 * containers over one DynamoDB, two providers on one anvil chain, the monitor at its default
 * check interval (15 s), and a client whose calls take the containers in turn. First with
 * `eth_blockNumber` traffic, then with only `latest` reads (an `eth_getBalance` at `latest`
 * and an `eth_getBlockByNumber("latest")`), each head an answer stated against the node's
 * own head. Goal: p95 ≤ 2 blocks at 1 s blocks, ≤ 1 block at 2 s, never a step back, and
 * every answer's `x-gateway-head` the head it states.
 */

const SAMPLE_MS = 15_000;
const INTERVAL_MS = 60;

interface Scene {
  readonly fixture: MultiContainerStack;
  readonly node: AnvilNode;
  readonly stack: LocalStack;
  /** What the four containers cost while sampling: DynamoDB calls and provider polls. */
  readonly costs: Costs;
}

interface Costs {
  headReads: number;
  publications: number;
  metrics: string[];
}

const scenes: Scene[] = [];
const client = new GatewayClient();

afterAll(async () => {
  await Promise.all(scenes.map((scene) => scene.fixture.close()));
  await client.close();
});

async function startScene(blockTimeSeconds: number): Promise<Scene> {
  const costs: Costs = { headReads: 0, publications: 0, metrics: [] };
  const fixture = await multiContainerStack({
    containers: 4,
    chain: { chainId: 31337, blockTimeSeconds, mine: 5 },
    config: { check_interval_seconds: 15 },
    stack: { writeMetrics: (line) => costs.metrics.push(line) },
    providers: (node) => [
      { name: "a", url: node.url },
      { name: "b", url: `${node.url}/` },
    ],
  });
  const { node, stack } = fixture;
  // Every container reads and writes through this one store object: count its head calls.
  const readHead = stack.store.readHead.bind(stack.store);
  stack.store.readHead = (network) => {
    costs.headReads++;
    return readHead(network);
  };
  const publishServed = stack.store.publishServed.bind(stack.store);
  stack.store.publishServed = (...args) => {
    costs.publications++;
    return publishServed(...args);
  };
  const scene = { fixture, node, stack, costs };
  scenes.push(scene);
  // The monitor's first tick writes the chain position; served once a publication is old enough.
  for (let wait = 0; wait < 100; wait++) {
    const status = await client.status(stack.url, "devnet");
    if (status.served_head.served !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return scene;
}

function report(label: string, figures: object): void {
  if (process.env.REPORT_FIGURES) console.info(`served head ${label}`, figures);
}

/** The sum of one metric over the EMF lines written so far. */
function metricSum(lines: readonly string[], name: string): number {
  return lines.reduce((sum, line) => {
    const value = (JSON.parse(line) as Record<string, unknown>)[name];
    return sum + (typeof value === "number" ? value : 0);
  }, 0);
}

/** Per container and minute: head reads, publication writes (the monitor's too), provider polls. */
function perContainerMinute(costs: Costs, fromReads: number, fromWrites: number, ms: number) {
  const scale = 60_000 / ms / 4;
  const round = (value: number) => Math.round(value * scale);
  return {
    head_reads: round(costs.headReads - fromReads),
    publication_writes: round(costs.publications - fromWrites),
  };
}

describe.concurrent("the served head's lag behind the chain, four containers", () => {
  it.each([
    { blockTimeSeconds: 1, goal: 2 },
    { blockTimeSeconds: 2, goal: 1 },
  ])(
    "at $blockTimeSeconds s blocks: p95 ≤ $goal with and without eth_blockNumber traffic, never back",
    async ({ blockTimeSeconds, goal }) => {
      const { node, stack, costs } = await startScene(blockTimeSeconds);
      const url = `${stack.url}/devnet`;
      const common = {
        client,
        url,
        node,
        until: { durationMs: SAMPLE_MS },
        pace: { interval: INTERVAL_MS },
        retakeWhenMined: false,
      };
      const [reads, writes, started] = [costs.headReads, costs.publications, Date.now()];
      const withBlockNumber = await sampleHeadLag({ ...common, traffic: "eth_blockNumber" });
      const latestOnly = await sampleHeadLag({ ...common, traffic: "latest reads" });
      report(`lag ${blockTimeSeconds} s, eth_blockNumber traffic`, withBlockNumber);
      report(`lag ${blockTimeSeconds} s, latest reads only`, latestOnly);
      report(`cost ${blockTimeSeconds} s, per container-minute`, {
        ...perContainerMinute(costs, reads, writes, Date.now() - started),
        polls_whole_run: metricSum(costs.metrics, "head_polls"),
        publications_tried_whole_run: metricSum(costs.metrics, "head_publications"),
      });
      for (const figures of [withBlockNumber, latestOnly]) {
        expect(figures.samples).toBeGreaterThanOrEqual(100);
        expect(figures.p95, JSON.stringify(figures)).toBeLessThanOrEqual(goal);
        expect(figures.backwards, JSON.stringify(figures)).toBe(0);
        expect(figures.misattested, JSON.stringify(figures)).toBe(0);
      }
    },
    60_000,
  );
});
