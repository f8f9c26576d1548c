import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * The served head across containers (docs/behaviour.md §10): four proxy runtimes (as four warm
 * Lambda containers) over one DynamoDB, three providers whose heads are up to 20 blocks apart,
 * the monitor ticking. A client walking eth_blockNumber never sees it go back, and never gets
 * a null for a block at or below a head it was given.
 */

const CALLS = 10_000;

let nodes: AnvilNode[] = [];
let stack: LocalStack;

beforeAll(async () => {
  nodes = await Promise.all(
    [0, 1, 2].map(() => startAnvil({ chainId: 31337, blockTimeSeconds: 1 })),
  );
  // Skewed heads: 20 and 10 blocks ahead of the last node.
  await Promise.all([nodes[0]?.rpc("anvil_mine", ["0x14"]), nodes[1]?.rpc("anvil_mine", ["0xa"])]);
  stack = await startLocalStack({
    containers: 4,
    monitor: true,
    config: {
      check_interval_seconds: 1,
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          // The anvil nodes are separate chains that mine the same blocks only while nothing sets them
          // apart: the fork check would exclude some as wrong_fork. Forks are tested in fork-check.test.ts.
          quorum: { fork_check: false },
          providers: nodes.map((node, index) => ({
            name: `node-${index}`,
            url: node.url,
            // The lagging node first: it gets the calls it cannot serve, and must not hurt.
            priority: index === 2 ? 3 : 1,
          })),
        },
      },
    },
  });
  // The monitor's first tick publishes the served head; it is served once the publication
  // delay has passed (before that, each container answers a provider's own number).
  for (let wait = 0; wait < 100; wait++) {
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      served_head: { served: number | null };
    };
    if (status.served_head.served !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all(nodes.map((node) => node.stop()));
});

async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(JSON.stringify(body.error));
  return body.result;
}

describe("across four containers and providers 20 blocks apart", () => {
  it(`eth_blockNumber never goes back over ${CALLS} calls, and no block at or below it is null`, {
    timeout: 60_000,
  }, async () => {
    let highest = 0;
    let backwards = 0;
    let nulls = 0;
    for (let call = 0; call < CALLS; call++) {
      const head = Number.parseInt(String(await rpc("eth_blockNumber", [])), 16);
      if (head < highest) backwards++;
      highest = Math.max(highest, head);
      if (call % 5 === 0) {
        const block = await rpc("eth_getBlockByNumber", [`0x${head.toString(16)}`, false]);
        if (block === null) nulls++;
      }
    }
    expect({ backwards, nulls }).toEqual({ backwards: 0, nulls: 0 });
    // The lagging node was asked and answered nulls for blocks it had not reached: no strike.
    const status = (await fetch(`${stack.url}/devnet/status`).then((r) => r.json())) as {
      providers: Array<{ name: string; strikes: number }>;
    };
    expect(status.providers.map((p) => p.strikes)).toEqual([0, 0, 0]);
  });
});
