import type { CallInfo } from "../../../classify/verdict.ts";
import type { Settings } from "../../../config/config-schema.ts";
import { parseJsonOrUndefined } from "../../../jsonrpc/json-raw.ts";
import { blockRefOf } from "../../../methods/block-ref.ts";
import type { RequestScope } from "../../vocabulary.ts";
import { GET_LOGS, type LogQuery, logQueryOf, quantity } from "../logs-range.ts";
import { type BloomTest, bloomTestFor, type LogFilter, logFilterOf } from "./logs-bloom.ts";
import type { AnswerCheck, AnswerVerdict } from "./logs-check.ts";
import { askKey, type HeaderAsk, headerCall, headerFor } from "./logs-companions.ts";
import { answerLogs, completenessOf } from "./logs-completeness.ts";
import type { BlockHeader } from "./logs-headers.ts";
import { tieBreak } from "./logs-receipts.ts";

/**
 * One log answer judged against the blocks it is about (docs/behaviour.md §12.10, §12.12):
 * whether the provider showed the block its answer reaches (near the head, in the same batch),
 * whether a log names another block than the header at its height, and whether a block the
 * answer has no log of says in its `logsBloom` that the filter may be in it, with the block's
 * receipts as the tie-break of a bloom hit.
 */

/** A log call the checks judge: numbered blocks, or one block by hash. */
export type LogQuestion =
  | { readonly kind: "range"; readonly query: LogQuery; readonly filter: LogFilter | null }
  | { readonly kind: "hash"; readonly hash: string; readonly filter: LogFilter | null };

export function logQuestionOf(info: CallInfo): LogQuestion | null {
  const query = logQueryOf(info.method, info.params);
  const filter = Array.isArray(info.params) ? logFilterOf(info.params[0]) : null;
  if (query !== null) return { kind: "range", query, filter };
  if (info.method !== GET_LOGS) return null;
  const ref = blockRefOf(info.method, info.params);
  return ref?.kind === "hash" ? { kind: "hash", hash: ref.hash, filter } : null;
}

/**
 * Chains whose blooms do not mean "the logs of this block": Avalanche's C-Chain and Fuji,
 * where since ACP-194 a block's bloom covers the receipts of the blocks it settles, and Oasis
 * Sapphire (mainnet, testnet), whose blooms are not kept.
 */
export const BLOOMS_OFF_BY_CHAIN = new Set([43114, 43113, 23294, 23295]);

/** Whether blooms are read on this network (`logs_bloom`, "auto" by its chain id). */
export function bloomsRead(chainId: number, setting: Settings["logs_bloom"]): boolean {
  return setting === "auto" ? !BLOOMS_OFF_BY_CHAIN.has(chainId) : setting === "standard";
}

/**
 * Whether a block is near the head, where its log answers are checked as fresh: above the
 * chain position's finalized block, or within `logs_check_window_blocks` of the head the
 * gateway knows, whatever the chain calls final (any block, when neither is known). A fresh
 * block is where a log index lags; a chain of instant finality, or one provider that calls
 * its own head finalized, would otherwise leave the newest blocks unchecked.
 */
export function notFinal(block: number, scope: RequestScope): boolean {
  const finalized = scope.context.state.head?.finalized?.number ?? null;
  if (finalized !== null && block > finalized) return true;
  const head = scope.quorumHead;
  if (head === null) return finalized === null;
  return block > head - scope.network.settings.logs_check_window_blocks;
}

/**
 * The headers asked beside a log query: for a range reaching past the final blocks, `toBlock`
 * (the reach proof) and, while blooms are read, the other non-final blocks newest first; for
 * a `blockHash` filter, that block. At most `logs_check_headers` (0: none, the checks then
 * rest on the headers held and the reach check of §12.10).
 */
export function headerAsks(question: LogQuestion, scope: RequestScope): HeaderAsk[] {
  const { logs_check_headers: most, logs_bloom } = scope.network.settings;
  if (most === 0) return [];
  if (question.kind === "hash") return [{ kind: "hash", hash: question.hash }];
  const { from, to } = question.query;
  if (!notFinal(to, scope)) return [];
  const blooms = bloomsRead(scope.network.chainId, logs_bloom) && question.filter !== null;
  const asks: HeaderAsk[] = [];
  for (let block = to; block >= from && asks.length < (blooms ? most : 1); block--) {
    if (!notFinal(block, scope)) break;
    asks.push({ kind: "number", block });
  }
  return asks;
}

const USE: AnswerVerdict = { kind: "use", shown: null };

export async function judgeLogAnswer(
  question: LogQuestion,
  answer: string,
  check: AnswerCheck,
): Promise<AnswerVerdict> {
  const result = (parseJsonOrUndefined(answer) as { result?: unknown } | undefined)?.result;
  // An error clamps nothing and misses nothing: it is the provider's answer as it is.
  if (!Array.isArray(result)) return USE;
  const fetched: BlockHeader[] = [];
  const verdict =
    question.kind === "hash"
      ? await judgeByHash(question, result, check, fetched)
      : await judgeRange(question, result, check, fetched);
  if (verdict.kind === "use") {
    // Kept only from an answer that passed: a header beside a bad answer may be as bad.
    const network = check.scope.network.name;
    for (const header of [...(check.shown?.values() ?? []), ...fetched]) {
      if (header !== null) check.checks.headers.keep(network, header);
    }
  }
  return verdict;
}

async function judgeRange(
  question: Extract<LogQuestion, { kind: "range" }>,
  result: readonly unknown[],
  check: AnswerCheck,
  fetched: BlockHeader[],
): Promise<AnswerVerdict> {
  const { query } = question;
  // Near the head, reach is what the provider shows now, never the highest it once showed
  // (with no headers to ask, logs_check_headers 0, the highest it was seen at, as in §12.10).
  const showsNow =
    check.scope.network.settings.logs_check_headers > 0 && notFinal(query.to, check.scope);
  const needsReach = showsNow || (check.confirmedHead ?? -1) < query.to;
  const ask: HeaderAsk = { kind: "number", block: query.to };
  let toHeader = check.shown?.get(askKey(ask)) ?? null;
  if (needsReach && !(check.shown?.has(askKey(ask)) ?? false)) {
    // Not in a batch (a provider that takes none, or no headers asked): asked on its own, as
    // the reach check of §12.10 always was.
    const header = await fetchHeader(ask, check);
    if (typeof header === "string") return unchecked(`block ${quantity(query.to)}`, header);
    toHeader = header;
    if (header !== null) fetched.push(header);
  }
  if (needsReach && toHeader === null) {
    return {
      kind: "behind",
      block: query.to,
      detail: `its answer came without block ${quantity(query.to)} (toBlock): its logs may end before the range does`,
    };
  }
  const shown = toHeader === null ? null : query.to;
  const logs = answerLogs(result);
  if (logs === null) return { kind: "use", shown };
  const verdict = await settle(
    completenessOf({
      from: query.from,
      to: query.to,
      logs,
      headers: headersFor(query, check, toHeader),
      bloom: bloomOf(question.filter, check),
    }),
    question.filter,
    check,
  );
  return verdict.kind === "use" ? { kind: "use", shown } : verdict;
}

async function judgeByHash(
  question: Extract<LogQuestion, { kind: "hash" }>,
  result: readonly unknown[],
  check: AnswerCheck,
  fetched: BlockHeader[],
): Promise<AnswerVerdict> {
  const ask: HeaderAsk = { kind: "hash", hash: question.hash };
  const asked = check.shown?.has(askKey(ask)) ?? false;
  let header = asked
    ? (check.shown?.get(askKey(ask)) ?? null)
    : check.checks.headers.byHash(check.scope.network.name, question.hash);
  if (header === null && !asked && check.scope.network.settings.logs_check_headers > 0) {
    const got = await fetchHeader(ask, check);
    // A caller's batch of such filters could spend the request's calls on headers alone: a
    // header that cannot be asked leaves the answer as it was before these checks, used.
    if (typeof got === "string") return USE;
    header = got;
    if (got !== null) fetched.push(got);
  }
  if (header === null) {
    // A provider that cannot show the block has no say about its logs (an empty list from a
    // backend that never had it is the known failure).
    return {
      kind: "behind",
      block: null,
      detail: `it did not show block ${question.hash} (blockHash) beside its logs`,
    };
  }
  const logs = answerLogs(result);
  if (logs === null) return USE;
  const at = header.number;
  const foreign = logs.find((log) => log.block !== at);
  if (foreign !== undefined) {
    return missing(
      "stale_log",
      foreign.block,
      `its answer for block ${question.hash} holds a log of block ${quantity(foreign.block)}: it comes from another block`,
    );
  }
  return settle(
    completenessOf({
      from: at,
      to: at,
      logs,
      headers: new Map([[at, header]]),
      bloom: bloomOf(question.filter, check),
    }),
    question.filter,
    check,
  );
}

/** Each filter's bloom test, worked out once however many answers it judges (a keccak per value). */
const bloomTests = new WeakMap<LogFilter, BloomTest>();

function bloomOf(filter: LogFilter | null, check: AnswerCheck): BloomTest | null {
  const { chainId, settings } = check.scope.network;
  if (filter === null || !bloomsRead(chainId, settings.logs_bloom)) return null;
  let test = bloomTests.get(filter);
  if (test === undefined) {
    test = bloomTestFor(filter);
    bloomTests.set(filter, test);
  }
  return test;
}

function missing(
  reason: "missing_data" | "stale_log",
  block: number,
  detail: string,
): AnswerVerdict {
  return { kind: "missing", block, reason, detail };
}

function unchecked(what: string, why: string): AnswerVerdict {
  return { kind: "unchecked", detail: `its logs were not used: not checked for ${what} (${why})` };
}

/**
 * The header each height of the range is judged against: what the provider showed beside its
 * answer, then, for final blocks only (a header held from another source may be of another
 * fork near the head), the one header this container holds at that height, or the chain
 * position's finalized hash.
 */
function headersFor(
  query: LogQuery,
  check: AnswerCheck,
  toHeader: BlockHeader | null,
): Map<number, BlockHeader> {
  const headers = new Map<number, BlockHeader>();
  const finalized = check.scope.context.state.head?.finalized ?? null;
  if (finalized !== null && finalized.number >= query.from) {
    const top = Math.min(query.to, finalized.number);
    for (const [height, held] of check.checks.headers.inRange(
      check.scope.network.name,
      query.from,
      top,
    )) {
      const only = held.length === 1 ? held[0] : undefined;
      if (only !== undefined) headers.set(height, only);
    }
    if (finalized.hash !== null && finalized.number <= query.to) {
      const held = headers.get(finalized.number);
      if (held === undefined || held.hash !== finalized.hash.toLowerCase()) {
        headers.set(finalized.number, {
          number: finalized.number,
          hash: finalized.hash.toLowerCase(),
          logsBloom: held?.hash === finalized.hash.toLowerCase() ? held.logsBloom : null,
        });
      }
    }
  }
  for (const header of check.shown?.values() ?? []) {
    if (header !== null) headers.set(header.number, header);
  }
  if (toHeader !== null) headers.set(toHeader.number, toHeader);
  return headers;
}

/** A completeness verdict settled: bloom hits go to the receipts. */
async function settle(
  completeness: ReturnType<typeof completenessOf>,
  filter: LogFilter | null,
  check: AnswerCheck,
): Promise<AnswerVerdict> {
  if (completeness.kind === "complete") return USE;
  if (completeness.kind === "stale_log") {
    return missing(
      "stale_log",
      completeness.block,
      `its log of block ${quantity(completeness.block)} names block hash ${completeness.hash ?? "(none)"}, not ${completeness.expected}: it comes from another fork or a stale backend`,
    );
  }
  return tieBreak(completeness.blocks, filter as LogFilter, check);
}

/** A header asked on its own call: the block, null for none, or why no call could be made. */
async function fetchHeader(
  ask: HeaderAsk,
  check: AnswerCheck,
): Promise<BlockHeader | null | string> {
  check.checks.count(check.scope.network.name, check.slot.provider.name, "headers_asked");
  const called = await check.call(check.slot, headerCall(ask, "1"));
  if (called.kind === "no_room") return called.why;
  return called.kind === "answer" ? headerFor(ask, called.member) : null;
}
