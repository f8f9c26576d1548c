import type { BlockHead } from "../chain/quorum.ts";
import { classifyHttp, classifyMember, classifyTransport, withKind } from "../classify/classify.ts";
import { setsRetryAfter } from "../classify/retry-after.ts";
import type { CallInfo, CooldownReason, Verdict } from "../classify/verdict.ts";
import type { Provider } from "../config/network-model.ts";
import type { Upstream, UpstreamResult } from "../ports.ts";

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
/** A block hash is 32 bytes: anything else (a provider's junk, megabytes of it) is no hash. */
const BLOCK_HASH = /^0x[0-9a-f]{64}$/i;

/**
 * A failure as the live traffic's classifier judges it: its kind and the reason it would
 * blacklist for, so a quorum exclusion or a failed probe says the same as a failover would
 * (a rate-limited provider is not reported as dead).
 */
export interface CheckFailure {
  readonly error: string;
  /** The cooldown reason live traffic would give it; absent for an answer judged unclassified. */
  readonly reason?: CooldownReason;
  /** The `Retry-After` of a 429 or 503, as sent: the provider's word on when to come back. */
  readonly retryAfter?: string;
  /** The provider no longer keeps what was asked (docs/behaviour.md §16), and the oldest it named. */
  readonly pruned?: { readonly oldest?: number };
}

export type Answer = { readonly result: unknown } | CheckFailure;

function failure(verdict: Verdict, short: (text: string) => string): CheckFailure {
  switch (verdict.outcome) {
    case "retry":
      return { error: short(withKind(verdict.kind, verdict.detail)), reason: verdict.reason };
    case "capability":
      return { error: short(`capability: ${verdict.detail}`), reason: "capability" };
    case "behind":
      return { error: short(`behind: ${verdict.detail}`) };
    case "pruned":
      return {
        error: short(`pruned: ${verdict.detail}`),
        pruned: verdict.oldest === undefined ? {} : { oldest: verdict.oldest },
      };
    case "ok":
      return { error: "no answer" };
    default:
      return { error: short(`unclassified: ${verdict.detail}`) };
  }
}

/**
 * Sends a body and judges the HTTP answer as a whole: the parsed body when its calls are to be
 * judged one by one, else why it failed.
 */
async function send(
  options: CallOptions,
  provider: Provider,
  body: string,
  infos: readonly CallInfo[],
  short: (text: string) => string,
): Promise<{ readonly parsed: unknown } | CheckFailure> {
  let outcome: UpstreamResult;
  try {
    outcome = await options.upstream.send({
      url: provider.url,
      body,
      timeoutMs: options.timeoutMs,
      maxResponseBytes: options.maxResponseBytes,
      // The monitor only reads: a dead keep-alive socket may cost a second send, not a check.
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
  const whole = classifyHttp(outcome.status, outcome.body, parsed, infos);
  if (whole !== "members") {
    if (whole.outcome === "ok") return { error: "no answer" };
    const judged = failure(whole, short);
    const { retryAfter } = outcome;
    return whole.outcome === "retry" && retryAfter !== undefined && setsRetryAfter(outcome.status)
      ? { ...judged, retryAfter }
      : judged;
  }
  return { parsed };
}

/** One call, judged as live traffic judges it: its result, or why it failed. */
export function askProvider(
  options: CallOptions,
  provider: Provider,
  info: CallInfo,
  knownHead: number | null = null,
): Promise<Answer> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: info.method, params: info.params });
  return call(options, provider, body, info, knownHead);
}

async function call(
  options: CallOptions,
  provider: Provider,
  body: string,
  info: CallInfo,
  knownHead: number | null = null,
): Promise<Answer> {
  const short = (text: string) => options.scrub(text).slice(0, MAX_DETAIL);
  const whole = await send(options, provider, body, [info], short);
  if (!("parsed" in whole)) return whole;
  // The quorum's own head is the question, so no head judges a null here (unless given).
  const verdict = classifyMember(whole.parsed, info, { quorumHead: knownHead });
  if (verdict.outcome !== "ok") return failure(verdict, short);
  return { result: (whole.parsed as { result?: unknown }).result };
}

/** `eth_getBlockByNumber("latest", false)`: the head's number, timestamp (s) and hash. */
export function latestBlock(options: CallOptions, provider: Provider): Promise<LatestBlock> {
  return readBlock(options, provider, LATEST_BLOCK, LATEST_BLOCK_CALL);
}

/**
 * `eth_getBlockByNumber(number, false)` as a lone call (not a batch, which some providers
 * refuse): the block's number, timestamp and hash, or why it failed.
 */
export function blockAt(
  options: CallOptions,
  provider: Provider,
  number: number,
): Promise<LatestBlock> {
  const info: CallInfo = {
    method: "eth_getBlockByNumber",
    params: [`0x${number.toString(16)}`, false],
  };
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: info.method, params: info.params });
  return readBlock(options, provider, body, info);
}

/**
 * `eth_getBlockByNumber(block, false)` for each tag or hex number, in one batch: each block's
 * number, timestamp and hash, or why that one failed.
 */
export async function blocksAt(
  options: CallOptions,
  provider: Provider,
  blocks: readonly string[],
): Promise<LatestBlock[]> {
  const infos = blocks.map(
    (block): CallInfo => ({
      method: "eth_getBlockByNumber",
      params: [block, false],
    }),
  );
  const body = JSON.stringify(
    infos.map((info, id) => ({ jsonrpc: "2.0", id, method: info.method, params: info.params })),
  );
  const answers = await callBatch(options, provider, body, infos);
  return answers.map(blockOf);
}

/** A batch's answers, each judged for its call as live traffic judges a batch member. */
async function callBatch(
  options: CallOptions,
  provider: Provider,
  body: string,
  infos: readonly CallInfo[],
): Promise<Answer[]> {
  const short = (text: string) => options.scrub(text).slice(0, MAX_DETAIL);
  const whole = await send(options, provider, body, infos, short);
  if (!("parsed" in whole)) return infos.map(() => whole);
  const members = new Map<unknown, unknown>(
    (Array.isArray(whole.parsed) ? whole.parsed : []).map((member) => [
      (member as { id?: unknown } | null)?.id,
      member,
    ]),
  );
  return infos.map((info, id) => {
    const verdict = classifyMember(members.get(id), info, { quorumHead: null });
    if (verdict.outcome !== "ok") return failure(verdict, short);
    return { result: (members.get(id) as { result?: unknown }).result };
  });
}

async function readBlock(
  options: CallOptions,
  provider: Provider,
  body: string,
  info: CallInfo,
): Promise<LatestBlock> {
  return blockOf(await call(options, provider, body, info));
}

function blockOf(answer: Answer): LatestBlock {
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
    return { error: "no block in the answer" };
  }
  return {
    number: Number.parseInt(number, 16),
    timestamp: Number.parseInt(timestamp, 16),
    ...(typeof block?.hash === "string" && BLOCK_HASH.test(block.hash) ? { hash: block.hash } : {}),
  };
}

/** `eth_chainId`, or null when the call failed (the previous verdict then stands). */
export async function chainIdOf(options: CallOptions, provider: Provider): Promise<number | null> {
  const answer = await call(options, provider, CHAIN_ID, CHAIN_ID_CALL);
  if ("error" in answer) return null;
  const id = answer.result;
  return typeof id === "string" && HEX_QUANTITY.test(id) ? Number.parseInt(id, 16) : null;
}
