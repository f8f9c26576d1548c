import { describe, expect, it } from "vitest";
import {
  arrayElementSpans,
  memberValueSpan,
  withId,
} from "../../../functions/core/jsonrpc/json-raw.ts";
import {
  errorResponse,
  isCall,
  methodPermitted,
  parseRequest,
} from "../../../functions/core/jsonrpc/jsonrpc.ts";

const limits = { maxBodyBytes: 1024, maxBatch: 3 };

describe("parseRequest: gateway errors of docs/behaviour.md §2", () => {
  it.each([
    ["body not JSON", "{nope", -32700, 400],
    ["empty body", "", -32700, 400],
    ["a JSON string", '"eth_chainId"', -32600, 400],
    ["a number", "42", -32600, 400],
    ["null", "null", -32600, 400],
    ["object without method", '{"jsonrpc":"2.0","id":1}', -32600, 400],
    ["method not a string", '{"jsonrpc":"2.0","id":1,"method":7}', -32600, 400],
    ["wrong jsonrpc version", '{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}', -32600, 400],
    // geth and anvil both answer -32600 without it (docs/behaviour.md §2.5).
    ["no jsonrpc member", '{"id":1,"method":"eth_chainId","params":[]}', -32600, 400],
    ["jsonrpc null", '{"jsonrpc":null,"id":1,"method":"eth_chainId"}', -32600, 400],
    ["jsonrpc a number", '{"jsonrpc":2.0,"id":1,"method":"eth_chainId"}', -32600, 400],
    ["params a string", '{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}', -32600, 400],
    ["id an object", '{"jsonrpc":"2.0","id":{},"method":"m"}', -32600, 400],
    [
      "duplicate method (upstreams disagree on which wins)",
      '{"jsonrpc":"2.0","id":1,"method":"admin_peers","method":"eth_call"}',
      -32600,
      400,
    ],
    ["duplicate id", '{"jsonrpc":"2.0","id":{"x":1},"id":1,"method":"eth_chainId"}', -32600, 400],
    [
      "lone surrogate in params",
      '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":["\\ud800"]}',
      -32600,
      400,
    ],
    ["method with a newline", '{"jsonrpc":"2.0","id":1,"method":"admin_\\npeers"}', -32600, 400],
    ["method with a space", '{"jsonrpc":"2.0","id":1,"method":"eth call"}', -32600, 400],
    ["empty batch", "[]", -32600, 400],
    [
      "batch over max_batch",
      JSON.stringify(Array(4).fill({ jsonrpc: "2.0", id: 1, method: "m" })),
      -32600,
      400,
    ],
    [
      "body over max_body_bytes",
      `{"jsonrpc":"2.0","id":1,"method":"m","params":["${"x".repeat(2000)}"]}`,
      -32600,
      400,
    ],
  ])("%s", (_name, body, code, status) => {
    const parsed = parseRequest(body, limits);
    expect(parsed.kind).toBe("error");
    if (parsed.kind !== "error") return;
    expect(parsed.code).toBe(code);
    expect(parsed.status).toBe(status);
    expect(() =>
      JSON.parse(errorResponse(parsed.rawId, parsed.code, parsed.message)),
    ).not.toThrow();
  });

  // geth and erigon decode a request with Go's encoding/json, which matches a member name to
  // its field in any case (and `ſ` as `s`, `K` as `k`), the last one winning: geth ran
  // `"Method"` or answered `"PARAMS"` while the gateway checked and cached `"method"` and
  // `"params"` (checked with Go 1.19's decoder and geth's jsonrpcMessage struct).
  it.each([
    ["Method", '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","Method":"eth_sendTransaction"}'],
    ["METHOD alone", '{"jsonrpc":"2.0","id":1,"METHOD":"eth_sendTransaction"}'],
    [
      "PARAMS",
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xa","0x1"],"PARAMS":["0xb","0x1"]}',
    ],
    [
      "param\u017f (long s)",
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xa"],"param\u017f":["0xb"]}',
    ],
    ["Id", '{"jsonrpc":"2.0","id":1,"Id":2,"method":"eth_chainId"}'],
    ["\u0131d (dotless i)", '{"jsonrpc":"2.0","id":1,"\u0131d":2,"method":"eth_chainId"}'],
    ["JsonRpc", '{"jsonrpc":"2.0","JsonRpc":"1.0","id":1,"method":"eth_chainId"}'],
    [
      "escaped in the text",
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","\\u004dethod":"admin_peers"}',
    ],
  ])(
    "regression: a member named %s is another spelling of a significant one: refused, as nodes read it differently",
    (_name, body) => {
      const single = parseRequest(body, limits);
      expect(single).toMatchObject({ kind: "error", code: -32600, status: 400 });
      expect(single.kind === "error" && single.message).toContain("another spelling of");
      const batch = parseRequest(
        `[${body},{"jsonrpc":"2.0","id":9,"method":"eth_chainId"}]`,
        limits,
      );
      expect(batch.kind === "batch" && batch.members.map(isCall)).toEqual([false, true]);
    },
  );

  it("members that only look like the significant ones are left alone (the node reads or refuses them)", () => {
    for (const name of ["methods", "param", "ids", "method ", "jsonrpc2"]) {
      const parsed = parseRequest(
        `{"jsonrpc":"2.0","id":1,"method":"eth_chainId",${JSON.stringify(name)}:1}`,
        limits,
      );
      expect(parsed.kind).toBe("single");
    }
  });

  it("keeps the caller's id on an invalid single request", () => {
    const parsed = parseRequest('{"jsonrpc":"2.0","id":"abc","method":5}', limits);
    expect(parsed.kind === "error" && parsed.rawId).toBe('"abc"');
  });

  it("says the limit in the message", () => {
    const parsed = parseRequest(JSON.stringify(Array(4).fill({ id: 1, method: "m" })), limits);
    expect(parsed.kind === "error" && parsed.message).toContain("max_batch");
  });

  it("regression: a method name over 128 characters was refused as if its characters were wrong; the message now names the length limit", () => {
    const parsed = parseRequest(`{"jsonrpc":"2.0","id":1,"method":"${"m".repeat(129)}"}`, {
      maxBodyBytes: 4096,
      maxBatch: 3,
    });
    expect(parsed.kind === "error" && parsed.message).toContain("at most 128");
  });
});

describe("parseRequest: valid requests", () => {
  it("a single call keeps its raw id text and params", () => {
    const parsed = parseRequest(
      '{ "jsonrpc": "2.0", "id": 1e0, "method": "eth_getBalance", "params": ["0x1", "latest"] }',
      limits,
    );
    expect(parsed.kind).toBe("single");
    if (parsed.kind !== "single") return;
    expect(parsed.call.rawId).toBe("1e0");
    expect(parsed.call.method).toBe("eth_getBalance");
    expect(parsed.call.params).toEqual(["0x1", "latest"]);
  });

  it('regression: "params": null is no params, as geth and anvil read it (it was HTTP 400)', () => {
    const parsed = parseRequest(
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":null}',
      limits,
    );
    expect(parsed.kind).toBe("single");
    if (parsed.kind !== "single") return;
    expect(parsed.call.params).toBeUndefined();
    // Forwarded as written: both nodes take it.
    expect(parsed.call.raw).toBe('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":null}');
  });

  it('regression: a call without "jsonrpc" is refused with its id, naming the member (it was forwarded)', () => {
    const parsed = parseRequest('{"id":7,"method":"eth_chainId"}', limits);
    expect(parsed).toMatchObject({ kind: "error", code: -32600, rawId: "7", status: 400 });
    expect(parsed.kind === "error" && parsed.message).toBe(
      'invalid request: "jsonrpc": "2.0" is missing',
    );
    const batch = parseRequest(
      '[{"id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}]',
      limits,
    );
    expect(batch.kind === "batch" && batch.members.map((member) => isCall(member))).toEqual([
      false,
      true,
    ]);
  });

  it("a notification has no id", () => {
    const parsed = parseRequest('{"jsonrpc":"2.0","method":"eth_chainId"}', limits);
    expect(parsed.kind === "single" && parsed.call.rawId).toBeNull();
  });

  it("a batch keeps order and isolates an invalid member", () => {
    const parsed = parseRequest(
      '[{"jsonrpc":"2.0","id":"a","method":"x"}, 5, {"jsonrpc":"2.0","id":null,"method":"y"}]',
      limits,
    );
    expect(parsed.kind).toBe("batch");
    if (parsed.kind !== "batch") return;
    expect(parsed.members.map((member) => isCall(member))).toEqual([true, false, true]);
    const [first, , third] = parsed.members;
    expect(first && isCall(first) && first.raw).toBe('{"jsonrpc":"2.0","id":"a","method":"x"}');
    expect(third && isCall(third) && third.rawId).toBe("null");
  });

  it("a surrogate pair (valid Unicode) is accepted", () => {
    const parsed = parseRequest(
      '{"jsonrpc":"2.0","id":1,"method":"m","params":["\\ud83d\\ude00"]}',
      limits,
    );
    expect(parsed.kind).toBe("single");
  });

  it("duplicates of other members are the upstream's business", () => {
    const parsed = parseRequest(
      '{"jsonrpc":"2.0","id":1,"method":"m","extra":1,"extra":2}',
      limits,
    );
    expect(parsed.kind).toBe("single");
  });

  it("prototype-pollution keys are plain data", () => {
    const parsed = parseRequest(
      '{"jsonrpc":"2.0","id":1,"method":"m","__proto__":{"polluted":1}}',
      limits,
    );
    expect(parsed.kind).toBe("single");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("method deny and allow lists", () => {
  const deny = ["admin_*", "personal_*", "miner_*", "engine_*", "debug_setHead"];
  it.each([
    ["eth_call", undefined, true],
    ["admin_peers", undefined, false],
    ["personal_sign", undefined, false],
    ["engine_newPayloadV3", undefined, false],
    ["debug_setHead", undefined, false],
    ["debug_traceTransaction", undefined, true],
    ["eth_call", ["eth_*"], true],
    ["net_version", ["eth_*"], false],
    ["admin_peers", ["*"], false],
  ] as const)("%s with allow %j → %s", (method, allow, permitted) => {
    expect(methodPermitted(method, deny, allow)).toBe(permitted);
  });
});

describe("raw JSON surgery keeps bytes", () => {
  it.each([
    ['{"jsonrpc":"2.0","id":1,"result":"0x1"}', '"x"', '{"jsonrpc":"2.0","id":"x","result":"0x1"}'],
    ['{ "id" : 7 , "result": {"id": 9} }', "8", '{ "id" : 8 , "result": {"id": 9} }'],
    ['{"result":"a\\"id\\":1","id":2}', "3", '{"result":"a\\"id\\":1","id":3}'],
    ['{"jsonrpc":"2.0","result":1}', "5", '{"id":5,"jsonrpc":"2.0","result":1}'],
    ['{"id":123456789012345678901234567890,"result":1}', "1", '{"id":1,"result":1}'],
  ])("withId(%s, %s)", (text, id, expected) => {
    expect(withId(text, id)).toBe(expected);
  });

  it("leaves the text untouched when the id already matches", () => {
    const text = '{"jsonrpc":"2.0", "id":1, "result":1.000000000000000000001}';
    expect(withId(text, "1")).toBe(text);
  });

  it("splits a batch answer into member texts", () => {
    const body = ' [ {"id":0,"result":[1,{"a":"]"}]} ,{"id":1,"error":{"code":1}}] ';
    const spans = arrayElementSpans(body);
    expect(spans.map((span) => body.slice(span.start, span.end))).toEqual([
      '{"id":0,"result":[1,{"a":"]"}]}',
      '{"id":1,"error":{"code":1}}',
    ]);
  });

  it("reads the last of duplicate members, as JSON.parse does", () => {
    const body = '{"id":1,"result":2,"id":3}';
    const span = memberValueSpan(body, "id");
    expect(span && body.slice(span.start, span.end)).toBe("3");
    expect(JSON.parse(withId(body, "9")).id).toBe(9);
  });

  it("finds a top-level member only", () => {
    const body = '{"result":{"id":5},"id":6}';
    const span = memberValueSpan(body, "id");
    expect(span && body.slice(span.start, span.end)).toBe("6");
  });
});
