import { describe, expect, it } from "vitest";
import {
  classifyHttp,
  classifyMember,
  classifyTransport,
  findInnerError,
} from "../../../functions/core/classify/classify.ts";
import type {
  CallInfo,
  ClassifyContext,
  CooldownReason,
  RetryKind,
  Verdict,
} from "../../../functions/core/classify/verdict.ts";

/** What a row asserts: the outcome, and for a retry its kind and reason. */
type Expected =
  | { readonly outcome: "ok" | "unclassified" | "capability" | "behind" | "pruned" }
  | { readonly outcome: "retry"; readonly kind: RetryKind; readonly reason: CooldownReason };

const OK: Expected = { outcome: "ok" };
const UNCLASSIFIED: Expected = { outcome: "unclassified" };
const CAPABILITY: Expected = { outcome: "capability" };
/** The provider has not reached the block: next provider, no strike (docs/behaviour.md §10). */
const BEHIND: Expected = { outcome: "behind" };
/** History the node no longer keeps: next provider, no penalty, a bound learned (§16.4). */
const PRUNED: Expected = { outcome: "pruned" };
const retry = (kind: RetryKind, reason: CooldownReason): Expected => ({
  outcome: "retry",
  kind,
  reason,
});
const TRANSIENT = retry("transient", "transient");
const RATE_LIMITED = retry("rate_limit", "rate_limit");
const NO_RESULT = retry("no_result", "transient");
const BROKEN_ANSWER = retry("http", "transient");
const REFUSED = retry("http", "forbidden");
const MISROUTED = retry("http", "redirect");

function expectVerdict(actual: Verdict | "members", expected: Expected | "members"): void {
  if (expected === "members" || actual === "members") {
    expect(actual).toBe(expected);
    return;
  }
  const { outcome } = actual;
  const picked =
    actual.outcome === "retry"
      ? { outcome, kind: actual.kind, reason: actual.reason }
      : { outcome };
  expect(picked).toEqual(expected);
  if (actual.outcome !== "ok") expect(actual.detail).not.toBe("");
}

const call = (method: string, params: unknown[] = []): CallInfo => ({ method, params });
const AT_HEAD: ClassifyContext = { quorumHead: 100 };
const NO_HEAD: ClassifyContext = { quorumHead: null };

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The verdict on one error object answering `method`, through the public entry point. */
function judgeError(error: unknown, method = "eth_getBlockByNumber"): Verdict {
  return classifyMember({ jsonrpc: "2.0", id: 1, error }, call(method), AT_HEAD);
}

describe("classifyTransport", () => {
  it.each([
    ["connection refused", "connection", retry("connection", "connection")],
    ["connection reset", "connection", retry("connection", "connection")],
    ["TLS handshake failure", "tls", retry("connection", "tls")],
    ["per-attempt timeout", "timeout", retry("timeout", "timeout")],
  ] as const)("%s", (message, kind, expected) => {
    expectVerdict(classifyTransport({ kind, message }), expected);
  });
});

describe("classifyHttp: status rules (docs/behaviour.md §4)", () => {
  const rpc = (error: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 1, error });
  const reverted = rpc({ code: 3, message: "execution reverted" });
  it.each<[string, number, string, Expected | "members"]>([
    ["408 request timeout", 408, "", retry("http", "timeout")],
    ["429 too many requests", 429, "Too Many Requests", RATE_LIMITED],
    [
      "429 whose body names a quota",
      429,
      "You have exceeded the quota",
      retry("rate_limit", "quota"),
    ],
    ["502 bad gateway page", 502, "<html>Bad Gateway</html>", retry("http", "connection")],
    ["502 even with a JSON-RPC body", 502, reverted, retry("http", "connection")],
    ["502 whose body says rate limited", 502, "rate limited, slow down", RATE_LIMITED],
    ["503 empty body", 503, "", retry("http", "connection")],
    ["504 gateway timeout", 504, "", retry("timeout", "timeout")],
    ["520 Cloudflare unknown error", 520, "<html>error 520</html>", retry("http", "connection")],
    ["521 web server is down", 521, "", retry("http", "connection")],
    ["522 connection timed out", 522, "", retry("http", "timeout")],
    ["523 origin unreachable", 523, "", retry("http", "connection")],
    ["524 a timeout occurred", 524, "", retry("timeout", "timeout")],
    ["500 uncaught exception text", 500, "Uncaught exception", BROKEN_ANSWER],
    ["501 other 5xx", 501, "Not Implemented", retry("http", "connection")],
    ["505 other 5xx", 505, "", retry("http", "connection")],
    ["401 unauthorized", 401, "invalid project id", REFUSED],
    ["401 even with a JSON-RPC body", 401, rpc({ code: -32000, message: "Unauthorized" }), REFUSED],
    ["403 forbidden", 403, "", REFUSED],
    ["404 HTML page (an edge or a moved URL)", 404, "<html>Not Found</html>", MISROUTED],
    ["404 with a JSON-RPC body: judged by members", 404, reverted, "members"],
    ["301 redirect", 301, "", MISROUTED],
    ["307 redirect", 307, "<html>Temporary Redirect</html>", MISROUTED],
    [
      "400 JSON-RPC body (dRPC free plan): judged by members",
      400,
      rpc({ code: 35, message: "chain is not available on free plan" }),
      "members",
    ],
    ["regression: 400 plain text was spliced into a 200", 400, "Bad Request", BROKEN_ANSWER],
    [
      "regression: 405 HTML page was spliced into a 200",
      405,
      "<html><body>Method Not Allowed</body></html>",
      BROKEN_ANSWER,
    ],
    ["400 bare object without a hint", 400, '{"message":"Bad Request"}', BROKEN_ANSWER],
    ["400 plain text naming a bad API key", 400, "invalid api key", REFUSED],
    ["400 bare object naming a rate limit", 400, '{"message":"rate limit exceeded"}', RATE_LIMITED],
    ["200 HTML page", 200, "<!DOCTYPE html><html><body>Welcome</body></html>", BROKEN_ANSWER],
    ["200 empty body", 200, "", BROKEN_ANSWER],
    ["200 plain text rate limit", 200, "You've been rate limited", RATE_LIMITED],
    ["200 bare proxy error object", 200, '{"error":"Internal Server Error"}', BROKEN_ANSWER],
    ["200 JSON null", 200, "null", BROKEN_ANSWER],
    ["200 bare object naming unauthorized", 200, '{"message":"Unauthorized"}', REFUSED],
    [
      "500 page saying forbidden is a crash, not a refusal",
      500,
      "<h1>Forbidden</h1>",
      BROKEN_ANSWER,
    ],
    ["200 envelope: judged by members", 200, reverted, "members"],
    ["204 no content", 204, "", BROKEN_ANSWER],
  ])("%s", (_, status, body, expected) => {
    expectVerdict(classifyHttp(status, body, parseBody(body), [call("eth_call")]), expected);
  });
});

describe("classifyHttp: 413 (payload too large)", () => {
  const batch = [call("eth_call"), call("eth_call")];
  const nginx413 =
    "<html><head><title>413 Request Entity Too Large</title></head><body>nginx</body></html>";
  it.each<[string, string, readonly CallInfo[], Expected]>([
    [
      "regression: a 413 page answering a batch was a broken answer; now a batch limit",
      nginx413,
      batch,
      retry("http", "batch_limit"),
    ],
    [
      "a 413 with a JSON-RPC error answering a batch",
      JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "too big" } }),
      batch,
      retry("http", "batch_limit"),
    ],
    [
      "a 413 page answering one call: broken, as before",
      nginx413,
      [call("eth_call")],
      BROKEN_ANSWER,
    ],
  ])("%s", (_, body, calls, expected) => {
    expectVerdict(classifyHttp(413, body, parseBody(body), calls), expected);
  });
});

describe("classifyHttp: what counts as a JSON-RPC answer in a 500 (docs/behaviour.md §4)", () => {
  // An answer carrying a permanent error is left to its members; anything else is retried.
  const permanent = { code: 3, message: "execution reverted" };
  it.each<[string, string, Expected | "members"]>([
    [
      "2.0 envelope with an error",
      JSON.stringify({ jsonrpc: "2.0", id: 1, error: permanent }),
      "members",
    ],
    [
      "2.0 envelope with id null",
      JSON.stringify({ jsonrpc: "2.0", id: null, error: permanent }),
      "members",
    ],
    [
      "1.0 envelope (Bitcoin Core)",
      JSON.stringify({ result: "0x1", error: null, id: 1 }),
      "members",
    ],
    [
      "batch of envelopes",
      JSON.stringify([{ jsonrpc: "2.0", id: 1, error: permanent }]),
      "members",
    ],
    ["plain text", "Uncaught exception", BROKEN_ANSWER],
    ["HTML page", "<html><body>Internal Server Error</body></html>", BROKEN_ANSWER],
    ["empty body", "", BROKEN_ANSWER],
    ["bytes that are not JSON", '{"jsonrpc":"2.0","id":1,"res', BROKEN_ANSWER],
    ["bare {message}", JSON.stringify({ message: "Internal Server Error" }), BROKEN_ANSWER],
    ['bare {error:"str"}', JSON.stringify({ error: "Internal Server Error" }), BROKEN_ANSWER],
    [
      "bare {error:{message}}",
      JSON.stringify({ error: { message: "Internal Server Error" } }),
      BROKEN_ANSWER,
    ],
    [
      "bare {error:{code,message}} without jsonrpc or id",
      JSON.stringify({ error: { code: 19, message: "Temporary internal error. Please retry" } }),
      BROKEN_ANSWER,
    ],
    [
      "envelope with neither result nor error",
      JSON.stringify({ jsonrpc: "2.0", id: 1 }),
      BROKEN_ANSWER,
    ],
    ["empty array", "[]", BROKEN_ANSWER],
    [
      "array of proxy error objects",
      JSON.stringify([{ error: { message: "boom" } }]),
      BROKEN_ANSWER,
    ],
    ["JSON string", JSON.stringify("Internal Server Error"), BROKEN_ANSWER],
    ["JSON null", "null", BROKEN_ANSWER],
  ])("%s", (_, body, expected) => {
    expectVerdict(classifyHttp(500, body, parseBody(body), [call("eth_call")]), expected);
  });
});

describe("classifyHttp: a 500 is transient only when every error in it is (docs/behaviour.md §4)", () => {
  const transient = { code: 19, message: "Temporary internal error. Please retry" };
  const permanent = { code: -32601, message: "The method x does not exist/is not available" };
  const rateLimit = { code: -32005, message: "rate limit exceeded" };
  const member = (id: number, error: unknown) => ({ id, error });
  const batch = [call("eth_getBalance"), call("eth_getBalance")];
  it.each<[string, unknown, readonly CallInfo[], Expected | "members"]>([
    [
      "single transient error",
      { jsonrpc: "2.0", id: 1, error: transient },
      [call("eth_blockNumber")],
      TRANSIENT,
    ],
    ["single permanent error", { jsonrpc: "2.0", id: 1, error: permanent }, [call("x")], "members"],
    [
      "single rate limit keeps its kind",
      { jsonrpc: "2.0", id: 1, error: rateLimit },
      [call("eth_call")],
      RATE_LIMITED,
    ],
    [
      "batch transient then permanent",
      [member(1, transient), member(2, permanent)],
      batch,
      "members",
    ],
    [
      "batch permanent then transient",
      [member(2, permanent), member(1, transient)],
      batch,
      "members",
    ],
    ["batch all transient", [member(1, transient), member(3, transient)], batch, TRANSIENT],
    [
      "batch transient and rate limit",
      [member(1, transient), member(2, rateLimit)],
      batch,
      TRANSIENT,
    ],
    [
      "batch of results only",
      [
        { id: 1, result: "0x1" },
        { id: 2, result: "0x2" },
      ],
      batch,
      "members",
    ],
  ])("%s", (_, parsed, calls, expected) => {
    expectVerdict(classifyHttp(500, JSON.stringify(parsed), parsed, calls), expected);
  });
});

describe("classifyHttp: one envelope answering a batch", () => {
  const precheck =
    "tracing failed: insufficient funds for gas * price + value: address 0x01 have 0 want 100";
  const whole = (error: unknown) => ({ jsonrpc: "2.0", id: null, error });
  const traces = [call("debug_traceBlockByHash"), call("debug_traceBlockByHash")];
  it.each<[string, unknown, readonly CallInfo[], Expected | "members"]>([
    [
      "pre-check failure on a batch of one trace method",
      whole({ code: -32003, message: precheck }),
      traces,
      TRANSIENT,
    ],
    [
      "pre-check failure on a batch of several methods",
      whole({ code: -32003, message: precheck }),
      [call("debug_traceBlockByHash"), call("eth_getBlockByHash")],
      OK,
    ],
    [
      "pre-check failure on a batch of eth_call",
      whole({ code: -32003, message: precheck }),
      [call("eth_call"), call("eth_call")],
      OK,
    ],
    [
      "rate limit for the whole batch",
      whole({ code: -32005, message: "too many requests" }),
      traces,
      RATE_LIMITED,
    ],
    [
      "method not found for a batch of one method",
      whole({ code: -32601, message: "Method not found" }),
      [call("trace_block"), call("trace_block")],
      CAPABILITY,
    ],
    [
      "method not found for a batch of several methods names no method",
      whole({ code: -32601, message: "Method not found" }),
      [call("trace_block"), call("eth_call")],
      UNCLASSIFIED,
    ],
    [
      "regression: reth's jsonrpsee 'The batch request was too large' (-32010) was passed on",
      whole({
        code: -32010,
        message: "The batch request was too large",
        data: "Exceeded max limit of 10",
      }),
      traces,
      retry("rate_limit", "batch_limit"),
    ],
    [
      "regression: jsonrpsee's 'Batched requests are not supported' (-32005) was a rate limit",
      whole({ code: -32005, message: "Batched requests are not supported by this server" }),
      traces,
      retry("rate_limit", "batch_limit"),
    ],
    [
      "regression: dRPC's 'Batch of more than 3 requests are not allowed' was passed on",
      whole({
        code: -32600,
        message: "Batch of more than 3 requests are not allowed on free tier",
      }),
      traces,
      retry("rate_limit", "batch_limit"),
    ],
    [
      "jsonrpsee 'The batch response was too large' (-32011)",
      whole({ code: -32011, message: "The batch response was too large" }),
      traces,
      retry("rate_limit", "batch_limit"),
    ],
    [
      "a single result cannot answer a batch",
      { jsonrpc: "2.0", id: 1, result: "0x1" },
      traces,
      BROKEN_ANSWER,
    ],
    [
      "an array answers a batch: members",
      [{ jsonrpc: "2.0", id: 1, result: [] }],
      traces,
      "members",
    ],
  ])("%s", (_, parsed, calls, expected) => {
    expectVerdict(classifyHttp(200, JSON.stringify(parsed), parsed, calls), expected);
  });
});

describe("classifyMember: the transient table (docs/behaviour.md §4)", () => {
  it.each<[number, string, Expected]>([
    [
      -32429,
      "Throughput limit 1000 CUs/sec for this project has been exceeded. Please upgrade your plan at <url>",
      RATE_LIMITED,
    ],
    [-32603, "gave up retrying on network-level after 625.08259ms: 1 upstream not synced", BEHIND],
    [
      -32603,
      "gave up retrying on network-level after 1.3s: 1 upstream transport errors",
      TRANSIENT,
    ],
    [
      -32603,
      "gave up retrying on network-level after 1.1s: 1 upstream validation mismatch",
      TRANSIENT,
    ],
    [
      -32603,
      "failsafe timeout policy exceeded on network-level after 30s: dynamic timeout exceeded",
      TRANSIENT,
    ],
    [-32603, "context canceled", TRANSIENT],
    [
      -32700,
      'cannot parse json-rpc response: "Syntax error at index 1: invalid char upstream connect error or disconnect"',
      TRANSIENT,
    ],
    [
      1,
      "no available upstreams to process a request. Cause - node-1 - Upstream height 75651020 is less than 75651022",
      BEHIND,
    ],
    [
      -32503,
      "Errors from the following providers prevented the request from being fulfilled: ProviderA.",
      TRANSIENT,
    ],
    [
      -32603,
      "We are not able to process your request at this time. Please contact support.",
      TRANSIENT,
    ],
    [-32001, "Unable to complete request at this time.", TRANSIENT],
    [19, "Temporary internal error. Please retry, trace-id: 0123", TRANSIENT],
    [-32000, "could not find results for height #96891842", BEHIND],
    [-32000, "block result not found for height 1000", BEHIND],
    [-32014, "block not found with number 0x12b4afe0", BEHIND],
    [-32000, "finalized block not found", BEHIND],
    [-32602, "Block with such an ID doesn't exist yet", BEHIND],
    [
      -32000,
      "failed to get block by number: height 101 must be less than or equal to the current blockchain height 100",
      BEHIND,
    ],
    [-32000, "BlockOutOfRangeError: block height is 105 but requested was 106", BEHIND],
  ])("%i %s", (code, message, expected) => {
    expectVerdict(judgeError({ code, message }), expected);
  });
});

describe("classifyMember: the permanent table, never retried (docs/behaviour.md §4)", () => {
  it.each<[number, string, string, Expected]>([
    [
      -32601,
      "The method debug_traceBlockByHash does not exist/is not available",
      "debug_traceBlockByHash",
      CAPABILITY,
    ],
    [
      -32601,
      "method ignored by upstream: gave up retrying on network-level after 1ms: 1 upstream method ignored",
      "eth_getBlockByNumber",
      CAPABILITY,
    ],
    [
      -32603,
      "all upstream attempts failed (1 upstream unsupported method, 1 upstream not synced)",
      "eth_getBlockByNumber",
      CAPABILITY,
    ],
    [
      -32503,
      "ProviderA does not support chainId(s): 98867 for JsonRpc.",
      "eth_getBlockByNumber",
      UNCLASSIFIED,
    ],
    [-32401, "authenticated API key required for method", "eth_getBlockByNumber", UNCLASSIFIED],
    // Pruned state: the caller asked a full node for old state, no fault of the provider's;
    // another provider may keep it (docs/behaviour.md §16.4).
    [27, "Unknown state. First available state is 14875359", "eth_getBalance", PRUNED],
    [-32000, "historical state is not available", "eth_getBalance", PRUNED],
    [-32000, "missing trie node 9f3c7a (path )", "eth_getBalance", PRUNED],
    [-32000, "hash 0xabc is not currently canonical", "eth_getBlockByHash", UNCLASSIFIED],
    [-32003, "tracing failed: insufficient funds for gas * price + value", "eth_call", OK],
    [
      -32003,
      "tracing failed: insufficient funds for gas * price + value",
      "some_unknownMethod",
      OK,
    ],
    [-32602, "Invalid params; please retry with a smaller block range", "eth_getLogs", OK],
    [-32000, "query exceeds limit, please retry with a smaller block range", "eth_getLogs", OK],
  ])("%i %s (%s)", (code, message, method, expected) => {
    const verdict = judgeError({ code, message }, method);
    expect(verdict.outcome).not.toBe("retry");
    expectVerdict(verdict, expected);
  });
});

describe("classifyMember: proxy cause chains, judged by the leaves (docs/behaviour.md §4)", () => {
  type Leaf = { code: string; message?: string; details?: { originalCode: number } };
  const proxyError = (code: number, message: string, leaf: Leaf) => ({
    code,
    message,
    data: {
      code: "ErrFailsafeRetryExceeded",
      cause: {
        code: "ErrUpstreamsExhausted",
        cause: [{ code: "ErrUpstreamRequest", cause: leaf }],
      },
    },
  });
  const notAvailable = "The method eth_getBlockByNumber does not exist/is not available";
  const notSynced = "gave up retrying on network-level after 1s: 1 upstream not synced";
  it.each<[string, unknown, Expected]>([
    [
      "every upstream over capacity, reported as method-not-found",
      proxyError(-32601, notAvailable, { code: "ErrEndpointCapacityExceeded" }),
      RATE_LIMITED,
    ],
    [
      "the key may not call the method",
      proxyError(-32601, "The method debug_traceBlockByHash does not exist/is not available", {
        code: "ErrEndpointUnsupported",
        message: "remote endpoint does not support requested method",
      }),
      CAPABILITY,
    ],
    [
      "upstream lags the head",
      proxyError(-32603, notSynced, { code: "ErrUpstreamBlockUnavailable" }),
      BEHIND,
    ],
    [
      "upstream refused the connection",
      proxyError(-32603, 'Post "": dial tcp 10.0.0.1:443: connect: connection refused', {
        code: "ErrEndpointTransportFailure",
      }),
      TRANSIENT,
    ],
    [
      "upstream rejected the credentials with an empty body",
      proxyError(
        -32016,
        'cannot parse json-rpc response: "Syntax error no sources available, the input json is empty"',
        {
          code: "ErrEndpointUnauthorized",
        },
      ),
      UNCLASSIFIED,
    ],
    [
      "upstream says it cannot serve the call at this time",
      proxyError(-32601, notAvailable, {
        code: "ErrEndpointServerSideException",
        message: "Unable to complete request at this time.",
        details: { originalCode: -32001 },
      }),
      TRANSIENT,
    ],
    [
      "upstream rejects the params with retry advice",
      proxyError(-32603, "gave up retrying on network-level after 1s: 1 upstream server errors", {
        code: "ErrEndpointServerSideException",
        message: "Invalid params; please retry with a smaller block range",
        details: { originalCode: -32602 },
      }),
      OK,
    ],
    [
      "upstream has pruned the state",
      proxyError(27, "Unknown state. First available state is 14875359", {
        code: "ErrEndpointServerSideException",
        message: "Unknown state. First available state is 14875359",
      }),
      PRUNED,
    ],
    [
      "exhausted upstreams with no recorded cause, under -32601",
      {
        code: -32601,
        message: notAvailable,
        data: { code: "ErrFailsafeRetryExceeded", cause: { code: "ErrUpstreamsExhausted" } },
      },
      TRANSIENT,
    ],
    [
      "a top-level ErrUpstreamsExhausted with an otherwise unknown code",
      {
        code: -32099,
        message: "all upstream attempts failed",
        data: { code: "ErrUpstreamsExhausted" },
      },
      TRANSIENT,
    ],
    [
      "one permanent leaf among transient ones",
      {
        code: -32603,
        message: "all upstream attempts failed",
        data: {
          code: "ErrUpstreamsExhausted",
          cause: [{ code: "ErrUpstreamBlockUnavailable" }, { code: "ErrEndpointUnsupported" }],
        },
      },
      CAPABILITY,
    ],
    [
      "every leaf transient, of different kinds",
      {
        code: -32603,
        message: "all upstream attempts failed",
        data: {
          code: "ErrUpstreamsExhausted",
          cause: [{ code: "ErrUpstreamBlockUnavailable" }, { code: "ErrEndpointCapacityExceeded" }],
        },
      },
      TRANSIENT,
    ],
    [
      "a hedge cancelled beside a transient leaf says nothing",
      {
        code: -32603,
        message: "all upstream attempts failed",
        data: {
          code: "ErrUpstreamsExhausted",
          cause: [
            { code: "ErrUpstreamHedgeCancelled", cause: { code: "ErrEndpointUnauthorized" } },
            { code: "ErrEndpointTransportFailure" },
          ],
        },
      },
      TRANSIENT,
    ],
    [
      "a leaf with no verdict leaves the top-level message to decide",
      proxyError(-32603, "context canceled", { code: "ErrSomethingNew" }),
      TRANSIENT,
    ],
    [
      "an execution exception leaf without message on an unknown method",
      {
        code: -32003,
        message:
          "tracing failed: insufficient funds for gas * price + value: address 0x01 have 0 want 100",
        data: { code: "ErrEndpointExecutionException" },
      },
      OK,
    ],
    [
      "a revert data string under data is not a cause chain",
      { code: 3, message: "execution reverted", data: "0x08c379a0" },
      OK,
    ],
  ])("%s", (_, error, expected) => {
    expectVerdict(judgeError(error), expected);
  });
});

describe("classifyMember: wrong state while tracing a mined block (docs/behaviour.md §4)", () => {
  const precheck =
    "tracing failed: insufficient funds for gas * price + value: address 0x01 have 0 want 100";
  const proxied = (message: string) => ({
    code: -32003,
    message,
    data: { code: "ErrEndpointExecutionException", message, details: { originalCode: -32000 } },
  });

  it.each([
    "debug_traceBlockByHash",
    "debug_traceBlockByNumber",
    "debug_traceTransaction",
    "trace_block",
    "trace_replayBlockTransactions",
    "trace_replayTransaction",
    "trace_transaction",
  ])("retries a proxied pre-check failure on %s", (method) => {
    expectVerdict(judgeError(proxied(precheck), method), TRANSIENT);
  });

  it.each<[number, string]>([
    [-32000, "insufficient funds for gas * price + value: address 0x01 have 0 want 100"],
    [-32000, "nonce too low: address 0x01, tx: 5 state: 6"],
    [-32000, "nonce too high: address 0x01, tx: 7 state: 6"],
    [-32000, "intrinsic gas too low: have 0, want 21000"],
    [-32603, "insufficient funds for gas * price + value"],
    [
      -32000,
      "err: insufficient funds for gas * price + value: address 0x01 have 0 want 100 (supplied gas 21000)",
    ],
    [-32000, "Insufficient funds for gas * price + value"],
    [1, "nonce too low"],
  ])("retries %i %s straight from the node", (code, message) => {
    expectVerdict(judgeError({ code, message }, "debug_traceBlockByHash"), TRANSIENT);
  });

  it.each<[string, unknown]>([
    [
      "under a generic proxy message",
      {
        code: -32603,
        message: "all upstream attempts failed",
        data: {
          code: "ErrUpstreamsExhausted",
          cause: [{ code: "ErrEndpointExecutionException", message: precheck }],
        },
      },
    ],
    [
      "in a cause whose own message is generic",
      {
        code: -32603,
        message: "gave up retrying on network-level after 1s",
        data: {
          code: "ErrFailsafeRetryExceeded",
          cause: {
            code: "ErrUpstreamsExhausted",
            cause: [
              {
                code: "ErrUpstreamRequest",
                cause: { code: "ErrEndpointExecutionException", message: "nonce too high" },
              },
            ],
          },
        },
      },
    ],
  ])("finds the failure %s", (_, error) => {
    expectVerdict(judgeError(error, "trace_block"), TRANSIENT);
  });

  it.each([
    "eth_call",
    "eth_estimateGas",
    "eth_sendRawTransaction",
    "debug_traceCall",
    "trace_call",
    "trace_callMany",
  ])("does not retry it for %s, which runs a new transaction", (method) => {
    expectVerdict(judgeError(proxied(precheck), method), OK);
  });

  it.each([
    "execution reverted",
    "insufficient funds for transfer",
    "out of gas",
    "tracing failed: max fee per gas less than block base fee",
  ])("does not retry other execution errors of a trace: %s", (message) => {
    expectVerdict(judgeError(proxied(message), "debug_traceBlockByHash"), OK);
  });
});

describe("classifyMember: rate limits, quotas, batch limits, unavailable chains", () => {
  it.each<[string, number, string, Expected]>([
    ["-32005 limit exceeded", -32005, "limit exceeded", RATE_LIMITED],
    ["429 as a JSON-RPC code", 429, "Too Many Requests", RATE_LIMITED],
    ["-32429 by code alone", -32429, "slow down", RATE_LIMITED],
    ["'rate limit' in words", -32000, "Rate limit reached, please slow down", RATE_LIMITED],
    ["'too many requests' in words", -32000, "too many requests", RATE_LIMITED],
    [
      "Alchemy compute-unit capacity",
      429,
      "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message.",
      RATE_LIMITED,
    ],
    [
      "QuickNode per-second request limit",
      -32007,
      "15/second request limit reached - reduce calls per second",
      RATE_LIMITED,
    ],
    ["batch limit exceeded", -32007, "batch limit exceeded", retry("rate_limit", "batch_limit")],
    [
      "too many calls in a batch",
      -32600,
      "too many requests in batch",
      retry("rate_limit", "batch_limit"),
    ],
    [
      "exceeded the quota",
      -32000,
      "You have exceeded the quota for this key",
      retry("rate_limit", "quota"),
    ],
    ["quota usage", -32001, "quota usage exceeded for the day", retry("rate_limit", "quota")],
    [
      "-32001 with quota words",
      -32001,
      "Monthly quota limit reached",
      retry("rate_limit", "quota"),
    ],
    [
      "Infura daily request count",
      -32005,
      "daily request count exceeded, request rate limited",
      retry("rate_limit", "quota"),
    ],
    [
      "dRPC chain not on the free plan",
      35,
      "chain is not available on free plan",
      retry("capability", "chain_unavailable"),
    ],
    [
      "network not supported",
      -32000,
      "network is not supported by this endpoint",
      retry("capability", "chain_unavailable"),
    ],
    ["execution timeout", -32000, "execution timeout", retry("timeout", "timeout")],
    ["request timed out", -32000, "request to upstream timed out", retry("timeout", "timeout")],
  ])("%s", (_, code, message, expected) => {
    expectVerdict(judgeError({ code, message }), expected);
  });
});

describe("classifyMember: capability (-32601 and its cousins)", () => {
  it.each<[string, unknown, string]>([
    ["-32601 Method not found", { code: -32601, message: "Method not found" }, "trace_block"],
    [
      "-32601 does not exist/is not available",
      { code: -32601, message: "the method eth_foo does not exist/is not available" },
      "eth_foo",
    ],
    ["-32601 with an unknown message", { code: -32601, message: "nope" }, "eth_foo"],
    [
      "hardhat -32004 Method X is not supported",
      { code: -32004, message: "Method eth_foo is not supported" },
      "eth_foo",
    ],
    [
      "ganache -32700 for an unknown method",
      { code: -32700, message: "The method eth_foo does not exist/is not available" },
      "eth_foo",
    ],
    [
      "not available on this plan",
      { code: -32000, message: "trace_block is not available on the free tier" },
      "trace_block",
    ],
    [
      "unsupported method in words",
      { code: -32000, message: "unsupported method: debug_traceCall" },
      "debug_traceCall",
    ],
    [
      "eRPC summary of an unsupported method",
      { code: -32603, message: "all upstream attempts failed (2 upstream unsupported method)" },
      "trace_block",
    ],
  ])("%s", (_, error, method) => {
    expectVerdict(judgeError(error, method), CAPABILITY);
  });
});

describe("geth's 'block range extends beyond current head block': the caller's, unless the known head covers the range", () => {
  // execution-apis test filter-error-future-block-range. A toBlock the gateway pinned to the
  // served head (or one a caller was told exists) meets it on a provider a block behind.
  const refusal = { code: -32602, message: "block range extends beyond current head block" };
  const logs = (toBlock: unknown) => call("eth_getLogs", [{ fromBlock: "0x1", toBlock }]);
  it.each<[string, CallInfo, ClassifyContext, Expected]>([
    ["toBlock at the known head (100)", logs("0x64"), AT_HEAD, BEHIND],
    ["toBlock under the known head", logs("0x10"), AT_HEAD, BEHIND],
    ["toBlock above the known head", logs("0x65"), AT_HEAD, OK],
    ["no known head", logs("0x10"), NO_HEAD, OK],
    ["toBlock a tag", logs("latest"), AT_HEAD, OK],
    ["another method", call("eth_getBalance", ["0x01", "0x10"]), AT_HEAD, OK],
  ])("%s", (_name, info, context, expected) => {
    expectVerdict(
      classifyMember({ jsonrpc: "2.0", id: 1, error: refusal }, info, context),
      expected,
    );
  });
});

describe("classifyMember: the caller's fault is ok", () => {
  it.each<[string, unknown, string]>([
    [
      "execution reverted with data",
      {
        code: 3,
        message: "execution reverted: Ownable: caller is not the owner",
        data: "0x08c379a0",
      },
      "eth_call",
    ],
    [
      "-32602 invalid params",
      { code: -32602, message: "invalid argument 0: hex string without 0x prefix" },
      "eth_getBalance",
    ],
    [
      "-32602 with any message (a log range beyond every known head included)",
      { code: -32602, message: "block range extends beyond current head block" },
      "eth_getLogs",
    ],
    ["-32600 invalid request", { code: -32600, message: "invalid request" }, "eth_call"],
    ["-32700 parse error", { code: -32700, message: "parse error" }, "eth_call"],
    [
      "insufficient funds for transfer",
      { code: -32000, message: "insufficient funds for transfer" },
      "eth_sendRawTransaction",
    ],
    [
      "nonce too low on sendRawTransaction",
      { code: -32000, message: "nonce too low" },
      "eth_sendRawTransaction",
    ],
    ["nonce too high on eth_call", { code: -32000, message: "nonce too high" }, "eth_call"],
    [
      "already known transaction",
      { code: -32000, message: "already known" },
      "eth_sendRawTransaction",
    ],
    [
      "max fee below base fee",
      { code: -32000, message: "max fee per gas less than block base fee" },
      "eth_sendRawTransaction",
    ],
    [
      "underpriced replacement",
      { code: -32000, message: "replacement transaction underpriced" },
      "eth_sendRawTransaction",
    ],
    [
      "out of gas in eth_estimateGas",
      { code: -32000, message: "gas required exceeds allowance (30000000)" },
      "eth_estimateGas",
    ],
    [
      "Infura's -32005 for too many logs",
      { code: -32005, message: "query returned more than 10000 results" },
      "eth_getLogs",
    ],
    [
      "a block range over the provider's maximum",
      { code: -32000, message: "exceed maximum block range: 5000" },
      "eth_getLogs",
    ],
  ])("%s", (_, error, method) => {
    expectVerdict(judgeError(error, method), OK);
  });
});

describe("classifyMember: unclassified, and words rather than digits", () => {
  it.each<[string, unknown, Expected]>([
    [
      "-32603 Internal error (internal errors are not retried)",
      { code: -32603, message: "Internal error" },
      UNCLASSIFIED,
    ],
    [
      "-32000 with an unknown message",
      { code: -32000, message: "something odd happened" },
      UNCLASSIFIED,
    ],
    ["the bare word retry", { code: -32000, message: "request failed, retry" }, UNCLASSIFIED],
    ["an empty error object", {}, UNCLASSIFIED],
    ["an error given as a string", "boom", UNCLASSIFIED],
    [
      "429 inside a hash is not a rate limit",
      { code: -32000, message: "invalid tx 0x4294290403403429" },
      UNCLASSIFIED,
    ],
    [
      "403 inside a block number is not forbidden",
      { code: -32000, message: "bad block 40340300" },
      UNCLASSIFIED,
    ],
    [
      "a numeric-string code counts as the number",
      { code: "-32005", message: "slow down" },
      RATE_LIMITED,
    ],
    ["'unauthorized' from the node", { code: -32002, message: "Unauthorized" }, UNCLASSIFIED],
  ])("%s", (_, error, expected) => {
    expectVerdict(judgeError(error), expected);
  });

  it("does not read 429 in a bare 200 body as a rate limit", () => {
    expectVerdict(classifyHttp(200, "0x429", "0x429", [call("eth_call")]), BROKEN_ANSWER);
  });
});

describe("classifyMember: method-aware results (docs/behaviour.md §4)", () => {
  const block = { number: "0x64", hash: `0x${"ab".repeat(32)}` };
  const rateLimitText = "You've been rate limited, please upgrade your plan.\n";
  it.each<[string, CallInfo, unknown, ClassifyContext, Expected]>([
    ["eth_blockNumber at the head", call("eth_blockNumber"), "0x64", AT_HEAD, OK],
    ["eth_blockNumber above the head", call("eth_blockNumber"), "0x65", AT_HEAD, OK],
    ["eth_blockNumber under the head: behind", call("eth_blockNumber"), "0x10", AT_HEAD, BEHIND],
    [
      "eth_blockNumber within the tolerance",
      call("eth_blockNumber"),
      "0x62",
      { quorumHead: 100, headToleranceBlocks: 2 },
      OK,
    ],
    ["eth_blockNumber with no known head", call("eth_blockNumber"), "0x10", NO_HEAD, OK],
    ["eth_blockNumber null", call("eth_blockNumber"), null, AT_HEAD, NO_RESULT],
    ["eth_blockNumber rate-limit text", call("eth_blockNumber"), rateLimitText, AT_HEAD, NO_RESULT],
    ["eth_chainId null", call("eth_chainId"), null, AT_HEAD, NO_RESULT],
    ["eth_gasPrice as a JSON number", call("eth_gasPrice"), 5, AT_HEAD, NO_RESULT],
    ["eth_getBalance zero", call("eth_getBalance", ["0x01", "latest"]), "0x0", AT_HEAD, OK],
    ["eth_getBalance null", call("eth_getBalance", ["0x01", "latest"]), null, AT_HEAD, NO_RESULT],
    ["eth_getCode empty", call("eth_getCode", ["0x01", "latest"]), "0x", AT_HEAD, OK],
    [
      "eth_getTransactionCount null",
      call("eth_getTransactionCount", ["0x01", "latest"]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    ["eth_call empty return", call("eth_call", [{ to: "0x01" }, "latest"]), "0x", AT_HEAD, OK],
    [
      "eth_call proxy error page text",
      call("eth_call", [{ to: "0x01" }, "latest"]),
      "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
      AT_HEAD,
      NO_RESULT,
    ],
    ["eth_estimateGas hex", call("eth_estimateGas", [{}]), "0x5208", AT_HEAD, OK],
    [
      "eth_getStorageAt null",
      call("eth_getStorageAt", ["0x01", "0x0", "latest"]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    ["net_version decimal string", call("net_version"), "1", AT_HEAD, OK],
    ["net_version null", call("net_version"), null, AT_HEAD, NO_RESULT],
    ["net_version text", call("net_version"), rateLimitText, AT_HEAD, NO_RESULT],
    ["eth_getLogs empty array", call("eth_getLogs", [{}]), [], AT_HEAD, OK],
    ["eth_getLogs null", call("eth_getLogs", [{}]), null, AT_HEAD, NO_RESULT],
    ["eth_getLogs object", call("eth_getLogs", [{}]), {}, AT_HEAD, NO_RESULT],
    ["latest block", call("eth_getBlockByNumber", ["latest", false]), block, AT_HEAD, OK],
    [
      "null latest block",
      call("eth_getBlockByNumber", ["latest", false]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    ["null safe block", call("eth_getBlockByNumber", ["safe", false]), null, AT_HEAD, NO_RESULT],
    [
      "null finalized block",
      call("eth_getBlockByNumber", ["finalized", false]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    [
      "null earliest block",
      call("eth_getBlockByNumber", ["earliest", false]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    ["null pending block", call("eth_getBlockByNumber", ["pending", false]), null, AT_HEAD, OK],
    [
      "null block below the head",
      call("eth_getBlockByNumber", ["0x50", false]),
      null,
      AT_HEAD,
      BEHIND,
    ],
    [
      "null block at the head",
      call("eth_getBlockByNumber", ["0x64", false]),
      null,
      AT_HEAD,
      BEHIND,
    ],
    ["null block above the head", call("eth_getBlockByNumber", ["0x65", false]), null, AT_HEAD, OK],
    [
      "null numbered block with no quorum head",
      call("eth_getBlockByNumber", ["0x1", false]),
      null,
      NO_HEAD,
      OK,
    ],
    [
      "null latest block with no quorum head",
      call("eth_getBlockByNumber", ["latest", false]),
      null,
      NO_HEAD,
      NO_RESULT,
    ],
    [
      "text in place of a block",
      call("eth_getBlockByNumber", ["latest", false]),
      rateLimitText,
      AT_HEAD,
      NO_RESULT,
    ],
    [
      "text in place of a future block",
      call("eth_getBlockByNumber", ["0x99", false]),
      rateLimitText,
      AT_HEAD,
      NO_RESULT,
    ],
    [
      "EIP-1898 block number below the head",
      call("eth_getBlockReceipts", [{ blockNumber: "0x10" }]),
      null,
      AT_HEAD,
      BEHIND,
    ],
    [
      "block receipts of an unknown hash",
      call("eth_getBlockReceipts", [`0x${"cd".repeat(32)}`]),
      null,
      AT_HEAD,
      OK,
    ],
    [
      "block receipts of the latest block",
      call("eth_getBlockReceipts", ["latest"]),
      null,
      AT_HEAD,
      NO_RESULT,
    ],
    [
      "receipt of a pending transaction",
      call("eth_getTransactionReceipt", ["0x01"]),
      null,
      AT_HEAD,
      OK,
    ],
    [
      "text in place of a receipt",
      call("eth_getTransactionReceipt", ["0x01"]),
      rateLimitText,
      AT_HEAD,
      NO_RESULT,
    ],
    [
      "eth_chainId of this network",
      call("eth_chainId"),
      "0x7a69",
      { quorumHead: 1, chainId: 31337 },
      OK,
    ],
    [
      "eth_chainId of another chain",
      call("eth_chainId"),
      "0x1",
      { quorumHead: 1, chainId: 31337 },
      retry("no_result", "wrong_chain"),
    ],
    ["eth_chainId with no chain to compare", call("eth_chainId"), "0x1", AT_HEAD, OK],
    ["unknown transaction", call("eth_getTransactionByHash", ["0x01"]), null, AT_HEAD, OK],
    ["unknown block hash", call("eth_getBlockByHash", ["0x01", false]), null, AT_HEAD, OK],
    ["unknown method, null", call("eth_somethingNew"), null, AT_HEAD, OK],
    ["unknown method, text", call("eth_somethingNew"), "hello", AT_HEAD, OK],
    [
      "result missing beside error null (JSON-RPC 1.0)",
      call("eth_blockNumber"),
      undefined,
      AT_HEAD,
      NO_RESULT,
    ],
  ])("%s", (_, info, result, context, expected) => {
    const response =
      result === undefined
        ? { id: 1, error: null, result: null }
        : { jsonrpc: "2.0", id: 1, result };
    expectVerdict(classifyMember(response, info, context), expected);
  });
});

describe("classifyMember: an object that is not a JSON-RPC response", () => {
  it.each<[string, unknown]>([
    ["a number", 42],
    ["a string", "Internal Server Error"],
    ["null", null],
    ["an object without id", { error: { code: -32000, message: "x" } }],
    ["an envelope with neither result nor error", { jsonrpc: "2.0", id: 1 }],
    ["an unknown protocol version", { jsonrpc: "3.0", id: 1, result: "0x1" }],
  ])("%s", (_, response) => {
    expectVerdict(classifyMember(response, call("eth_blockNumber"), AT_HEAD), BROKEN_ANSWER);
  });
});

describe("findInnerError", () => {
  const needle = '"we can\'t execute this request"';
  const inner = ['"error":{"code":-32601', needle];
  it.each<[string, string, readonly string[], string | null]>([
    [
      "found at the start",
      `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`,
      inner,
      inner[0] ?? "",
    ],
    ["found inside the first 1024 bytes", `${" ".repeat(900)}${needle}`, inner, needle],
    ["ending exactly at byte 1024", `${" ".repeat(1024 - needle.length)}${needle}`, inner, needle],
    ["straddling byte 1024", `${" ".repeat(1024 - needle.length + 1)}${needle}`, inner, null],
    ["beyond the first 1024 bytes", `${" ".repeat(2000)}${needle}`, inner, null],
    [
      "pushed beyond 1024 bytes by multi-byte characters",
      `${"é".repeat(600)}${needle}`,
      inner,
      null,
    ],
    [
      "found after multi-byte characters within 1024 bytes",
      `${"é".repeat(400)}${needle}`,
      inner,
      needle,
    ],
    ["a multi-byte needle found", `{"message":"nœud"}`, ['"nœud"'], '"nœud"'],
    ["the first configured string wins", `${needle} "error":{"code":-32601`, inner, inner[0] ?? ""],
    ["none configured", needle, [], null],
    ["an empty configured string never matches", "anything", [""], null],
    ["absent", '{"jsonrpc":"2.0","id":1,"result":"0x1"}', inner, null],
  ])("%s", (_, body, innerErrors, expected) => {
    expect(findInnerError(body, innerErrors)).toBe(expected);
  });
});

describe("classifyMember: pruned state is history only about old blocks (docs/behaviour.md §16.4)", () => {
  const ADDRESS = "0x0000000000000000000000000000000000000001";
  const pruned = { code: -32000, message: "missing trie node 9f3c7a (path )" };
  const HIGH_HEAD: ClassifyContext = { quorumHead: 1_000 };
  it.each([
    {
      name: "a block long below the head",
      params: [ADDRESS, "0x64"],
      context: HIGH_HEAD,
      pruned: true,
    },
    { name: "earliest", params: [ADDRESS, "earliest"], context: HIGH_HEAD, pruned: true },
    {
      name: "a number while the head is unknown",
      params: [ADDRESS, "0x3e8"],
      context: NO_HEAD,
      pruned: true,
    },
    {
      name: "regression: latest was the caller's answer; now retried",
      params: [ADDRESS, "latest"],
      context: HIGH_HEAD,
      pruned: false,
    },
    {
      name: "regression: the head's number was the caller's answer; now retried",
      params: [ADDRESS, "0x3e8"],
      context: HIGH_HEAD,
      pruned: false,
    },
    {
      name: "a block just inside the 32 recent blocks every node keeps is retried",
      params: [ADDRESS, "0x3c9"],
      context: HIGH_HEAD,
      pruned: false,
    },
    {
      name: "a block just outside them is history",
      params: [ADDRESS, "0x3c8"],
      context: HIGH_HEAD,
      pruned: true,
    },
  ])("$name", ({ params, context, pruned: isPruned }) => {
    const verdict = classifyMember(
      { jsonrpc: "2.0", id: 1, error: pruned },
      call("eth_getBalance", params),
      context,
    );
    expect(verdict.outcome).toBe(isPruned ? "pruned" : "retry");
  });
});
