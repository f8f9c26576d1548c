import type { Provider } from "../core/network-model.ts";
import type { Upstream, UpstreamResult } from "../core/ports.ts";
import type { BlockHead } from "../core/quorum.ts";

/**
 * The two questions the monitor asks a provider, shared by the quorum check and the probe.
 * Failures come back as short descriptions; any upstream text in them has been scrubbed.
 */

export interface CallOptions {
  readonly upstream: Upstream;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly scrub: (text: string) => string;
}

export type LatestBlock = BlockHead | { readonly error: string };

const LATEST_BLOCK =
  '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}';
const CHAIN_ID = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
/** An upstream's words are kept short in details: enough to recognise, not a page of HTML. */
const MAX_DETAIL = 160;

const HEX_QUANTITY = /^0x[0-9a-f]{1,16}$/i;

type Answer = { readonly result: unknown } | { readonly error: string };

async function call(options: CallOptions, provider: Provider, body: string): Promise<Answer> {
  const short = (text: string) => options.scrub(text).slice(0, MAX_DETAIL);
  let outcome: UpstreamResult;
  try {
    outcome = await options.upstream.send({
      url: provider.url,
      body,
      timeoutMs: options.timeoutMs,
      maxResponseBytes: options.maxResponseBytes,
      // Both questions are reads: a dead keep-alive socket may cost a second send, not a check.
      idempotent: true,
    });
  } catch (error) {
    // One provider's odd failure is its failed check, not the whole network's tick.
    return { error: short(error instanceof Error ? error.message : String(error)) };
  }
  if (!outcome.ok) {
    return "failure" in outcome
      ? { error: short(outcome.failure.message) }
      : { error: `answer over ${outcome.limit} bytes` };
  }
  if (outcome.status !== 200) return { error: `HTTP ${outcome.status}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(outcome.body);
  } catch {
    return { error: "answer is not JSON" };
  }
  if (typeof parsed !== "object" || parsed === null) return { error: "answer is not JSON-RPC" };
  const answer = parsed as { result?: unknown; error?: { code?: unknown; message?: unknown } };
  if (answer.error !== undefined) {
    return { error: short(`JSON-RPC error ${answer.error.code}: ${answer.error.message}`) };
  }
  return { result: answer.result };
}

/** `eth_getBlockByNumber("latest", false)`: the head's number, timestamp (s) and hash. */
export async function latestBlock(options: CallOptions, provider: Provider): Promise<LatestBlock> {
  const answer = await call(options, provider, LATEST_BLOCK);
  if ("error" in answer) return answer;
  const block = answer.result as { number?: unknown; timestamp?: unknown; hash?: unknown } | null;
  const number = block?.number;
  const timestamp = block?.timestamp;
  if (
    typeof number !== "string" ||
    typeof timestamp !== "string" ||
    !HEX_QUANTITY.test(number) ||
    !HEX_QUANTITY.test(timestamp)
  ) {
    return { error: "no latest block in the answer" };
  }
  return {
    number: Number.parseInt(number, 16),
    timestamp: Number.parseInt(timestamp, 16),
    ...(typeof block?.hash === "string" ? { hash: block.hash } : {}),
  };
}

/** `eth_chainId`, or null when the call failed (the previous verdict then stands). */
export async function chainIdOf(options: CallOptions, provider: Provider): Promise<number | null> {
  const answer = await call(options, provider, CHAIN_ID);
  if ("error" in answer) return null;
  const id = answer.result;
  return typeof id === "string" && HEX_QUANTITY.test(id) ? Number.parseInt(id, 16) : null;
}
