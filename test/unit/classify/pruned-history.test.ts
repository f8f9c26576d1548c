import { describe, expect, it } from "vitest";
import { classifyHttp, classifyMember } from "../../../functions/core/classify/classify.ts";
import {
  oldestNamedIn,
  PRUNED_HISTORY_ROWS,
} from "../../../functions/core/classify/pruned-history.ts";
import type { CallInfo } from "../../../functions/core/classify/verdict.ts";

/**
 * The pruned-history phrases (docs/behaviour.md §16.4), row by row as each client or provider
 * words it (functions/core/classify/pruned-history.ts names the source of every row): each is
 * history, judged so on an old block, whatever code it comes with; none is judged so when its
 * words are the caller's, echoed back.
 */

const ADDRESS = "0x00000000000000000000000000000000000000aa";
const OLD: CallInfo = { method: "eth_getBalance", params: [ADDRESS, "0x64"] };
const HEAD = { quorumHead: 10_000 };
const member = (code: number, message: string) => ({
  jsonrpc: "2.0",
  id: 1,
  error: { code, message },
});

describe("every row of the phrases table is pruned history about an old block", () => {
  it.each(PRUNED_HISTORY_ROWS.map((row) => [row.client, row.example, row.source] as const))(
    "%s: %s (%s)",
    (_, example) => {
      for (const code of [-32000, -32002, -32603, 27, 4444]) {
        expect(classifyMember(member(code, example), OLD, HEAD).outcome, String(code)).toBe(
          "pruned",
        );
      }
    },
  );

  it("every row names its source", () => {
    for (const row of PRUNED_HISTORY_ROWS) expect(row.source.length).toBeGreaterThan(8);
    expect(new Set(PRUNED_HISTORY_ROWS.map((row) => row.example)).size).toBe(
      PRUNED_HISTORY_ROWS.length,
    );
  });

  it.each([
    ["EIP-4444's code alone (geth, reth)", 4444, "something else entirely"],
    ["reth's words at -32603", -32603, "state at block #100 is pruned"],
    ["Nethermind at -32002", -32002, "No state available for block 100 (0xabc)"],
    [
      "PublicNode-like -32602 with archive words",
      -32602,
      "project ID is required to access archive state",
    ],
  ])("%s", (_, code, message) => {
    expect(classifyMember(member(code, message), OLD, HEAD).outcome).toBe("pruned");
  });
});

describe("what is not pruned history", () => {
  it.each([
    [
      "reth: a block not executed yet is a node behind",
      "state at block #9999 is not available, block has not been executed yet (latest executed: #9990)",
      "behind",
    ],
    ["geth: header not found is a node behind", "header not found", "behind"],
    ["a revert", "execution reverted: missing allowance", "ok"],
  ])("%s", (_, message, outcome) => {
    expect(classifyMember(member(-32000, message), OLD, HEAD).outcome).toBe(outcome);
  });

  it("regression: the caller's words echoed back ('invalid argument: missing trie node') teach nothing and clear the provider", () => {
    const call: CallInfo = { method: "eth_getBalance", params: ["missing trie node", "0x64"] };
    const verdict = classifyMember(
      member(-32602, 'invalid argument 0: hex string "missing trie node"'),
      call,
      HEAD,
    );
    expect(verdict.outcome).toBe("ok");
  });

  it("regression: a JS tracer's error is all the caller's words, even pruned ones", () => {
    const call: CallInfo = {
      method: "debug_traceCall",
      params: [{ to: ADDRESS }, "0x64", { tracer: "{ fault: function() { throw 'x' } }" }],
    };
    expect(classifyMember(member(-32000, "missing trie node 12 (path )"), call, HEAD).outcome).toBe(
      "ok",
    );
  });

  it("a pruned claim about latest, or a block among the 32 recent ones, is a bad answer", () => {
    for (const params of [
      [ADDRESS, "latest"],
      [ADDRESS, "0x2706"], // head − 10
    ]) {
      const verdict = classifyMember(
        member(-32000, "missing trie node 12 (path )"),
        {
          method: "eth_getBalance",
          params,
        },
        HEAD,
      );
      expect(verdict).toMatchObject({ outcome: "retry", kind: "no_result" });
    }
  });
});

describe("the oldest block an answer names", () => {
  it.each([
    ["pruned history unavailable: requested 5, earliest available 100", 100],
    ["Unknown state. First available state is 14875359", 14875359],
    [
      "old data not available due to pruning: requested block 14000000, blocks are available from block 15537393",
      15537393,
    ],
    ["block number 100 is before the oldest allowed block number 2000 (window of 32 blocks)", 2000],
    ["height 100 is not available, lowest height is 2000", 2000],
    ["missing trie node 5f3a (path )", null],
  ])("%s → %s", (message, oldest) => {
    expect(oldestNamedIn(message)).toBe(oldest);
    const verdict = classifyMember(member(-32000, message), OLD, HEAD);
    expect(verdict.outcome).toBe("pruned");
    expect(verdict.outcome === "pruned" ? (verdict.oldest ?? null) : "not pruned").toBe(oldest);
  });
});

describe("Infura's 403 for archive state is history, not a forbidden provider", () => {
  it("regression: a 403 with 'project ID does not have access to archive state' blacklisted the provider for 24 h; now its members are judged", () => {
    const body = JSON.stringify(member(-32002, "project ID does not have access to archive state"));
    const whole = classifyHttp(403, body, JSON.parse(body), [OLD]);
    expect(whole).toBe("members");
    expect(classifyMember(JSON.parse(body), OLD, HEAD).outcome).toBe("pruned");
  });

  it("a 403 with any other body is still forbidden", () => {
    const body = JSON.stringify(member(-32002, "invalid project id"));
    expect(classifyHttp(403, body, JSON.parse(body), [OLD])).toMatchObject({
      outcome: "retry",
      reason: "forbidden",
    });
  });
});
