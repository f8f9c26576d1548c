import { describe, expect, it } from "vitest";
import { pieceLogsOf } from "../../../../functions/core/request/logs/logs-merge.ts";
import {
  logQueryOf,
  piecesNeeded,
  unreadableToBlock,
} from "../../../../functions/core/request/logs/logs-range.ts";

/**
 * Cutting a log query and reading its pieces' logs, at the edges (docs/behaviour.md §12): a
 * `toBlock` no number can hold, how many pieces a range makes, a log at a piece's last block,
 * numbers written loosely, and the bytes an answer takes escaped. The everyday cases are in
 * logs-range.test.ts.
 */

describe("unreadableToBlock: a toBlock in hex that is no block number", () => {
  const logs = (toBlock: unknown) => [{ fromBlock: "0x1", toBlock }];
  it.each<[string, string, unknown, string | null]>([
    ["2^53 - 1 is a number", "eth_getLogs", logs("0x1fffffffffffff"), null],
    ["2^53 is past the safe integers", "eth_getLogs", logs("0x20000000000000"), "0x20000000000000"],
    ["16 digits of zeros is block 0", "eth_getLogs", logs(`0x${"0".repeat(16)}`), null],
    [
      "17 digits, even of zeros, is too long",
      "eth_getLogs",
      logs(`0x${"0".repeat(16)}1`),
      `0x${"0".repeat(16)}1`,
    ],
    ["a tag", "eth_getLogs", logs("latest"), null],
    ["not hex at the start", "eth_getLogs", logs("x0x20000000000000"), null],
    ["not hex at the end", "eth_getLogs", logs("0x20000000000000zz"), null],
    ["no digits", "eth_getLogs", logs("0x"), null],
    ["another method", "eth_newFilter", logs("0x20000000000000"), null],
    ["no filter object", "eth_getLogs", ["0x20000000000000"], null],
    ["params not a list", "eth_getLogs", { toBlock: "0x20000000000000" }, null],
  ])("%s", (_name, method, params, expected) => {
    expect(unreadableToBlock(method, params)).toBe(expected);
  });
});

describe("logQueryOf: tags other than earliest are not numbers", () => {
  it.each(["latest", "safe", "finalized", "pending"])("fromBlock %s", (tag) => {
    expect(logQueryOf("eth_getLogs", [{ fromBlock: tag, toBlock: "0x5" }])).toBeNull();
  });
});

describe("piecesNeeded: counted without cutting", () => {
  it.each<[number, number, number, number]>([
    [1000, 2500, 1000, 2],
    [1500, 1999, 1000, 1],
    [0, 9, 10, 1],
    [5, 25, 10, 3],
    [7, 7, 0.5, 1],
  ])("%i to %i by %d: %i", (from, to, size, expected) => {
    expect(piecesNeeded({ from, to }, size)).toBe(expected);
  });
});

describe("pieceLogsOf at the edges", () => {
  const answer = (...logs: string[]) => `{"jsonrpc":"2.0","id":3,"result":[${logs.join(",")}]}`;
  const log = (blockNumber: string, logIndex = "0x0", extra = "") =>
    `{"blockNumber":"${blockNumber}","logIndex":"${logIndex}"${extra}}`;

  it("keeps a log at the piece's first and last block, drops one past either", () => {
    const piece = pieceLogsOf(answer(log("0x9"), log("0xa"), log("0x13"), log("0x14")), {
      from: 10,
      to: 19,
    });
    expect(piece?.logs.map((placed) => placed.block)).toEqual([10, 19]);
  });

  it.each([
    ["a block number with text before it", log("zz0x1")],
    ["a block number with text after it", log("0x1zz")],
    ["a log index over 16 digits", log("0x1", `0x${"1".repeat(17)}`)],
    ["a log that is not JSON", "{blockNumber:0x1}"],
  ])("%s is not a log", (_name, text) => {
    expect(pieceLogsOf(answer(text), { from: 0, to: 9 })).toBeNull();
  });

  it("counts a quote or a backslash once more escaped, a control character five more, a space none", () => {
    const text = log("0x1", "0x0", ',"data":"a\\\\b",\n"x": 1');
    const piece = pieceLogsOf(answer(text), { from: 0, to: 9 });
    const quotes = text.match(/"/g)?.length ?? 0;
    expect(piece?.bytes).toBe(text.length + 1);
    expect(piece?.escapedBytes).toBe(text.length + quotes + 2 + 5 + 1);
  });
});
