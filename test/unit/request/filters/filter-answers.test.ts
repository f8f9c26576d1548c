import { describe, expect, it } from "vitest";
import {
  headersOfBatch,
  logsOfAnswer,
  removedLogText,
} from "../../../../functions/core/request/filters/filter-answers.ts";
import type { LogCriteria } from "../../../../functions/core/request/filters/filter-criteria.ts";

/**
 * What a filter reads from its own calls' answers (docs/behaviour.md §14): logs inside the
 * range and selected by the criteria (geth's matching rule), once each and in chain order;
 * headers by the number asked for. Pure, table-driven.
 */

const A = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const B = "0x000000000000000000000000000000000000dead";
const T1 = `0x${"1".repeat(64)}`;
const T2 = `0x${"2".repeat(64)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const log = (block: number, index: number, address = A, topics = [T1, T2]) =>
  JSON.stringify({
    address,
    topics,
    data: "0x",
    blockNumber: `0x${block.toString(16)}`,
    blockHash: hash(block),
    logIndex: `0x${index.toString(16)}`,
    removed: false,
  });
const answer = (logs: string[]) => `{"jsonrpc":"2.0","id":1,"result":[${logs.join(",")}]}`;
const ANY: LogCriteria = { address: null, topics: null };

describe("the logs of an answer", () => {
  it("in chain order, each (block, log index) once, the provider's text kept, only inside the range", () => {
    const texts = [log(5, 1), log(4, 0), log(5, 1), log(5, 0), log(9, 0), log(3, 0)];
    const logs = logsOfAnswer(answer(texts), { from: 4, to: 5 }, ANY);
    expect(logs?.map((one) => [one.block, one.index])).toEqual([
      [4, 0],
      [5, 0],
      [5, 1],
    ]);
    expect(logs?.[0]?.text).toBe(log(4, 0));
  });

  it.each<[string, LogCriteria, string, boolean]>([
    ["any address", ANY, log(1, 0, B), true],
    ["the address", { address: A, topics: null }, log(1, 0), true],
    [
      "the address in another case",
      { address: A.toUpperCase().replace("0X", "0x"), topics: null },
      log(1, 0),
      true,
    ],
    ["another address", { address: A, topics: null }, log(1, 0, B), false],
    ["one of the addresses", { address: [B, A], topics: null }, log(1, 0), true],
    ["an empty address list is any", { address: [], topics: null }, log(1, 0, B), true],
    ["the first topic", { address: null, topics: [T1] }, log(1, 0), true],
    ["another first topic", { address: null, topics: [T2] }, log(1, 0), false],
    ["any first topic, the second", { address: null, topics: [null, T2] }, log(1, 0), true],
    ["one of the topics", { address: null, topics: [[T2, T1]] }, log(1, 0), true],
    [
      "a null among the options is any",
      { address: null, topics: [[T2, null]] },
      log(1, 0, A, [T1]),
      true,
    ],
    ["an empty option list is any", { address: null, topics: [[]] }, log(1, 0), true],
    [
      "more positions than the log's topics, nulls too (geth)",
      { address: null, topics: [null, null, null] },
      log(1, 0),
      false,
    ],
  ])("%s", (_case, criteria, text, kept) => {
    expect(logsOfAnswer(answer([text]), null, criteria)).toHaveLength(kept ? 1 : 0);
  });

  it.each([
    ["an error", '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}'],
    ["a null", '{"jsonrpc":"2.0","id":1,"result":null}'],
    ["a log without its block hash", answer(['{"blockNumber":"0x1","logIndex":"0x0"}'])],
    [
      "a log with a decimal block number",
      answer(['{"blockNumber":"1","logIndex":"0x0","blockHash":"0x"}']),
    ],
    ["not a list", '{"jsonrpc":"2.0","id":1,"result":"0x1"}'],
  ])("%s is no answer", (_case, text) => {
    expect(logsOfAnswer(text, null, ANY)).toBeNull();
  });

  it("a removed log is the log with removed: true", () => {
    const [one] = logsOfAnswer(answer([log(2, 0)]), null, ANY) ?? [];
    expect(JSON.parse(removedLogText(one as never))).toEqual({
      ...JSON.parse(log(2, 0)),
      removed: true,
    });
  });
});

describe("headers of a batch", () => {
  const block = (n: number, number = n) => ({
    jsonrpc: "2.0",
    id: n,
    result: {
      number: `0x${number.toString(16)}`,
      hash: hash(n).toUpperCase().replace("0X", "0x"),
      parentHash: hash(n - 1),
    },
  });

  it("by the number asked for; a null, an error, a missing member or another block is null", () => {
    const body = JSON.stringify([
      block(7),
      { jsonrpc: "2.0", id: 8, result: null },
      { jsonrpc: "2.0", id: 9, error: { code: -32000, message: "x" } },
      block(11, 12),
    ]);
    const headers = headersOfBatch(body, [7, 8, 9, 10, 11]);
    expect(headers.get(7)).toEqual({ number: 7, hash: hash(7), parentHash: hash(6) });
    expect([8, 9, 10, 11].map((n) => headers.get(n))).toEqual([null, null, null, null]);
  });

  it("a body that is not JSON is no header at all", () => {
    expect([...headersOfBatch("<html>", [1]).values()]).toEqual([null]);
  });
});
