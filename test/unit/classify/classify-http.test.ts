import { describe, expect, it } from "vitest";
import {
  classifyHttp,
  classifyMember,
  classifyTransport,
  findInnerError,
} from "../../../functions/core/classify/classify.ts";
import { requestedCooldownMs, retryAfterMs } from "../../../functions/core/classify/retry-after.ts";
import type {
  CallInfo,
  ClassifyContext,
  Verdict,
} from "../../../functions/core/classify/verdict.ts";
import { isEnvelope, isJsonRpcAnswer } from "../../../functions/core/jsonrpc/envelope.ts";

/**
 * A whole upstream answer judged at its edges (docs/behaviour.md §4.1–§4.5): statuses at the
 * bounds of their ranges, hints read only from the body's start, the text a verdict quotes,
 * what counts as an envelope, and the member rules that turn an error into "behind" or an
 * inner error. The everyday table is classify.test.ts.
 */

const call = (method: string, params: unknown[] = []): CallInfo => ({ method, params });
const AT_HEAD: ClassifyContext = { quorumHead: 100 };
const ONE = [call("eth_blockNumber")];
const TWO = [call("eth_blockNumber"), call("eth_chainId")];
const verdictOf = (verdict: Verdict | "members") =>
  verdict === "members"
    ? "members"
    : verdict.outcome === "retry"
      ? `retry:${verdict.kind}/${verdict.reason}`
      : verdict.outcome;
const detailOf = (verdict: Verdict | "members") =>
  verdict !== "members" && "detail" in verdict ? verdict.detail : null;
const http = (status: number, body: string, calls = ONE) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  return classifyHttp(status, body, parsed, calls);
};
const rpc = (members: unknown) => JSON.stringify(members);

describe("statuses at the bounds of their ranges", () => {
  const answer = rpc({ jsonrpc: "2.0", id: 1, result: "0x1" });
  it.each<[number, string, string]>([
    [199, answer, "retry:http/connection"],
    [200, answer, "members"],
    [299, answer, "members"],
    [300, "<html>moved</html>", "retry:http/redirect"],
    [399, "<html>moved</html>", "retry:http/redirect"],
    [400, "bad request", "retry:http/transient"],
    [501, answer, "retry:http/connection"],
  ])("HTTP %i", (status, body, expected) => {
    expect(verdictOf(http(status, body))).toBe(expected);
  });

  it("a 2xx that is no JSON-RPC answer says so", () => {
    expect(detailOf(http(200, "<html>ok</html>"))).toBe("HTTP 200: not a JSON-RPC answer");
  });

  it("a hint is read from the body's first 1024 characters only", () => {
    expect(verdictOf(http(502, `${" ".repeat(1020)}rate limit`))).toBe("retry:http/connection");
    expect(verdictOf(http(502, `${" ".repeat(1000)}rate limit`))).toBe(
      "retry:rate_limit/rate_limit",
    );
  });
});

describe("the text a verdict quotes of a body", () => {
  it.each<[string, string, string]>([
    ["whitespace folded and trimmed", "  Bad\n\n  request  ", "Bad request"],
    ["120 characters kept whole", "b".repeat(120), "b".repeat(120)],
    ["121 cut", "b".repeat(121), `${"b".repeat(120)}…`],
    ["100 characters kept whole", "c".repeat(100), "c".repeat(100)],
    ["an empty body named", "", "(empty body)"],
    ["only the first 240 characters read", `${"\n".repeat(300)}error page`, "(empty body)"],
  ])("%s", (_name, body, quoted) => {
    expect(detailOf(http(400, body))).toBe(`HTTP 400: ${quoted}`);
  });

  it("a transport failure is named by its kind, once", () => {
    const named = (message: string) => classifyTransport({ kind: "timeout", message }).detail;
    expect(named("no answer in 5000 ms")).toBe("timeout: no answer in 5000 ms");
    expect(named("timeout: no answer")).toBe("timeout: no answer");
  });
});

describe("an HTTP 500 with JSON-RPC errors", () => {
  const error = (id: number, message: string) => ({
    jsonrpc: "2.0",
    id,
    error: { code: -32000, message },
  });

  it("every error transient: retried, the distinct details joined", () => {
    const body = rpc([
      error(1, "upstream connect error"),
      error(2, "upstream connect error"),
      { jsonrpc: "2.0", id: 3, result: "0x1" },
      error(4, "dial tcp: refused"),
    ]);
    const verdict = http(500, body, [...TWO, call("eth_gasPrice"), call("eth_call")]);
    expect(verdictOf(verdict)).toBe("retry:transient/transient");
    expect(detailOf(verdict)).toBe(
      "HTTP 500: -32000: upstream connect error; -32000: dial tcp: refused",
    );
  });

  it("one that is not: judged member by member", () => {
    const body = rpc([error(1, "upstream connect error"), error(2, "execution reverted")]);
    expect(verdictOf(http(500, body, TWO))).toBe("members");
  });
});

describe("what counts as a JSON-RPC answer", () => {
  it.each<[unknown, boolean]>([
    [{ jsonrpc: "1.0", id: 1, result: 1 }, true],
    [{ id: "a", result: 1 }, true],
    [{ id: null, error: {} }, true],
    [{ jsonrpc: "3.0", id: 1, result: 1 }, false],
    [{ jsonrpc: "", id: 1, result: 1 }, false],
    [{ id: {}, result: 1 }, false],
    [{ id: [1], result: 1 }, false],
  ])("%j: %s", (value, expected) => {
    expect(isEnvelope(value)).toBe(expected);
  });

  it("a batch with one member that is no envelope is no answer", () => {
    expect(isJsonRpcAnswer([{ jsonrpc: "2.0", id: 1, result: "0x1" }, 42])).toBe(false);
    expect(verdictOf(http(200, rpc([{ jsonrpc: "2.0", id: 1, result: "0x1" }, 42]), TWO))).toBe(
      "retry:http/transient",
    );
  });
});

describe("member rules after the error's own verdict", () => {
  const member = (error: unknown, info: CallInfo, context = AT_HEAD) =>
    classifyMember({ jsonrpc: "2.0", id: 1, error }, info, context);

  it.each<[string, CallInfo, string]>([
    ["geth's", call("eth_getFilterChanges", ["0x5"]), "filter not found"],
    ["Nethermind's", call("eth_getFilterLogs", ["0x5"]), "Filter with id: 5 does not exist"],
  ])(
    "a filter another provider installed (%s words): an inner error, said so",
    (_name, info, message) => {
      const verdict = member({ code: -32000, message }, info);
      expect(verdict).toEqual({
        outcome: "inner_error",
        detail: "filter not held by this provider (it lives on the one that installed it)",
      });
    },
  );

  it("a filter method's other errors, and other methods' 'filter not found', are judged as such", () => {
    expect(
      verdictOf(
        member(
          { code: -32000, message: "execution timeout" },
          call("eth_getFilterChanges", ["0x5"]),
        ),
      ),
    ).toBe("retry:timeout/timeout");
    expect(
      verdictOf(member({ code: -32000, message: "filter not found" }, call("eth_call"))),
    ).not.toBe("inner_error");
  });

  it("pruned state claimed for a recent block: the provider failing, said so", () => {
    const verdict = member(
      { code: -32000, message: "missing trie node" },
      call("eth_getBalance", ["0xabc", "latest"]),
    );
    expect(verdict).toEqual({
      outcome: "retry",
      kind: "no_result",
      reason: "transient",
      detail: "pruned history claimed for a block every node keeps (-32000: missing trie node)",
    });
  });

  it.each<[string, CallInfo, string]>([
    [
      "a transaction by hash: behind",
      call("eth_getTransactionReceipt", [`0x${"1".repeat(64)}`]),
      "behind",
    ],
    [
      "a block by hash: behind",
      call("eth_getBlockByHash", [`0x${"2".repeat(64)}`, false]),
      "behind",
    ],
    ["a call naming no hash: as judged", call("eth_call", [{}, "latest"]), "unclassified"],
  ])("'not found' about %s", (_name, info, expected) => {
    const verdict = member({ code: -32000, message: "transaction not found" }, info);
    expect(verdictOf(verdict)).toBe(expected);
    if (expected === "behind") {
      expect(detailOf(verdict)).toBe("no such hash here (-32000: transaction not found)");
    }
  });

  it.each<[string, unknown, string]>([
    [
      "geth's refusal of a range past its head, within the known head",
      { code: -32602, message: "block range extends beyond current head block" },
      "behind",
    ],
    [
      "another caller's error about such a range",
      { code: -32602, message: "invalid params" },
      "ok",
    ],
    [
      "the same words under another code",
      { code: -32000, message: "block range extends beyond current head block" },
      "unclassified",
    ],
  ])("%s", (_name, error, expected) => {
    const logs = call("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x10" }]);
    expect(verdictOf(member(error, logs))).toBe(expected);
  });

  it("a trace's pre-check failure stays one even beside pruned-state words", () => {
    const verdict = member(
      { code: -32000, message: "insufficient funds for gas * price + value: missing trie node" },
      call("debug_traceBlockByNumber", ["latest", {}]),
    );
    expect(verdictOf(verdict)).toBe("retry:transient/transient");
  });

  it("a rate limit that mentions syncing stays a rate limit", () => {
    const verdict = member(
      { code: -32000, message: "rate limit exceeded: node is syncing" },
      call("eth_getBalance", ["0xabc", "latest"]),
    );
    expect(verdictOf(verdict)).toBe("retry:rate_limit/rate_limit");
  });

  it("a built-in tracer's error is the node's; a tracer's own code, whatever it starts with, is the caller's", () => {
    const traced = (tracer: string) =>
      call("debug_traceCall", [
        { to: "0x0000000000000000000000000000000000000001" },
        "latest",
        { tracer },
      ]);
    const error = { code: -32000, message: "rate limit exceeded" };
    expect(verdictOf(member(error, traced("callTracer")))).toBe("retry:rate_limit/rate_limit");
    expect(verdictOf(member(error, traced("t={result:function(){throw 'x'}}")))).not.toMatch(
      /^retry/,
    );
  });
});

describe("inner_errors: the first 1024 bytes of the body", () => {
  it("counts bytes, not characters, when the body is not ASCII", () => {
    // 600 two-byte characters: the needle starts at byte 1200.
    expect(findInnerError(`${"é".repeat(600)}ошибка`, ["ошибка"])).toBeNull();
    expect(findInnerError(`${"é".repeat(400)}ошибка`, ["ошибка"])).toBe("ошибка");
    expect(findInnerError("fine", [])).toBeNull();
  });
});

describe("Retry-After counts on a 429 or a 503 only", () => {
  it.each<[number, number | null]>([
    [429, 30_000],
    [503, 30_000],
    [500, null],
    [200, null],
  ])("HTTP %i", (status, expected) => {
    expect(requestedCooldownMs(status, "30", 0)).toBe(expected);
  });

  it("a date must end with GMT", () => {
    const now = Date.parse("Fri, 31 Dec 1999 23:59:00 GMT");
    expect(retryAfterMs("Fri, 31 Dec 1999 23:59:59 GMT ", now)).toBe(59_000);
    expect(retryAfterMs("Fri, 31 Dec 1999 23:59:59 GMT+0100", now)).toBeNull();
    expect(retryAfterMs("Fri, 31 Dec 1999 23:59:59 GMTX", now)).toBeNull();
  });
});
