import type { AnvilNode } from "../../local/anvil.ts";
import { GatewayClient, rpcCall } from "./gateway-client.ts";

/**
 * The served head's lag against the node's (docs/behaviour.md §10): how many blocks behind the
 * node's head the block a caller gets for `latest` is, sampled as a caller sees it, with or
 * without `eth_blockNumber` traffic on the side (the call that publishes heads today).
 */

export interface LagFigures {
  readonly samples: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  /** Answers that were not a block (an error, a null). */
  readonly failed: number;
  /** Answers whose `x-gateway-head` attests a head below the very block they answered. */
  readonly attestedBelowAnswer: number;
}

export async function measureHeadLag(options: {
  readonly url: string;
  readonly node: AnvilNode;
  readonly samples: number;
  readonly everyMs: number;
  /** `eth_blockNumber` calls to make on the side, one every this many ms; none when absent. */
  readonly blockNumberEveryMs?: number;
}): Promise<LagFigures> {
  const client = new GatewayClient();
  let running = true;
  const traffic = (async () => {
    if (options.blockNumberEveryMs === undefined) return;
    while (running) {
      await client.send(options.url, rpcCall("eth_blockNumber", [])).catch(() => undefined);
      await sleep(options.blockNumberEveryMs);
    }
  })();
  const lags: number[] = [];
  let failed = 0;
  let attestedBelowAnswer = 0;
  try {
    while (lags.length < options.samples) {
      await sleep(options.everyMs);
      const before = await nodeHead(options.node);
      const answer = await client.send(
        options.url,
        rpcCall("eth_getBlockByNumber", ["latest", false]),
      );
      const after = await nodeHead(options.node);
      const block = (JSON.parse(answer.text) as { result?: { number?: string } | null }).result;
      if (answer.status !== 200 || typeof block?.number !== "string") {
        failed++;
        continue;
      }
      // A block mined during the call makes the sample ambiguous by one: it is taken again.
      if (after !== before) continue;
      const number = Number.parseInt(block.number, 16);
      const attested = answer.headers["x-gateway-head"];
      if (attested !== undefined && Number(attested) < number) attestedBelowAnswer++;
      lags.push(before - number);
    }
  } finally {
    running = false;
    await traffic;
    await client.close();
  }
  const sorted = [...lags].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
  return {
    samples: lags.length,
    p50: at(0.5),
    p95: at(0.95),
    max: sorted.at(-1) ?? Number.NaN,
    failed,
    attestedBelowAnswer,
  };
}

async function nodeHead(node: AnvilNode): Promise<number> {
  return Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
