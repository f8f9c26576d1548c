import {
  classifyHttp,
  classifyMember,
  classifyTransport,
  findInnerError,
} from "../../classify/classify.ts";
import { requestedCooldownMs } from "../../classify/retry-after.ts";
import type { CallInfo, Verdict } from "../../classify/verdict.ts";
import { arrayElementSpans, parseJsonOrUndefined, withId } from "../../jsonrpc/json-raw.ts";
import { ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import type { UpstreamResult } from "../../ports.ts";
import type { FailureVerdict, OpenCall } from "../vocabulary.ts";
import { nodesReadId } from "./plan.ts";

export function isRetryVerdict(verdict: Verdict): verdict is FailureVerdict {
  return (
    verdict.outcome === "retry" ||
    verdict.outcome === "capability" ||
    verdict.outcome === "behind" ||
    verdict.outcome === "pruned"
  );
}

/** What one attempt means for one of its calls. */
export type CallOutcome =
  /** Final: the text goes back to the caller (its id restored later); `member`: it parsed. */
  | { readonly kind: "answer"; readonly text: string; readonly member?: unknown }
  /** A configured inner error: kept, and the call tries the next provider while it can. */
  | { readonly kind: "inner_error"; readonly text: string; readonly detail: string }
  /**
   * The provider failed the call: next provider. An upstream JSON-RPC error answer is kept as
   * `errorAnswer` (handed back as is if every provider fails); a null or garbage result never
   * is, since it may be stale.
   */
  | {
      readonly kind: "retry";
      readonly verdict: FailureVerdict;
      readonly errorAnswer: string | null;
    };

export interface AttemptJudgement {
  /** One outcome per call, in the order of the attempt's calls. */
  readonly outcomes: readonly CallOutcome[];
  /** The verdict the provider earns for the answers it gave, if it gave any. */
  readonly success: Verdict | null;
  /** The first failure among the calls: the one incident recorded against the provider. */
  readonly failure: FailureVerdict | null;
  /** Calls answered well, with their answer: heads they show keep known heads fresh. */
  readonly okAnswers: ReadonlyArray<{ readonly info: CallInfo; readonly member: unknown }>;
}

export interface JudgeContext {
  /** The highest block known to exist: a null block at or below it is stale. */
  readonly quorumHead: number | null;
  readonly chainId: number;
  readonly innerErrors: readonly string[];
  /** For an HTTP-date `Retry-After`. */
  readonly now: number;
  /** Whether some provider may serve the method: else "method not found" is the answer. */
  readonly servable: (method: string) => boolean;
  /** How far under the served head an `eth_blockNumber` may be before it is `behind`. */
  readonly headToleranceBlocks: number;
  /** The caller sent one call, not a batch: it goes upstream with the caller's id when nodes read it. */
  readonly requestSingle: boolean;
}

/**
 * What one upstream attempt means, per call and for the provider (docs/behaviour.md §4).
 * Pure: the result, the calls and the context in, outcomes out.
 */
export function judgeAttempt(
  result: UpstreamResult,
  calls: readonly OpenCall[],
  single: boolean,
  context: JudgeContext,
): AttemptJudgement {
  if (!result.ok) {
    if ("tooLarge" in result) {
      const message = `response too large: the upstream answer is over the limit of ${result.limit} bytes (max_response_bytes); ask for less, e.g. a smaller block range`;
      return {
        outcomes: calls.map((entry) => ({
          kind: "answer",
          // geth's code for it: no client retries an answer that can only be asked smaller.
          text: errorResponse(entry.call.rawId ?? "null", ErrorCode.responseTooLarge, message),
        })),
        success: null,
        failure: null,
        okAnswers: [],
      };
    }
    return failedWhole(calls, classifyTransport(result.failure));
  }
  const [only] = calls;
  if (single && only?.call.rawId === null && result.status >= 200 && result.status < 300) {
    // A notification: whatever the upstream sent (often 204 and no body) is no answer to judge.
    return { outcomes: [{ kind: "answer", text: "" }], success: OK, failure: null, okAnswers: [] };
  }
  const parsed = parseJsonOrUndefined(result.body);
  const whole = classifyHttp(
    result.status,
    result.body,
    parsed,
    calls.map((entry) => entry.info),
  );
  if (whole !== "members" && isRetryVerdict(whole)) {
    return failedWhole(calls, withRetryAfter(whole, result.status, result.retryAfter, context.now));
  }
  if (whole !== "members" && (single || isObjectText(result.body))) {
    // An answer for the request as a whole (e.g. one error object for a batch).
    return {
      outcomes: calls.map((entry) =>
        settled(
          whole,
          single ? result.body : withId(result.body, String(entry.call.position)),
          context,
        ),
      ),
      success: whole,
      failure: null,
      okAnswers: [],
    };
  }
  return judgeMembers(result.body, parsed, calls, single, context);
}

const OK: Verdict = { outcome: "ok" };

function withRetryAfter(
  verdict: FailureVerdict,
  status: number,
  header: string | undefined,
  now: number,
): FailureVerdict {
  if (verdict.outcome !== "retry") return verdict;
  const requested = requestedCooldownMs(status, header, now);
  return requested === null ? verdict : { ...verdict, retryAfterMs: requested };
}

/** A single call goes upstream with the caller's id: an answer with another one is not its. */
const ANOTHER_REQUESTS_ANSWER: FailureVerdict = {
  outcome: "retry",
  kind: "transient",
  reason: "transient",
  detail: "the answer carries another request's id",
};

/**
 * Whether a single call's answer names another id than the one it went with (null names
 * none): the caller's, or its position when it went with that (a batch member on its own, an
 * id nodes may not read). Sent with the caller's id, an answer naming its position (0) is
 * another request's.
 */
function answersAnotherRequest(
  member: unknown,
  call: OpenCall["call"],
  requestSingle: boolean,
): boolean {
  if (call.rawId === null || typeof member !== "object" || member === null) return false;
  const id = (member as { id?: unknown }).id;
  if (id === null || id === undefined) return false;
  if (id === call.position && !(requestSingle && nodesReadId(call.rawId))) return false;
  try {
    return id !== JSON.parse(call.rawId);
  } catch {
    return false;
  }
}

const MISSING_FROM_BATCH: FailureVerdict = {
  outcome: "retry",
  kind: "transient",
  reason: "transient",
  detail: "call missing from the batch answer",
};

function failedWhole(calls: readonly OpenCall[], verdict: FailureVerdict): AttemptJudgement {
  return {
    outcomes: calls.map(() => ({ kind: "retry", verdict, errorAnswer: null })),
    success: null,
    failure: verdict,
    okAnswers: [],
  };
}

/** Each JSON-RPC response object judged on its own, for the call it answers. */
function judgeMembers(
  body: string,
  parsed: unknown,
  calls: readonly OpenCall[],
  single: boolean,
  context: JudgeContext,
): AttemptJudgement {
  const texts = single ? new Map<number, string>() : memberTexts(body, parsed);
  const outcomes: CallOutcome[] = [];
  const okAnswers: Array<{ info: CallInfo; member: unknown }> = [];
  let success: Verdict | null = null;
  let failure: FailureVerdict | null = null;
  for (const entry of calls) {
    const text = single ? body : (texts.get(entry.call.position) ?? null);
    if (text === null) {
      failure ??= MISSING_FROM_BATCH;
      outcomes.push({ kind: "retry", verdict: MISSING_FROM_BATCH, errorAnswer: null });
      continue;
    }
    const member = single ? parsed : parseJsonOrUndefined(text);
    if (single && answersAnotherRequest(member, entry.call, context.requestSingle)) {
      failure ??= ANOTHER_REQUESTS_ANSWER;
      outcomes.push({ kind: "retry", verdict: ANOTHER_REQUESTS_ANSWER, errorAnswer: null });
      continue;
    }
    const verdict = classifyMember(member, entry.info, {
      quorumHead: context.quorumHead,
      chainId: context.chainId,
      headToleranceBlocks: context.headToleranceBlocks,
    });
    if (verdict.outcome === "capability" && !context.servable(entry.info.method)) {
      // A name no provider is known to serve: the caller's mistake, answered as is.
      success ??= OK;
      outcomes.push({ kind: "answer", text });
      continue;
    }
    if (isRetryVerdict(verdict)) {
      // Pruned history is nobody's incident: a member failing otherwise is the one recorded.
      if (failure === null || failure.outcome === "pruned") failure = verdict;
      // A pruned node's error is never the caller's answer: the gateway words its own (§16.5).
      const kept = hasErrorMember(member) && verdict.outcome !== "pruned";
      outcomes.push({ kind: "retry", verdict, errorAnswer: kept ? text : null });
      continue;
    }
    success ??= verdict;
    if (verdict.outcome === "ok") okAnswers.push({ info: entry.info, member });
    outcomes.push(settled(verdict, text, context, member));
  }
  return { outcomes, success, failure, okAnswers };
}

/** A non-retry verdict: the answer, unless a configured inner error keeps the call open. */
function settled(
  verdict: Verdict,
  text: string,
  context: JudgeContext,
  member?: unknown,
): CallOutcome {
  const inner =
    verdict.outcome === "inner_error"
      ? verdict.detail
      : verdict.outcome === "ok" || verdict.outcome === "unclassified"
        ? findInnerError(text, context.innerErrors)
        : null;
  if (inner !== null) return { kind: "inner_error", text, detail: inner };
  return member === undefined ? { kind: "answer", text } : { kind: "answer", text, member };
}

function hasErrorMember(member: unknown): boolean {
  return typeof member === "object" && member !== null && "error" in member;
}

function isObjectText(text: string): boolean {
  return text.trimStart().startsWith("{");
}

/** Raw texts of a batch answer's members, keyed by the position carried in their id. */
function memberTexts(body: string, parsed: unknown): Map<number, string> {
  const texts = new Map<number, string>();
  if (!Array.isArray(parsed)) return texts;
  const spans = arrayElementSpans(body);
  parsed.forEach((item, index) => {
    const span = spans[index];
    const id =
      typeof item === "object" && item !== null ? (item as { id?: unknown }).id : undefined;
    const position = typeof id === "number" ? id : typeof id === "string" ? Number(id) : Number.NaN;
    if (span && Number.isInteger(position) && position >= 0 && !texts.has(position)) {
      texts.set(position, body.slice(span.start, span.end));
    }
  });
  return texts;
}
