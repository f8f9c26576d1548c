import { describe, expect, it } from "vitest";
import { nestingDepth } from "../../../functions/core/jsonrpc/json-raw.ts";
import { parseRequest } from "../../../functions/core/jsonrpc/jsonrpc.ts";

/** Absurd nesting is refused before anything goes upstream (docs/behaviour.md §8). */

const limits = { maxBodyBytes: 1_048_576, maxBatch: 10, maxDepth: 64 };
const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const call = (params: string, id = "7") =>
  `{"jsonrpc":"2.0","id":${id},"method":"eth_call","params":${params}}`;

describe("nestingDepth", () => {
  it.each([
    ["1", 0],
    ['"[[[{{{"', 0],
    ["[]", 1],
    ['{"a":[{"b":"]]]"}]}', 3],
    [nested(5000), 5000],
  ])("%s → %i", (text, depth) => {
    expect(nestingDepth(text)).toBe(depth);
  });
});

describe("max_json_depth", () => {
  it("accepts a call nested exactly to the limit", () => {
    expect(parseRequest(call(nested(63)), limits).kind).toBe("single");
  });

  it("regression: params nested 5,000 levels deep were forwarded to every provider", () => {
    const parsed = parseRequest(call(nested(5000)), limits);
    expect(parsed).toEqual({
      kind: "error",
      code: -32600,
      message:
        "invalid request: JSON nested 5001 levels deep, over the limit of 64 (max_json_depth)",
      rawId: "7",
      status: 400,
    });
  });

  it("refuses only the too-deep member of a batch, with its id", () => {
    const parsed = parseRequest(`[${call("[]", "1")},${call(nested(100), '"deep"')}]`, limits);
    expect(parsed.kind).toBe("batch");
    if (parsed.kind !== "batch") return;
    expect(parsed.members.map((member) => ("method" in member ? "call" : member.rawId))).toEqual([
      "call",
      '"deep"',
    ]);
  });
});
