/**
 * Judgement of one JSON-RPC error object (docs/behaviour.md §4.4): by its message,
 * its code, the summary a proxy writes into the message, and the leaves of a proxy's
 * `data.cause` chain. The code alone decides only where no phrase says otherwise.
 */

import { isRecord } from "../jsonrpc/envelope.ts";
import { methodSpec } from "../methods/catalogue.ts";
import {
  BATCH_LIMIT,
  CALLERS_FAULT,
  CHAIN_UNAVAILABLE,
  INVALID_REQUEST,
  METHOD_UNSUPPORTED,
  PERMANENT_UNCLASSIFIED,
  PRE_CHECK_FAILURE,
  QUOTA,
  RATE_LIMIT,
  RAW_TRANSACTION_REFUSED,
  SOFT_TRANSIENT,
  TIMEOUT,
  TRANSIENT_PHRASES,
} from "./classify-patterns.ts";
import { oldestNamedIn, PRUNED_HISTORY, PRUNED_HISTORY_CODE } from "./pruned-history.ts";
import type { CooldownReason, RetryKind, Verdict } from "./verdict.ts";

/** A verdict before its detail text is attached. */
export type Judgement =
  | { readonly outcome: "ok" }
  | { readonly outcome: "unclassified" }
  | { readonly outcome: "capability" }
  | { readonly outcome: "pruned" }
  | { readonly outcome: "retry"; readonly kind: RetryKind; readonly reason: CooldownReason };

type RetryJudgement = Extract<Judgement, { outcome: "retry" }>;

const OK: Judgement = { outcome: "ok" };
const UNCLASSIFIED: Judgement = { outcome: "unclassified" };
const CAPABILITY: Judgement = { outcome: "capability" };
const PRUNED: Judgement = { outcome: "pruned" };
const retry = (kind: RetryKind, reason: CooldownReason): RetryJudgement => ({
  outcome: "retry",
  kind,
  reason,
});
const TRANSIENT = retry("transient", "transient");
const RATE_LIMITED = retry("rate_limit", "rate_limit");
const QUOTA_EXCEEDED = retry("rate_limit", "quota");
const BATCH_LIMITED = retry("rate_limit", "batch_limit");
const CHAIN_NOT_SERVED = retry("capability", "chain_unavailable");
const TIMED_OUT = retry("timeout", "timeout");

interface ErrorFacts {
  readonly code: number | undefined;
  readonly message: string;
  readonly method: string;
  /** What the caller wrote into the call (its params as JSON text), in lower case. */
  readonly written: string;
}

const RATE_LIMIT_CODES = [-32005, -32429, 429];
const REQUEST_BLAMING_CODES = [-32700, -32600, -32602];
const METHOD_NOT_FOUND_CODE = -32601;

interface ErrorRule {
  readonly applies: (facts: ErrorFacts) => boolean;
  readonly judgement: Judgement;
}

const said =
  (pattern: RegExp) =>
  (facts: ErrorFacts): boolean =>
    saysItself(pattern, facts);

/**
 * The message matches `pattern`, whoever wrote the words. For the rules that clear the provider
 * (the caller's fault, pruned state): an echo of the caller's words is about the caller's call,
 * and ignoring it let a caller writing "reverted" into a field nodes ignore have its own revert
 * reason ("execution reverted: rate limit exceeded") read as the provider's rate limit.
 */
const reads =
  (pattern: RegExp) =>
  (facts: ErrorFacts): boolean =>
    pattern.test(facts.message);

/**
 * The message matches `pattern` in words that are the node's own, not words the caller wrote:
 * nodes echo a bad param back ('invalid value: string "batch too large"'), and a tracer's
 * error is the caller's own code. Read as the node's, such an echo let any caller teach every
 * provider a batch limit of 1, or get a lone provider blacklisted as rate limited.
 */
function saysItself(pattern: RegExp, facts: ErrorFacts): boolean {
  if (facts.written === "") return pattern.test(facts.message);
  const everywhere = new RegExp(pattern.source, `${pattern.flags}g`);
  for (const match of facts.message.matchAll(everywhere)) {
    if (!facts.written.includes(match[0].toLowerCase())) return true;
  }
  return false;
}
const coded =
  (...codes: number[]) =>
  (facts: ErrorFacts): boolean =>
    facts.code !== undefined && codes.includes(facts.code);

/** First match wins; the order settles every overlap between the tables. */
const ERROR_RULES: readonly ErrorRule[] = [
  {
    applies: (facts) =>
      methodSpec(facts.method).tracesMinedBlock && saysItself(PRE_CHECK_FAILURE, facts),
    judgement: TRANSIENT,
  },
  { applies: reads(CALLERS_FAULT), judgement: OK },
  {
    applies: (facts) =>
      facts.method === "eth_sendRawTransaction" && RAW_TRANSACTION_REFUSED.test(facts.message),
    judgement: OK,
  },
  // Pruned history in the node's own words, or EIP-4444's code: another provider may keep it.
  {
    applies: (facts) => said(PRUNED_HISTORY)(facts) || coded(PRUNED_HISTORY_CODE)(facts),
    judgement: PRUNED,
  },
  // The same words the caller wrote (a param echoed back): the caller's answer, teaching nothing.
  { applies: reads(PRUNED_HISTORY), judgement: OK },
  { applies: said(PERMANENT_UNCLASSIFIED), judgement: UNCLASSIFIED },
  { applies: said(CHAIN_UNAVAILABLE), judgement: CHAIN_NOT_SERVED },
  { applies: said(METHOD_UNSUPPORTED), judgement: CAPABILITY },
  { applies: said(BATCH_LIMIT), judgement: BATCH_LIMITED },
  { applies: said(QUOTA), judgement: QUOTA_EXCEEDED },
  {
    applies: (facts) => saysItself(RATE_LIMIT, facts) || coded(...RATE_LIMIT_CODES)(facts),
    judgement: RATE_LIMITED,
  },
  { applies: said(TRANSIENT_PHRASES), judgement: TRANSIENT },
  { applies: said(TIMEOUT), judgement: TIMED_OUT },
  {
    applies: (facts) => reads(INVALID_REQUEST)(facts) || coded(...REQUEST_BLAMING_CODES)(facts),
    judgement: OK,
  },
  { applies: said(SOFT_TRANSIENT), judgement: TRANSIENT },
  { applies: coded(METHOD_NOT_FOUND_CODE), judgement: CAPABILITY },
];

function matchRules(facts: ErrorFacts): Judgement | undefined {
  const spoken = { ...facts, message: withoutMethodName(facts.message, facts.method) };
  return ERROR_RULES.find((rule) => rule.applies(spoken))?.judgement;
}

/**
 * The message with the call's method name taken out: the caller chose it, and nodes echo it
 * ("the method network-x does not exist/is not available"), so its words could join the node's
 * into a phrase (that one read as "network … not available", a 24 h blacklist).
 */
function withoutMethodName(message: string, method: string): string {
  if (method === "") return message;
  return message.replace(new RegExp(method.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"), "…");
}

// ---- proxy summaries ("all upstream attempts failed (1 upstream unsupported method, …)")

/** `null`: the cause says nothing about this request (a hedge cancelled, a skipped upstream). */
const SUMMARY_CAUSES: ReadonlyMap<string, Judgement | null> = new Map<string, Judgement | null>([
  ["upstream unsupported method", CAPABILITY],
  ["upstream method ignored", CAPABILITY],
  ["upstream too large complaints", OK],
  ["user errors", OK],
  ["upstream unauthorized", UNCLASSIFIED],
  ["upstream billing issues", UNCLASSIFIED],
  ["upstream missing data", TRANSIENT],
  ["upstream timeout", TRANSIENT],
  ["upstream rate limited", RATE_LIMITED],
  ["upstream circuit breaker open", TRANSIENT],
  ["upstream transport errors", TRANSIENT],
  ["upstream not synced", TRANSIENT],
  ["upstream validation mismatch", TRANSIENT],
  ["upstream excluded by policy", null],
  ["upstream skipped", null],
  ["hedges cancelled", null],
]);
const SUMMARY_ITEM = /\b\d+ ((?:upstream|node|hedges|user) [a-z ]*[a-z])/gi;

function judgeSummary(message: string): Judgement | undefined {
  const causes: Array<Judgement | undefined> = [];
  for (const [, phrase = ""] of message.matchAll(SUMMARY_ITEM)) {
    const judgement = SUMMARY_CAUSES.get(phrase.toLowerCase());
    if (judgement !== null) causes.push(judgement);
  }
  return combine(causes);
}

// ---- proxy cause chains (eRPC `data: {code, message?, details?, cause?}`)

type CauseNode = Readonly<Record<string, unknown>> & { readonly code: string };

/** `null`: a node that says nothing about the request; absent: judged by its message. */
const LEAF_CODES: ReadonlyMap<string, Judgement | null> = new Map<string, Judgement | null>([
  ["ErrEndpointCapacityExceeded", RATE_LIMITED],
  ["ErrUpstreamRateLimitRuleExceeded", RATE_LIMITED],
  ["ErrUpstreamBlockUnavailable", TRANSIENT],
  ["ErrFinalizedBlockUnavailable", TRANSIENT],
  ["ErrEndpointMissingData", TRANSIENT],
  ["ErrEndpointTransportFailure", TRANSIENT],
  ["ErrEndpointRequestTimeout", TRANSIENT],
  ["ErrNetworkRequestTimeout", TRANSIENT],
  ["ErrFailsafeTimeoutExceeded", TRANSIENT],
  ["ErrFailsafeCircuitBreakerOpen", TRANSIENT],
  ["ErrUpstreamSyncing", TRANSIENT],
  // Exhaustion or spent retries with no cause recorded below them.
  ["ErrUpstreamsExhausted", TRANSIENT],
  ["ErrFailsafeRetryExceeded", TRANSIENT],
  ["ErrEndpointUnsupported", CAPABILITY],
  ["ErrUpstreamMethodIgnored", CAPABILITY],
  ["ErrEndpointUnauthorized", UNCLASSIFIED],
  ["ErrEndpointBillingIssue", UNCLASSIFIED],
  ["ErrEndpointRequestTooLarge", OK],
  ["ErrUpstreamGetLogsExceededMaxAllowedRange", OK],
  ["ErrUpstreamGetLogsExceededMaxAllowedAddresses", OK],
  ["ErrUpstreamGetLogsExceededMaxAllowedTopics", OK],
  ["ErrJsonRpcRequestUnmarshal", OK],
  ["ErrInvalidRequest", OK],
  ["ErrUpstreamHedgeCancelled", null],
  ["ErrUpstreamRequestSkipped", null],
  ["ErrUpstreamExcludedByPolicy", null],
  ["ErrUpstreamShadowing", null],
  ["ErrUpstreamNotAllowed", null],
]);
/** Leaf codes judged by their message, with a fallback when no phrase decides. */
const LEAF_FALLBACKS: ReadonlyMap<string, Judgement> = new Map<string, Judgement>([
  ["ErrEndpointClientSideException", OK],
]);
const MAX_CAUSE_DEPTH = 8;
const MAX_LEAVES = 32;

function isCauseNode(value: unknown): value is CauseNode {
  return isRecord(value) && typeof value.code === "string";
}

function childrenOf(node: CauseNode): CauseNode[] {
  const cause = node.cause;
  return (Array.isArray(cause) ? cause : [cause]).filter(isCauseNode);
}

function collectLeaves(node: CauseNode, depth: number, leaves: CauseNode[]): void {
  if (leaves.length >= MAX_LEAVES) return;
  if (LEAF_CODES.get(node.code) === null) return;
  const children = childrenOf(node);
  if (children.length === 0 || depth >= MAX_CAUSE_DEPTH) {
    leaves.push(node);
    return;
  }
  for (const child of children) collectLeaves(child, depth + 1, leaves);
}

function judgeLeaf(leaf: CauseNode, method: string): Judgement | undefined {
  const byCode = LEAF_CODES.get(leaf.code);
  if (byCode) return byCode;
  const message = typeof leaf.message === "string" ? leaf.message : "";
  const details = isRecord(leaf.details) ? leaf.details : {};
  const code = numericCode(details.originalCode);
  return matchRules({ code, message, method, written: "" }) ?? LEAF_FALLBACKS.get(leaf.code);
}

/** Judged by the leaves, never by the wrapper: every leaf transient, or one permanent. */
function judgeCauseChain(data: unknown, method: string): Judgement | undefined {
  if (!isCauseNode(data)) return undefined;
  const leaves: CauseNode[] = [];
  collectLeaves(data, 0, leaves);
  return combine(leaves.map((leaf) => judgeLeaf(leaf, method)));
}

// ---- combining several causes

// When causes disagree the request itself is the likeliest culprit, then the method.
const PERMANENT_PRECEDENCE: readonly Judgement["outcome"][] = ["ok", "capability", "unclassified"];

/**
 * `undefined` in `causes` is a cause nothing decides; it keeps the whole from being transient.
 * Pruned history is the whole's only when every cause says so.
 */
function combine(given: ReadonlyArray<Judgement | undefined>): Judgement | undefined {
  if (given.length === 0) return undefined;
  if (given.every((cause) => cause?.outcome === "pruned")) return PRUNED;
  const causes = given.map((cause) => (cause?.outcome === "pruned" ? undefined : cause));
  const permanent = firstPermanent(causes);
  if (permanent) return permanent;
  if (causes.some((cause) => cause === undefined)) return undefined;
  const { kind, reason } = mergeRetries(causes as RetryJudgement[]);
  return retry(kind, reason);
}

function firstPermanent(causes: ReadonlyArray<Judgement | undefined>): Judgement | undefined {
  for (const outcome of PERMANENT_PRECEDENCE) {
    const found = causes.find((cause) => cause?.outcome === outcome);
    if (found) return found;
  }
  return undefined;
}

/** How a retried attempt is counted (kind) and what it costs the provider (reason). */
export interface Penalty {
  readonly kind: RetryKind;
  readonly reason: CooldownReason;
}

/** One kind and reason when all agree, else the generic transient. */
export function mergeRetries(retries: readonly Penalty[]): Penalty {
  const [first] = retries;
  const agree =
    first !== undefined &&
    retries.every((each) => each.kind === first.kind && each.reason === first.reason);
  return agree ? { kind: first.kind, reason: first.reason } : TRANSIENT;
}

// ---- entry point

const DETAIL_LIMIT = 200;

/**
 * The verdict on one JSON-RPC `error` value answering a call of `method`; `written` is what
 * the caller wrote into the call (its params as JSON text), whose words an error may echo.
 */
export function judgeRpcError(error: unknown, method: string, written = ""): Verdict {
  const facts = errorFacts(error, method, written.toLowerCase());
  const data = isRecord(error) ? error.data : undefined;
  const detail = detailOf(facts);
  const judgement = judgeFacts(facts, data) ?? UNCLASSIFIED;
  switch (judgement.outcome) {
    case "ok":
      return { outcome: "ok" };
    case "retry":
      return { outcome: "retry", kind: judgement.kind, reason: judgement.reason, detail };
    case "pruned": {
      const oldest = oldestNamedIn(withoutMethodName(facts.message, facts.method));
      return oldest === null
        ? { outcome: "pruned", detail }
        : { outcome: "pruned", detail, oldest };
    }
    default:
      return { outcome: judgement.outcome, detail };
  }
}

function judgeFacts(facts: ErrorFacts, data: unknown): Judgement | undefined {
  const fromCauses = judgeCauseChain(data, facts.method);
  const fromSummary = judgeSummary(facts.message);
  const permanent = firstPermanent([fromCauses, fromSummary]);
  if (permanent) return permanent;
  return fromCauses ?? fromSummary ?? matchRules(facts);
}

function errorFacts(error: unknown, method: string, written: string): ErrorFacts {
  if (typeof error === "string") return { code: undefined, message: error, method, written };
  if (!isRecord(error)) return { code: undefined, message: "", method, written };
  const message = typeof error.message === "string" ? error.message : "";
  return { code: numericCode(error.code), message, method, written };
}

function numericCode(code: unknown): number | undefined {
  if (typeof code === "number" && Number.isInteger(code)) return code;
  if (typeof code === "string" && /^-?\d+$/.test(code)) return Number(code);
  return undefined;
}

function detailOf(facts: ErrorFacts): string {
  const text = `${facts.code ?? "no code"}: ${facts.message.replace(/\s+/g, " ").trim()}`;
  return text.length > DETAIL_LIMIT ? `${text.slice(0, DETAIL_LIMIT - 1)}…` : text;
}
