import type { AnvilNode } from "../../local/anvil.ts";
import type { GatewayClient } from "./gateway-client.ts";
import { rpcCall } from "./gateway-client.ts";

/**
 * The served head's lag as a client sees it: each sample is one answer of the gateway (the
 * head it states) against the node's own head read right after, by a client whose calls go
 * one after the other, so the local API Gateway emulator hands them to its containers in turn.
 */

export interface LagFigures {
  readonly samples: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  /** Answers whose head was below one an earlier answer had stated. */
  readonly backwards: number;
  /** Answers whose `x-gateway-head` was not the head they stated. */
  readonly misattested: number;
}

/** The `p`-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function lagFigures(
  lags: readonly number[],
  backwards: number,
  misattested: number,
): LagFigures {
  return {
    samples: lags.length,
    p50: percentile(lags, 50),
    p95: percentile(lags, 95),
    max: Math.max(...lags),
    backwards,
    misattested,
  };
}

/** What one kind of traffic states as the head, from one answer. */
export type HeadTraffic = "eth_blockNumber" | "latest reads";

const hexNumber = (value: unknown): number | null =>
  typeof value === "string" && /^0x[0-9a-f]+$/i.test(value) ? Number.parseInt(value, 16) : null;

/** The head one answer states, and the one its `x-gateway-head` attests. */
interface Stated {
  readonly head: number | null;
  readonly attested: number | null;
}

/**
 * One call of the traffic and the head its answer states: `eth_blockNumber`'s result, or, for
 * `latest` reads (an `eth_getBalance` at `latest`, then an `eth_getBlockByNumber("latest")`,
 * never an `eth_blockNumber`), the head the balance's answer attests (`x-gateway-head`) and
 * the number of the block the gateway answered for `latest`.
 */
async function stateHead(
  client: GatewayClient,
  url: string,
  traffic: HeadTraffic,
  turn: number,
): Promise<Stated> {
  const attestedBy = (headers: Readonly<Record<string, string>>) =>
    hexNumber(headers["x-gateway-head"]);
  if (traffic === "eth_blockNumber") {
    const answer = await client.send(url, rpcCall("eth_blockNumber", []));
    const head = hexNumber((JSON.parse(answer.text) as { result?: unknown }).result);
    return { head, attested: attestedBy(answer.headers) };
  }
  if (turn % 2 === 0) {
    const balance = rpcCall("eth_getBalance", [
      "0x70997970c51812dc3a010c7d01b50e677d4c79c8",
      "latest",
    ]);
    // A balance names no block: the head it is true at is the one its answer attests.
    const attested = attestedBy((await client.send(url, balance)).headers);
    return { head: attested, attested };
  }
  const answer = await client.send(url, rpcCall("eth_getBlockByNumber", ["latest", false]));
  const block = (JSON.parse(answer.text) as { result?: { number?: unknown } | null }).result;
  return { head: hexNumber(block?.number), attested: attestedBy(answer.headers) };
}

/**
 * Samples the served head for `durationMs` under one kind of traffic: a call every
 * `intervalMs`, each head an answer stated measured against the node's head.
 */
export async function sampleLag(options: {
  readonly client: GatewayClient;
  readonly url: string;
  readonly node: AnvilNode;
  readonly traffic: HeadTraffic;
  readonly durationMs: number;
  readonly intervalMs: number;
}): Promise<LagFigures> {
  const { client, url, node, traffic } = options;
  const lags: number[] = [];
  let highest = -1;
  let backwards = 0;
  let misattested = 0;
  const end = Date.now() + options.durationMs;
  for (let turn = 0; Date.now() < end; turn++) {
    const started = Date.now();
    const { head, attested } = await stateHead(client, url, traffic, turn);
    if (head !== null) {
      if (attested !== head) misattested++;
      const nodeHead = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
      lags.push(nodeHead - head);
      if (head < highest) backwards++;
      highest = Math.max(highest, head);
    }
    const rest = options.intervalMs - (Date.now() - started);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  return lagFigures(lags, backwards, misattested);
}
