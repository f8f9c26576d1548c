import { classifyHttp, classifyMember, classifyTransport } from "../core/classify.ts";
import type { Provider } from "../core/network-model.ts";
import type { Upstream, UpstreamResult } from "../core/ports.ts";
import type { BlockHead } from "../core/quorum.ts";
import type { CallInfo, CooldownReason, Verdict } from "../core/verdict.ts";

/**
 * The two questions the monitor asks a provider, shared by the quorum check and the probe.
 * Answers are judged by the same classifier as live traffic (docs/behaviour.md §4); failures
 * come back as short descriptions with their kind, scrubbed of secrets.
 */

export interface CallOptions {
  readonly upstream: Upstream;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly scrub: (text: string) => string;
}

export type LatestBlock = BlockHead | CheckFailure;

const LATEST_BLOCK =
  '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}';
const LATEST_BLOCK_CALL: CallInfo = { method: "eth_getBlockByNumber", params: ["latest", false] };
const CHAIN_ID = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
const CHAIN_ID_CALL: CallInfo = { method: "eth_chainId", params: [] };
/** An upstream's words are kept short in details: enough to recognise, not a page of HTML. */
const MAX_DETAIL = 160;

const HEX_QUANTITY = /^0x[0-9a-f]{1,16}$/i;

/**
 * A failure as the live traffic's classifier judges it: its kind and the reason it would
 * blacklist for, so a quorum exclusion or a failed probe says the same as a failover would
 * (a rate-limited provider is not reported as dead).
 */
export interface CheckFailure {
  readonly error: string;
  /** The cooldown reason live traffic would give it; absent for an answer judged unclassified. */
  readonly reason?: CooldownReason;
}

type Answer = { readonly result: unknown } | CheckFailure;

function failure(verdict: Verdict, short: (text: string) => string): CheckFailure {
  switch (verdict.outcome) {
    case "retry":
      return { error: short(`${verdict.kind}: ${verdict.detail}`), reason: verdict.reason };
    case "capability":
      return { error: short(`capability: ${verdict.detail}`), reason: "capability" };
    case "ok":
      return { error: "no answer" };
    default:
      return { error: short(`unclassified: ${verdict.detail}`) };
  }
}

async function call(
  options: CallOptions,
  provider: Provider,
  body: string,
  info: CallInfo,
): Promise<Answer> {
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
      ? failure(classifyTransport(outcome.failure), short)
      : { error: `answer over ${outcome.limit} bytes` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(outcome.body);
  } catch {
    parsed = undefined;
  }
  const whole = classifyHttp(outcome.status, outcome.body, parsed, [info]);
  // The quorum's own head is the question, so no head judges a null here.
  const verdict =
    whole === "members" ? classifyMember(parsed, info, { quorumHead: null }) : whole;
  if (verdict.outcome !== "ok") return failure(verdict, short);
  return { result: (parsed as { result?: unknown }).result };
}

/** `eth_getBlockByNumber("latest", false)`: the head's number, timestamp (s) and hash. */
export async function latestBlock(options: CallOptions, provider: Provider): Promise<LatestBlock> {
  const answer = await call(options, provider, LATEST_BLOCK, LATEST_BLOCK_CALL);
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
  const answer = await call(options, provider, CHAIN_ID, CHAIN_ID_CALL);
  if ("error" in answer) return null;
  const id = answer.result;
  return typeof id === "string" && HEX_QUANTITY.test(id) ? Number.parseInt(id, 16) : null;
}
