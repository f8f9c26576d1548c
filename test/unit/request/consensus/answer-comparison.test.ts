import { describe, expect, it } from "vitest";
import {
  canonicalText,
  ignoredPaths,
} from "../../../../functions/core/request/consensus/canonical.ts";
import { type Vote, voteOf } from "../../../../functions/core/request/consensus/votes.ts";

/**
 * Answers compared as values (docs/behaviour.md §17.2): what two providers' answers must share
 * to agree, and what may differ between honest nodes.
 */

const same = (
  method: string,
  a: unknown,
  b: unknown,
  configured: Record<string, string[]> = {},
) => {
  const paths = ignoredPaths(method, configured);
  return canonicalText(a, method, paths) === canonicalText(b, method, paths);
};

const RECEIPT = {
  blockHash: "0xAB",
  blockNumber: "0x10",
  status: "0x1",
  gasUsed: "0x5208",
  logs: [{ address: "0xC0FFEE", data: "0x0001", logIndex: "0x0", blockTimestamp: "0x65" }],
  blockTimestamp: "0x65",
};

describe("canonical comparison", () => {
  it.each<[string, string, unknown, unknown, boolean]>([
    ["key order", "eth_getBlockByNumber", { a: "0x1", b: "0x2" }, { b: "0x2", a: "0x1" }, true],
    ["hex case", "eth_getTransactionByHash", { hash: "0xABCD" }, { hash: "0xabcd" }, true],
    ["a quantity's leading zeros", "eth_getBalance", "0x0001", "0x1", true],
    ["zero written as 0x00", "eth_getBalance", "0x00", "0x0", true],
    ["a padded r", "eth_getTransactionByHash", { r: "0x00ab" }, { r: "0xab" }, true],
    ["one wei", "eth_getBalance", "0x10", "0x11", false],
    [
      "data keeps its leading zeros",
      "eth_getTransactionByHash",
      { input: "0x0001" },
      { input: "0x01" },
      false,
    ],
    ["a storage word keeps its bytes", "eth_getStorageAt", "0x01", "0x0001", false],
    [
      "null and absent say the same",
      "eth_getTransactionReceipt",
      { to: null, a: "0x1" },
      { a: "0x1" },
      true,
    ],
    [
      "a flipped status",
      "eth_getTransactionReceipt",
      RECEIPT,
      { ...RECEIPT, status: "0x0" },
      false,
    ],
    [
      "blockTimestamp in a receipt and its logs (geth 1.16 adds it)",
      "eth_getTransactionReceipt",
      RECEIPT,
      {
        ...RECEIPT,
        blockTimestamp: undefined,
        logs: [{ ...RECEIPT.logs[0], blockTimestamp: undefined }],
      },
      true,
    ],
    [
      "OP-stack L1 fee fields",
      "eth_getTransactionReceipt",
      { ...RECEIPT, l1Fee: "0x1", l1GasUsed: "0x2", l1GasPrice: "0x3", l1FeeScalar: "0.684" },
      { ...RECEIPT, l1Fee: "0x9", l1GasUsed: "0x8", l1GasPrice: "0x7", l1FeeScalar: "1" },
      true,
    ],
    [
      "the same fields in every receipt of a block",
      "eth_getBlockReceipts",
      [RECEIPT, { ...RECEIPT, l1Fee: "0x1" }],
      [{ ...RECEIPT, blockTimestamp: "0x99" }, RECEIPT],
      true,
    ],
    [
      "a log dropped",
      "eth_getLogs",
      [RECEIPT.logs[0], { ...RECEIPT.logs[0], logIndex: "0x1" }],
      [RECEIPT.logs[0]],
      false,
    ],
    [
      "logs' blockTimestamp",
      "eth_getLogs",
      [RECEIPT.logs[0]],
      [{ ...RECEIPT.logs[0], blockTimestamp: "0x1" }],
      true,
    ],
    [
      "a block's totalDifficulty",
      "eth_getBlockByNumber",
      { number: "0x1", totalDifficulty: "0x0" },
      { number: "0x1" },
      true,
    ],
    [
      "a field ignored for receipts counts in another method",
      "eth_getBlockByNumber",
      { l1Fee: "0x1" },
      { l1Fee: "0x2" },
      false,
    ],
    [
      "a field of the same name not at the path",
      "eth_getTransactionReceipt",
      { inner: { blockTimestamp: "0x1" } },
      { inner: { blockTimestamp: "0x2" } },
      false,
    ],
    [
      "array order matters",
      "eth_getLogs",
      [{ a: "0x1" }, { a: "0x2" }],
      [{ a: "0x2" }, { a: "0x1" }],
      false,
    ],
  ])("%s", (_, method, a, b, expected) => {
    expect(same(method, a, b)).toBe(expected);
  });

  it("a network's ignore_fields add to the defaults", () => {
    const configured = { eth_call: ["*"] };
    expect(same("eth_getTransactionReceipt", { ...RECEIPT, extra: "0x1" }, RECEIPT)).toBe(false);
    expect(
      same("eth_getTransactionReceipt", { ...RECEIPT, extra: "0x1" }, RECEIPT, {
        eth_getTransactionReceipt: ["extra"],
      }),
    ).toBe(true);
    expect(same("eth_call", { x: "0x1" }, { x: "0x2" }, configured)).toBe(true);
  });

  it("a result nested past the bound is not comparable, and never throws", () => {
    let deep: unknown = "0x1";
    for (let level = 0; level < 10_000; level++) deep = [deep];
    expect(canonicalText(deep, "eth_call", [])).toBeNull();
  });
});

const vote = (member: unknown, method = "eth_call"): Vote => voteOf(member, method, []);
const revert = (code: number, message: string, data?: unknown) => ({
  error: data === undefined ? { code, message } : { code, message, data },
});
const DATA = "0x08c379a00000000000000000000000000000000000000000000000000000000000000020";

describe("votes by class", () => {
  it.each<[string, unknown, Vote["kind"]]>([
    ["a result", { result: "0x1" }, "value"],
    ["a null result: not found yet", { result: null }, "absent"],
    ["geth/anvil: code 3", revert(3, "execution reverted: no", DATA), "revert"],
    [
      "Nethermind: -32015 VM execution error",
      revert(-32015, "VM execution error.", "revert: no"),
      "revert",
    ],
    [
      "HyperEVM: -32603 InvalidTransaction(Revert(...))",
      revert(-32603, "InvalidTransaction(Revert(0x08c3))"),
      "revert",
    ],
    ["Besu: -32000 Execution reverted", revert(-32000, "Execution reverted", DATA), "revert"],
    ["out of gas", revert(-32000, "out of gas"), "failed"],
    ["pruned state", revert(-32000, "missing trie node 1234 (path )"), "absent"],
    ["header not found", revert(-32000, "header not found"), "absent"],
    ["invalid params say nothing of the chain", revert(-32602, "invalid argument 0"), "none"],
    ["an unclassified error", revert(-32000, "leveldb: closed"), "none"],
    [
      "the gateway's own over-the-limit answer",
      revert(
        -32603,
        "the upstream answer is over the limit of 10 bytes (max_response_bytes); ask for less",
      ),
      "none",
    ],
    ["neither result nor error", { id: 1 }, "none"],
    ["not an object", "0x1", "none"],
  ])("%s", (_, member, kind) => {
    expect(vote(member).kind).toBe(kind);
  });

  it("a revert is the same vote whatever the code and wording, its data compared when hex", () => {
    const geth = vote(revert(3, "execution reverted: no", DATA));
    const rewritten = vote(
      revert(-32603, "VM execution error: reverted", DATA.toUpperCase().replace("0X", "0x")),
    );
    expect(geth).toEqual(rewritten);
    expect(vote(revert(3, "execution reverted", "0x1234"))).not.toEqual(geth);
    expect(vote(revert(-32015, "VM execution error.", "revert: no"))).toMatchObject({
      kind: "revert",
      data: false,
    });
  });
});
