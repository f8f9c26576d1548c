import { keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { judgeResult } from "../../../functions/core/classify/classify-result.ts";
import type {
  CallInfo,
  ClassifyContext,
  Verdict,
} from "../../../functions/core/classify/verdict.ts";

/**
 * What a result must look like, method by method (docs/behaviour.md §4.5, §9): the shapes
 * at their edges, a null above or below the known head, a send answered with another hash, a
 * fee history cut short, and the text a verdict quotes. Whole answers: classify.test.ts.
 */

const call = (method: string, params: unknown[] = []): CallInfo => ({ method, params });
const AT_HEAD: ClassifyContext = { quorumHead: 100 };
const describeVerdict = (verdict: Verdict) =>
  verdict.outcome === "retry" ? `retry:${verdict.kind}/${verdict.reason}` : verdict.outcome;
const detailOf = (verdict: Verdict) => ("detail" in verdict ? verdict.detail : null);

describe("shapes", () => {
  it.each<[string, string, unknown, string]>([
    ["quantity", "eth_gasPrice", "0x3b9aca00", "ok"],
    ["quantity with text after", "eth_gasPrice", "0x1zz", "retry:no_result/transient"],
    ["quantity with text before", "eth_gasPrice", "gas 0x1", "retry:no_result/transient"],
    ["empty data", "eth_getCode", "0x", "ok"],
    ["data with text after", "eth_getCode", "0x00zz", "retry:no_result/transient"],
    ["data with text before", "eth_getCode", "code 0x00", "retry:no_result/transient"],
    ["a decimal version", "net_version", "137", "ok"],
    ["a hex version", "net_version", "0x1a", "ok"],
    ["a version with text after", "net_version", "137 (polygon)", "retry:no_result/transient"],
    ["a version with text before", "net_version", "v137", "retry:no_result/transient"],
    ["a version of 0x alone", "net_version", "0x", "retry:no_result/transient"],
    ["a version of 0x and no hex", "net_version", "0xzz", "retry:no_result/transient"],
  ])("%s", (_name, method, result, expected) => {
    expect(describeVerdict(judgeResult(result, call(method, ["0xabc", "latest"]), AT_HEAD))).toBe(
      expected,
    );
  });
});

describe("a null where a value is required", () => {
  it.each<[string, unknown[], string]>([
    ["about a block the head covers: behind", ["0xabc", "0x64"], "behind"],
    ["about a block above the head: no result", ["0xabc", "0x65"], "retry:no_result/transient"],
  ])("%s", (_name, params, expected) => {
    expect(describeVerdict(judgeResult(null, call("eth_getBalance", params), AT_HEAD))).toBe(
      expected,
    );
  });

  it("no result member at all is no result, said so", () => {
    const verdict = judgeResult(undefined, call("eth_gasPrice"), AT_HEAD);
    expect(detailOf(verdict)).toBe("eth_gasPrice returned no result where a value is required");
  });
});

describe("eth_sendRawTransaction answered with another hash", () => {
  const account = privateKeyToAccount(
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  );
  it("is no answer for the caller; its own hash, in any case, is", async () => {
    const raw = await account.signTransaction({
      chainId: 1,
      nonce: 0,
      to: "0x70997970c51812dc3a010c7d01b50e677d4c79c8",
      gas: 21000n,
      gasPrice: 1n,
    });
    const hash = keccak256(raw);
    const send = call("eth_sendRawTransaction", [raw]);
    const other = `0x${"ab".repeat(32)}`;
    const verdict = judgeResult(other, send, AT_HEAD);
    expect(describeVerdict(verdict)).toBe("retry:no_result/transient");
    expect(detailOf(verdict)).toBe(
      `eth_sendRawTransaction answered "${other}", not the transaction's hash ${hash}`,
    );
    expect(
      describeVerdict(judgeResult(hash.toUpperCase().replace("0X", "0x"), send, AT_HEAD)),
    ).toBe("ok");
  });
});

describe("eth_feeHistory that ends before the newest block asked for", () => {
  // Newest block 0x60 (96), at or below the head (100).
  const history = (oldest: string, blocks: number) => ({
    oldestBlock: oldest,
    gasUsedRatio: Array.from({ length: blocks }, () => 0.5),
    baseFeePerGas: [],
  });
  it.each<[string, unknown, string, unknown, string]>([
    ["4 blocks up to 0x60", 4, "0x60", history("0x5d", 4), "ok"],
    ["clamped at 0x5e: behind", 4, "0x60", history("0x5b", 4), "behind"],
    ["a count in decimal text", "4", "0x60", history("0x5b", 4), "behind"],
    ["a count in hex", "0x4", "0x60", history("0x5b", 4), "behind"],
    ["a count of 12 in decimal text", "12", "0x60", history("0x50", 12), "behind"],
    ["a count of 1", 1, "0x60", history("0x5e", 1), "behind"],
    ["a count of 0 tells nothing", 0, "0x60", history("0x5e", 1), "ok"],
    ["a count that is no number tells nothing", "4 blocks", "0x60", history("0x5b", 4), "ok"],
    ["a count in hex with text after tells nothing", "0x4zz", "0x60", history("0x5b", 4), "ok"],
    ["a count in hex with text before tells nothing", "n0x4", "0x60", history("0x5b", 4), "ok"],
    [
      "a count in hex with two characters before tells nothing",
      "zz0x4",
      "0x60",
      history("0x5b", 4),
      "ok",
    ],
    ["a count of two hex digits", "0x0c", "0x60", history("0x50", 12), "behind"],
    ["a count with a space before tells nothing", " 4", "0x60", history("0x5b", 4), "ok"],
    ["a count with a space after tells nothing", "4 ", "0x60", history("0x5b", 4), "ok"],
    ["a newest block above the head tells nothing", 4, "0x70", history("0x5b", 4), "ok"],
    ["an oldest block with text after tells nothing", 4, "0x60", history("0x5bzz", 4), "ok"],
    ["an oldest block with text before tells nothing", 4, "0x60", history("b0x5b", 4), "ok"],
    [
      "an oldest block with two characters before tells nothing",
      4,
      "0x60",
      history("zz0x5b", 4),
      "ok",
    ],
  ])("%s", (_name, count, newest, result, expected) => {
    const verdict = judgeResult(result, call("eth_feeHistory", [count, newest, []]), AT_HEAD);
    expect(describeVerdict(verdict)).toBe(expected);
    if (expected === "behind") {
      expect(detailOf(verdict)).toMatch(
        /^eth_feeHistory ended at block \d+, before the newest block asked for, at or below the known head 100$/,
      );
    }
  });
});

describe("the text a verdict quotes", () => {
  it.each<[unknown, string]>([
    ["  You've   been\n rate limited  ", `"You've been rate limited"`],
    ["r".repeat(80), `"${"r".repeat(80)}"`],
    ["r".repeat(81), `"${"r".repeat(80)}…"`],
    [["0x1"], "an array"],
    [42, "number"],
  ])("%j is quoted as %s", (result, quoted) => {
    expect(detailOf(judgeResult(result, call("eth_gasPrice"), AT_HEAD))).toBe(
      `eth_gasPrice returned ${quoted} where quantity is required`,
    );
  });
});
