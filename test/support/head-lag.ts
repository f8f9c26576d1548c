import type { AnvilNode } from "../../local/anvil.ts";
import { GatewayClient, rpcCall } from "./gateway-client.ts";

/**
 * The served head's lag behind the node's, as a caller sees it (docs/behaviour.md §10): each
 * sample is the head one answer of the gateway states (or the block it answers for `latest`)
 * against the node's own head. One sampler for every scene that measures it.
 */

export interface LagFigures {
  readonly samples: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  /** Answers that stated no head (an error, a null). */
  readonly failed: number;
  /** Answers whose head was below one an earlier answer had stated. */
  readonly backwards: number;
  /** Answers whose `x-gateway-head` was not the head they stated. */
  readonly misattested: number;
  /** Answers whose `x-gateway-head` attests a head below the very block they answered. */
  readonly attestedBelowAnswer: number;
}

/**
 * What states the head: `eth_blockNumber`'s result; `latest reads`, in turn an `eth_getBalance`
 * at `latest` (the head its answer attests, `x-gateway-head`) and an
 * `eth_getBlockByNumber("latest")` (the block's number), never an `eth_blockNumber`; or
 * `latest blocks`, only the latter.
 */
export type HeadTraffic = "eth_blockNumber" | "latest reads" | "latest blocks";

export interface LagSampling {
  readonly url: string;
  readonly node: AnvilNode;
  /** The client to call with (its connections are the caller's); a fresh one when absent. */
  readonly client?: GatewayClient;
  readonly traffic: HeadTraffic;
  /** Stops at this many samples, or once this long has passed. */
  readonly until: { readonly samples: number } | { readonly durationMs: number };
  /**
   * `interval`: a call every `everyMs`, start to start; `pause`: `everyMs` before each call.
   */
  readonly pace: { readonly interval: number } | { readonly pause: number };
  /**
   * Read the node's head before and after the call and take the sample again when a block was
   * mined meanwhile (the lag would be ambiguous by one); else the node's head after the call.
   */
  readonly retakeWhenMined: boolean;
  /** `eth_blockNumber` calls on the side, one every this many ms; none when absent. */
  readonly blockNumberEveryMs?: number;
}

const hexNumber = (value: unknown): number | null =>
  typeof value === "string" && /^0x[0-9a-f]+$/i.test(value) ? Number.parseInt(value, 16) : null;

/** The head one answer states, and the one its `x-gateway-head` attests. */
interface Stated {
  readonly head: number | null;
  readonly attested: number | null;
}

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
  if (traffic === "latest reads" && turn % 2 === 0) {
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
  const head = answer.status === 200 ? hexNumber(block?.number) : null;
  return { head, attested: attestedBy(answer.headers) };
}

export async function sampleHeadLag(options: LagSampling): Promise<LagFigures> {
  const { url, node, traffic } = options;
  const client = options.client ?? new GatewayClient();
  let running = true;
  const side = (async () => {
    if (options.blockNumberEveryMs === undefined) return;
    while (running) {
      await client.send(url, rpcCall("eth_blockNumber", [])).catch(() => undefined);
      await sleep(options.blockNumberEveryMs);
    }
  })();
  const lags: number[] = [];
  let highest = -1;
  let failed = 0;
  let backwards = 0;
  let misattested = 0;
  let attestedBelowAnswer = 0;
  const end = "durationMs" in options.until ? Date.now() + options.until.durationMs : Infinity;
  const enough = "samples" in options.until ? options.until.samples : Infinity;
  try {
    for (let turn = 0; lags.length < enough && Date.now() < end; turn++) {
      const started = Date.now();
      if ("pause" in options.pace) await sleep(options.pace.pause);
      const before = options.retakeWhenMined ? await nodeHead(node) : null;
      const { head, attested } = await stateHead(client, url, traffic, turn);
      const after = await nodeHead(node);
      if (head === null) failed++;
      else if (before === null || after === before) {
        if (attested !== head) misattested++;
        if (attested !== null && attested < head) attestedBelowAnswer++;
        lags.push(after - head);
        if (head < highest) backwards++;
        highest = Math.max(highest, head);
      }
      if ("interval" in options.pace) {
        const rest = options.pace.interval - (Date.now() - started);
        if (rest > 0) await sleep(rest);
      }
    }
  } finally {
    running = false;
    await side;
    if (options.client === undefined) await client.close();
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
    backwards,
    misattested,
    attestedBelowAnswer,
  };
}

async function nodeHead(node: AnvilNode): Promise<number> {
  return Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
