import { describe, expect, it } from "vitest";
import { judgeRpcError, mergeRetries } from "../../../functions/core/classify/classify-error.ts";
import type { Verdict } from "../../../functions/core/classify/verdict.ts";

/**
 * One JSON-RPC error object judged (docs/behaviour.md §4.4): a proxy's summary of its
 * attempts, the leaves of its cause chain (eRPC's `data.cause`), every code eRPC writes, the
 * bounds on a chain, the words a caller wrote, and the detail a verdict carries. The whole
 * answer's judgement is in classify.test.ts.
 */

type Outcome = string;
const outcome = (verdict: Verdict): Outcome =>
  verdict.outcome === "retry" ? `retry:${verdict.kind}/${verdict.reason}` : verdict.outcome;

const TRANSIENT = "retry:transient/transient";
const RATE_LIMITED = "retry:rate_limit/rate_limit";

// A message no rule reads, so only the summary or the chain decides.
const NEUTRAL = "request failed";

describe("a proxy's summary of its attempts, phrase by phrase", () => {
  const summary = (...items: string[]) => ({
    code: -32603,
    message: `all upstream attempts failed (${items.join(", ")})`,
  });
  it.each<[string, Outcome]>([
    ["upstream method ignored", "capability"],
    ["upstream too large complaints", "ok"],
    ["user errors", "ok"],
    ["upstream unauthorized", "unclassified"],
    ["upstream billing issues", "unclassified"],
    ["upstream missing data", TRANSIENT],
    ["upstream circuit breaker open", TRANSIENT],
    ["upstream transport errors", TRANSIENT],
    ["upstream not synced", TRANSIENT],
    ["upstream validation mismatch", TRANSIENT],
  ])("1 %s: %s", (phrase, expected) => {
    expect(outcome(judgeRpcError(summary(`1 ${phrase}`), "eth_call"))).toBe(expected);
  });

  it.each<[string, Outcome]>([
    // Beside a timeout, an unsupported method is the permanent cause.
    ["upstream unsupported method", "capability"],
    // Causes that say nothing about the request leave the timeout to decide.
    ["upstream excluded by policy", TRANSIENT],
    ["upstream skipped", TRANSIENT],
    ["hedges cancelled", TRANSIENT],
  ])("12 %s beside a timeout: %s", (phrase, expected) => {
    const error = summary(`12 ${phrase}`, "3 upstream timeout");
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe(expected);
  });

  it.each<[string, Outcome]>([
    // Each beside a rate limit: the phrase's own judgement, not the message's words, decides.
    ["upstream not synced", TRANSIENT],
    ["upstream billing issues", "unclassified"],
  ])("1 %s beside a rate limit: %s", (phrase, expected) => {
    const error = summary(`1 ${phrase}`, "1 upstream rate limited");
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe(expected);
  });

  it("a permanent cause in the summary beats a transient one in the chain", () => {
    const error = {
      code: -32603,
      message: "all upstream attempts failed (1 upstream unsupported method)",
      data: { code: "ErrEndpointRequestTimeout" },
    };
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe("capability");
  });

  it("a rate limit among transient causes is a transient: they disagree", () => {
    const error = summary("1 upstream rate limited", "2 upstream timeout");
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe(TRANSIENT);
    expect(outcome(judgeRpcError(summary("2 upstream rate limited"), "eth_call"))).toBe(
      RATE_LIMITED,
    );
  });
});

describe("eRPC cause chains, code by code", () => {
  const chain = (...leaves: Array<Record<string, unknown>>) => ({
    code: -32603,
    message: NEUTRAL,
    data: { code: "ErrUpstreamsExhausted", cause: leaves },
  });
  it.each<[string, Outcome]>([
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
    ["ErrUpstreamsExhausted", TRANSIENT],
    ["ErrFailsafeRetryExceeded", TRANSIENT],
    ["ErrEndpointUnsupported", "capability"],
    ["ErrUpstreamMethodIgnored", "capability"],
    ["ErrEndpointUnauthorized", "unclassified"],
    ["ErrEndpointBillingIssue", "unclassified"],
    ["ErrEndpointRequestTooLarge", "ok"],
    ["ErrUpstreamGetLogsExceededMaxAllowedRange", "ok"],
    ["ErrUpstreamGetLogsExceededMaxAllowedAddresses", "ok"],
    ["ErrUpstreamGetLogsExceededMaxAllowedTopics", "ok"],
    ["ErrJsonRpcRequestUnmarshal", "ok"],
    ["ErrInvalidRequest", "ok"],
    // Judged by its message; with none that decides, the client's side.
    ["ErrEndpointClientSideException", "ok"],
  ])("a lone %s leaf: %s", (code, expected) => {
    expect(outcome(judgeRpcError(chain({ code }), "eth_call"))).toBe(expected);
  });

  it.each([
    "ErrUpstreamHedgeCancelled",
    "ErrUpstreamRequestSkipped",
    "ErrUpstreamExcludedByPolicy",
    "ErrUpstreamShadowing",
    "ErrUpstreamNotAllowed",
  ])("%s says nothing: a timeout beside it decides, and what lies below it is not read", (code) => {
    const error = chain(
      { code, cause: { code: "ErrEndpointUnsupported" } },
      { code: "ErrEndpointRequestTimeout" },
    );
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe(TRANSIENT);
  });

  it("a billing leaf is the provider's account, whatever the message around it says", () => {
    const error = { ...chain({ code: "ErrEndpointBillingIssue" }), message: "rate limit exceeded" };
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe("unclassified");
  });

  it("a leaf nothing decides keeps the whole from being transient", () => {
    const error = chain({ code: "ErrSomethingNew" }, { code: "ErrEndpointRequestTimeout" });
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe("unclassified");
  });

  it("a leaf's message decides when its code does not, with the node's original code", () => {
    const leaf = {
      code: "ErrEndpointExecutionException",
      message: "rate limit hit",
      details: { originalCode: -32000 },
    };
    expect(outcome(judgeRpcError(chain(leaf), "eth_call"))).toBe(RATE_LIMITED);
  });

  it("a node whose code is not a string is no cause: the node above it is the leaf", () => {
    const error = chain({ code: 42, cause: { code: "ErrEndpointUnsupported" } });
    expect(outcome(judgeRpcError(error, "eth_call"))).toBe(TRANSIENT);
  });

  it("reads at most 32 leaves: a permanent cause past them is not seen", () => {
    const timeouts = Array.from({ length: 32 }, () => ({ code: "ErrEndpointRequestTimeout" }));
    const past = chain(...timeouts, { code: "ErrEndpointUnsupported" });
    expect(outcome(judgeRpcError(past, "eth_call"))).toBe(TRANSIENT);
    const within = chain(...timeouts.slice(1), { code: "ErrEndpointUnsupported" });
    expect(outcome(judgeRpcError(within, "eth_call"))).toBe("capability");
  });

  it("reads a chain 8 deep: a node there is a leaf, whatever lies below it", () => {
    const nest = (depth: number, leaf: Record<string, unknown>): Record<string, unknown> =>
      depth === 0 ? leaf : { code: "ErrUpstreamRequest", cause: nest(depth - 1, leaf) };
    const below = { code: "ErrUpstreamRequest", cause: { code: "ErrEndpointUnsupported" } };
    // The 8th level's node is judged itself (no code the tables know: not decided).
    const deep = { code: -32603, message: NEUTRAL, data: nest(8, below) };
    expect(outcome(judgeRpcError(deep, "eth_call"))).toBe("unclassified");
    const shallower = { code: -32603, message: NEUTRAL, data: nest(6, below) };
    expect(outcome(judgeRpcError(shallower, "eth_call"))).toBe("capability");
  });
});

describe("retries that disagree", () => {
  it.each<
    [
      string,
      Array<{ kind: "timeout" | "rate_limit"; reason: "timeout" | "rate_limit" | "quota" }>,
      string,
    ]
  >([
    [
      "all alike: that one",
      [
        { kind: "timeout", reason: "timeout" },
        { kind: "timeout", reason: "timeout" },
      ],
      "timeout/timeout",
    ],
    [
      "kinds differ: transient",
      [
        { kind: "timeout", reason: "timeout" },
        { kind: "rate_limit", reason: "timeout" },
      ],
      "transient/transient",
    ],
    [
      "reasons differ: transient",
      [
        { kind: "rate_limit", reason: "rate_limit" },
        { kind: "rate_limit", reason: "quota" },
      ],
      "transient/transient",
    ],
  ])("%s", (_name, retries, expected) => {
    const merged = mergeRetries(retries);
    expect(`${merged.kind}/${merged.reason}`).toBe(expected);
  });
});

describe("the words of the error", () => {
  it("a raw transaction refused in geth's words is the sender's only on eth_sendRawTransaction", () => {
    const error = { code: -32000, message: "rlp: expected input list for types.LegacyTx" };
    expect(outcome(judgeRpcError(error, "eth_sendRawTransaction"))).toBe("ok");
    expect(outcome(judgeRpcError(error, "eth_getBlockByNumber"))).toBe("unclassified");
  });

  it("the caller's method name is no word of the node's, whatever its case or characters", () => {
    // geth echoes the name; read with it, "network… not available" is a chain not served.
    const error = { code: -32601, message: "the method network+x does not exist/is not available" };
    expect(outcome(judgeRpcError(error, "network+X"))).toBe("capability");
    expect(outcome(judgeRpcError(error, "networkXx"))).toBe("retry:capability/chain_unavailable");
  });

  it("words the caller wrote are not the node's; with nothing written, every word is", () => {
    const error = { code: -32000, message: "batch too large" };
    expect(outcome(judgeRpcError(error, "eth_call", '["batch too large"]'))).toBe("unclassified");
    expect(outcome(judgeRpcError(error, "eth_call", ""))).toBe("retry:rate_limit/batch_limit");
  });

  it.each<[unknown, Outcome]>([
    ["-32600", "ok"],
    [-32600, "ok"],
    ["x-32600", "unclassified"],
    ["-32600x", "unclassified"],
    ["429", RATE_LIMITED],
    [" 429", "unclassified"],
    ["429 ", "unclassified"],
    ["32600", "unclassified"],
    [-32600.5, "unclassified"],
  ])("code %j", (code, expected) => {
    expect(outcome(judgeRpcError({ code, message: NEUTRAL }, "eth_call"))).toBe(expected);
  });
});

describe("the detail a verdict carries", () => {
  const detail = (error: unknown) => {
    const verdict = judgeRpcError(error, "eth_call");
    return "detail" in verdict ? verdict.detail : null;
  };

  it("the code and the message, whitespace folded", () => {
    expect(detail({ code: -32000, message: "  leveldb:\n\tclosed  " })).toBe(
      "-32000: leveldb: closed",
    );
    expect(detail({ message: "odd" })).toBe("no code: odd");
  });

  it("cut to 200 characters with an ellipsis", () => {
    const message = "x".repeat(300);
    const cut = detail({ code: 1, message }) ?? "";
    expect(cut).toHaveLength(200);
    expect(cut.endsWith("x…")).toBe(true);
    const fits = "y".repeat(197);
    expect(detail({ code: 1, message: fits })).toBe(`1: ${fits}`);
  });
});
