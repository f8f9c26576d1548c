/**
 * The classifier: what one upstream attempt ended in (docs/behaviour.md §4). Pure; the gateway calls
 * classifyTransport when no status line came back, else classifyHttp on the whole answer
 * and, when that says "members", classifyMember on each JSON-RPC response object in it.
 */

import { type Envelope, errorOf, isEnvelope, isJsonRpcAnswer } from "../jsonrpc/envelope.ts";
import { blockRefOf } from "../methods/block-ref.ts";
import { methodSpec } from "../methods/catalogue.ts";
import { FILTER_BY_ID } from "../methods/filters.ts";
import { judgeRpcError, mergeRetries, type Penalty } from "./classify-error.ts";
import {
  BATCH_LIMIT,
  CHAIN_UNAVAILABLE,
  FORBIDDEN,
  LAGGING_BACKEND,
  QUOTA,
  RANGE_BEYOND_HEAD,
  RATE_LIMIT,
} from "./classify-patterns.ts";
import { judgeResult } from "./classify-result.ts";
import { claimsRecentHistoryPruned } from "./pruned-claims.ts";
import type { CallInfo, ClassifyContext, TransportFailure, Verdict } from "./verdict.ts";

type RetryVerdict = Extract<Verdict, { outcome: "retry" }>;

const isRetry = (verdict: Verdict): verdict is RetryVerdict => verdict.outcome === "retry";

const retry = ({ kind, reason }: Penalty, detail: string): RetryVerdict => ({
  outcome: "retry",
  kind,
  reason,
  detail,
});

const TRANSPORT_PENALTIES: Readonly<Record<TransportFailure["kind"], Penalty>> = {
  timeout: { kind: "timeout", reason: "timeout" },
  connection: { kind: "connection", reason: "connection" },
  tls: { kind: "connection", reason: "tls" },
};

/** `kind: text`, unless the text already starts with its kind (transport messages do). */
export function withKind(kind: string, text: string): string {
  return text.startsWith(`${kind}: `) ? text : `${kind}: ${text}`;
}

/** A failure below HTTP (connect refused/reset, TLS, timeout). */
export function classifyTransport(failure: TransportFailure): RetryVerdict {
  return retry(TRANSPORT_PENALTIES[failure.kind], withKind(failure.kind, failure.message));
}

const BROKEN_ANSWER: Penalty = { kind: "http", reason: "transient" };
const SERVER_ERROR: Penalty = { kind: "http", reason: "connection" };
const REFUSED: Penalty = { kind: "http", reason: "forbidden" };
/** A redirect or an edge's 404 page: often brief (a deploy, a load balancer), so not 24 h. */
const MISROUTED: Penalty = { kind: "http", reason: "redirect" };
/** A 413 answering a batch: the batch is too large for the provider, so it gets halves. */
const BATCH_TOO_LARGE: Penalty = { kind: "http", reason: "batch_limit" };

/** Statuses retried whatever the body says (a 502 even with a JSON-RPC body). */
const RETRIED_STATUSES: ReadonlyMap<number, Penalty> = new Map<number, Penalty>([
  [408, { kind: "http", reason: "timeout" }],
  [429, { kind: "rate_limit", reason: "rate_limit" }],
  [502, SERVER_ERROR],
  [503, SERVER_ERROR],
  [504, { kind: "timeout", reason: "timeout" }],
  [520, SERVER_ERROR],
  [521, SERVER_ERROR],
  [522, { kind: "http", reason: "timeout" }],
  [523, SERVER_ERROR],
  [524, { kind: "timeout", reason: "timeout" }],
]);

/**
 * A bare body (an error page, a proxy's error object) may still say why it failed; only
 * its start is read. Credentials are trusted to a refusal only below 500, where the
 * server, not a crashed backend, is speaking.
 */
const HINT_WINDOW = 1024;
const BODY_HINTS: ReadonlyArray<{ readonly pattern: RegExp; readonly penalty: Penalty }> = [
  // Before rate limits: "too many requests in a batch" is about the batch, not the rate.
  { pattern: BATCH_LIMIT, penalty: { kind: "rate_limit", reason: "batch_limit" } },
  { pattern: QUOTA, penalty: { kind: "rate_limit", reason: "quota" } },
  { pattern: RATE_LIMIT, penalty: { kind: "rate_limit", reason: "rate_limit" } },
  { pattern: CHAIN_UNAVAILABLE, penalty: { kind: "capability", reason: "chain_unavailable" } },
];

function bodyHint(status: number, body: string): Penalty | undefined {
  const start = body.slice(0, HINT_WINDOW);
  const hint = BODY_HINTS.find(({ pattern }) => pattern.test(start))?.penalty;
  if (hint) return hint;
  return status < 500 && FORBIDDEN.test(start) ? REFUSED : undefined;
}

/**
 * The HTTP-level judgement of one upstream answer. `parsed` is JSON.parse(body) or undefined when the
 * body is not JSON. Returns a Verdict for the whole answer when the HTTP status/body decides it
 * (e.g. 429, 502, 520 HTML page, a 500 whose body is not a JSON-RPC answer or whose errors are all transient,
 * a 200 whose body is not a JSON-RPC answer, a 401/403), or "members" when each JSON-RPC response object in the body
 * must be judged on its own with classifyMember.
 */
export function classifyHttp(
  status: number,
  body: string,
  parsed: unknown,
  calls: readonly CallInfo[],
): Verdict | "members" {
  const label = `HTTP ${status}`;
  // Infura answers archive state its plan lacks with a 403 and a JSON-RPC error: the body says.
  if ((status === 401 || status === 403) && refusesHistoryOnly(parsed, calls)) return "members";
  if (status === 401 || status === 403) return retry(REFUSED, label);
  const fixed = RETRIED_STATUSES.get(status);
  if (fixed) return retry(bodyHint(status, body) ?? fixed, label);
  if (status === 413 && calls.length > 1) return retry(BATCH_TOO_LARGE, label);
  const answer = isJsonRpcAnswer(parsed);
  if (status === 500) {
    return answer
      ? judgeFailedAnswer(parsed, calls)
      : retry(bodyHint(status, body) ?? BROKEN_ANSWER, `${label}: not a JSON-RPC answer`);
  }
  if (status > 500 || status < 200) return retry(bodyHint(status, body) ?? SERVER_ERROR, label);
  if (status >= 300 && status < 400) return retry(MISROUTED, label);
  if (answer) return judgeAnswer(parsed, calls);
  if (status < 300) {
    return retry(bodyHint(status, body) ?? BROKEN_ANSWER, `${label}: not a JSON-RPC answer`);
  }
  if (status === 404) return retry(MISROUTED, `${label}: not a JSON-RPC answer`);
  // Any other answer that is not JSON-RPC (a 400 text page, a 405 HTML page) is the
  // provider's failure: never spliced into an answer for the caller.
  return retry(bodyHint(status, body) ?? BROKEN_ANSWER, `${label}: ${snippet(body)}`);
}

/** A call that stands for a batch: its method when all calls share one, else none. */
function batchCall(calls: readonly CallInfo[]): CallInfo {
  const [first] = calls;
  const shared = first !== undefined && calls.every((call) => call.method === first.method);
  return shared ? first : { method: "", params: [] };
}

/** What the caller wrote into the calls (their params), which an error may echo. */
function writtenIn(calls: readonly CallInfo[]): string {
  return calls.map((call) => JSON.stringify(call.params ?? null)).join("\n");
}

/** A tracer given as code, not a built-in's name such as "callTracer". */
const TRACER_CODE = /"tracer":"[^"]*[^\w"]/;

/**
 * The words of `error`, answering one call, that the caller wrote or had written: all of them
 * when the call carries a JS tracer, whose error is the caller's code's and may build any
 * words at run time ("rate " + "limit"), so only the error's code is the node's.
 */
function callersWords(call: CallInfo, error: unknown): string {
  const written = writtenIn([call]);
  return TRACER_CODE.test(written) ? `${written}\n${errorMessage(error)}` : written;
}

/** A JSON-RPC answer with a status that does not decide: its members are judged one by one. */
function judgeAnswer(parsed: unknown, calls: readonly CallInfo[]): Verdict | "members" {
  if (calls.length > 1 && isEnvelope(parsed)) return judgeWholeBatch(parsed, calls);
  return "members";
}

/** One envelope in answer to a batch: an error for the whole batch, or a broken answer. */
function judgeWholeBatch(envelope: Envelope, calls: readonly CallInfo[]): Verdict {
  const error = errorOf(envelope);
  if (error === undefined) return retry(BROKEN_ANSWER, "a single result answered a batch");
  const call = batchCall(calls);
  const verdict = judgeRpcError(error, call.method, writtenIn(calls));
  // A per-method blacklist needs the method; a batch of several names none.
  if (verdict.outcome === "capability" && call.method === "") {
    return { outcome: "unclassified", detail: verdict.detail };
  }
  return verdict;
}

/** A JSON-RPC answer whose every member is an error saying the history asked for is pruned. */
function refusesHistoryOnly(parsed: unknown, calls: readonly CallInfo[]): boolean {
  if (!isJsonRpcAnswer(parsed)) return false;
  const members = (Array.isArray(parsed) ? parsed : [parsed]).filter(isEnvelope);
  const method = batchCall(calls).method;
  return members.every((member) => {
    const error = errorOf(member);
    return (
      error !== undefined && judgeRpcError(error, method, writtenIn(calls)).outcome === "pruned"
    );
  });
}

/** HTTP 500 with a JSON-RPC body: retried when every error in it is transient. */
function judgeFailedAnswer(parsed: unknown, calls: readonly CallInfo[]): Verdict | "members" {
  if (calls.length > 1 && isEnvelope(parsed)) return judgeWholeBatch(parsed, calls);
  const members = (Array.isArray(parsed) ? parsed : [parsed]).filter(isEnvelope);
  const method = batchCall(calls).method;
  const verdicts = members.flatMap((member) => {
    const error = errorOf(member);
    return error === undefined ? [] : [judgeRpcError(error, method, writtenIn(calls))];
  });
  const retries = verdicts.filter(isRetry);
  if (verdicts.length === 0 || retries.length < verdicts.length) return "members";
  const details = [...new Set(retries.map((verdict) => verdict.detail))].join("; ");
  return retry(mergeRetries(retries), `HTTP 500: ${details}`);
}

/** One JSON-RPC response object (already parsed) answering `call`. */
export function classifyMember(
  response: unknown,
  call: CallInfo,
  context: ClassifyContext,
): Verdict {
  if (!isEnvelope(response)) return retry(BROKEN_ANSWER, "not a JSON-RPC response object");
  const error = errorOf(response);
  if (error === undefined) return judgeResult(response.result, call, context);
  if (FILTER_BY_ID.has(call.method) && FILTER_NOT_HELD.test(errorMessage(error))) {
    return {
      outcome: "inner_error",
      detail: "filter not held by this provider (it lives on the one that installed it)",
    };
  }
  const verdict = judgeRpcError(error, call.method, callersWords(call, error));
  if (verdict.outcome === "pruned" && claimsRecentHistoryPruned(call, context.quorumHead)) {
    return retry(
      NO_RESULT,
      `pruned history claimed for a block every node keeps (${verdict.detail})`,
    );
  }
  if (verdict.outcome === "unclassified" && unknownByHash(error, call)) {
    return {
      outcome: "behind",
      detail: `no such hash here (${verdict.detail})`,
      unknownHash: true,
    };
  }
  if (verdict.outcome === "ok" && refusesKnownRange(error, call, context.quorumHead)) {
    return { outcome: "behind", detail: "log range beyond its head, within the known head" };
  }
  // "Header not found" and its kin: the node has not reached the block yet (docs/behaviour.md §10).
  if (
    verdict.outcome === "retry" &&
    verdict.reason === "transient" &&
    LAGGING_BACKEND.test(verdict.detail)
  ) {
    return { outcome: "behind", detail: verdict.detail };
  }
  return verdict;
}

const NO_RESULT: Penalty = { kind: "no_result", reason: "transient" };

/**
 * geth, reth and anvil "filter not found", Nethermind "Filter with id: 5 does not exist". A
 * filter lives on the one provider that installed it: another provider's "not found" is no
 * fault of its own and no answer for the caller while the provider holding it may still be
 * asked (the call goes on as an inner error does: the next provider, else this answer, no
 * penalty). Nothing was consumed, so asking the next one is safe.
 */
const FILTER_NOT_HELD = /\bfilter not found\b|\bfilter\b[^.]{0,40}\b(does not exist|not found)\b/i;

/** An error object's message, or "" when it has none. */
function errorMessage(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : "";
}

/** A node's words for a hash it does not know (anvil's generic "Resource not found" too). */
const NOT_FOUND = /\bnot found\b|\bdoes not exist\b|\bunknown (block|transaction|hash)\b/i;

/**
 * "Not found" about a block or transaction the call names by hash: the provider does not know
 * it, not yet (a block just mined elsewhere) or never (a made-up hash). Like a provider behind,
 * the next one is asked and nobody gets a strike; when none knows it the caller gets the node's
 * answer. Counted as an unclassified error instead, a caller asking three times about a made-up
 * hash would force-rotate a healthy provider away.
 */
function unknownByHash(error: unknown, call: CallInfo): boolean {
  const namesHash =
    methodSpec(call.method).hashKeyed !== null ||
    blockRefOf(call.method, call.params)?.kind === "hash";
  return namesHash && NOT_FOUND.test(errorMessage(error));
}

/**
 * geth's "block range extends beyond current head block" about a log range the known head
 * covers: a `toBlock` the gateway pinned to the served head (or one a caller was told exists)
 * met a provider a block behind, and the next provider takes the query. Beyond the known head
 * it is the caller's answer, passed on as is.
 */
function refusesKnownRange(error: unknown, call: CallInfo, quorumHead: number | null): boolean {
  if (!RANGE_BEYOND_HEAD.test(errorMessage(error))) return false;
  const block = blockRefOf(call.method, call.params);
  return (
    block?.kind === "range" &&
    block.to.kind === "number" &&
    quorumHead !== null &&
    block.to.number <= quorumHead
  );
}

const INNER_ERROR_WINDOW_BYTES = 1024;
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();
const NON_ASCII = /[\u0080-\uffff]/;

/** The first configured inner_errors substring found in the first 1024 bytes (UTF-8) of the body, or null. */
export function findInnerError(body: string, innerErrors: readonly string[]): string | null {
  // Runs on every answer: with none configured (the default) there is nothing to look at.
  if (innerErrors.length === 0) return null;
  // No character is shorter than a byte, so 1024 characters hold the whole window; ASCII
  // text is one byte a character, so it is the window as it is.
  const head = body.slice(0, INNER_ERROR_WINDOW_BYTES);
  const window = NON_ASCII.test(head)
    ? utf8Decoder.decode(utf8Encoder.encode(head).subarray(0, INNER_ERROR_WINDOW_BYTES))
    : head;
  return innerErrors.find((needle) => needle.length > 0 && window.includes(needle)) ?? null;
}

const SNIPPET_LIMIT = 120;

function snippet(body: string): string {
  const text = body
    .slice(0, SNIPPET_LIMIT * 2)
    .replace(/\s+/g, " ")
    .trim();
  return text.length > SNIPPET_LIMIT ? `${text.slice(0, SNIPPET_LIMIT)}…` : text || "(empty body)";
}
