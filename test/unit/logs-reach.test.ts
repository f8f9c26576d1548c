import { describe, expect, it } from "vitest";
import { blockToConfirm } from "../../functions/core/request/logs-reach.ts";

/**
 * Whether a log answer must be checked against its provider's head before it is used: only a
 * list of logs for numbered blocks beyond the head the provider was seen at.
 */

const LOGS = '{"jsonrpc":"2.0","id":1,"result":[]}';
const SOME_LOGS = '{"jsonrpc":"2.0","id":"a","result":[{"blockNumber":"0x64","logIndex":"0x0"}]}';
const ERROR = '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}';
const range = (fromBlock: unknown, toBlock: unknown) => ({
  method: "eth_getLogs",
  params: [{ fromBlock, toBlock }],
});

const rows: ReadonlyArray<{
  readonly name: string;
  readonly info: { method: string; params: unknown[] };
  readonly answer: string;
  readonly confirmedHead: number | null;
  readonly expected: number | null;
}> = [
  {
    name: "toBlock above the provider's confirmed head: that block",
    info: range("0x60", "0x65"),
    answer: LOGS,
    confirmedHead: 0x64,
    expected: 0x65,
  },
  {
    name: "an empty list is checked too (the usual clamped answer near the head)",
    info: range("0x65", "0x65"),
    answer: LOGS,
    confirmedHead: 0x64,
    expected: 0x65,
  },
  {
    name: "logs, whatever the id",
    info: range("0x60", "0x70"),
    answer: SOME_LOGS,
    confirmedHead: 0x64,
    expected: 0x70,
  },
  {
    name: "a provider of unknown head",
    info: range("0x0", "0x65"),
    answer: LOGS,
    confirmedHead: null,
    expected: 0x65,
  },
  {
    name: "toBlock at the confirmed head: none",
    info: range("0x60", "0x64"),
    answer: LOGS,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "toBlock under the confirmed head: none",
    info: range("0x0", "0x10"),
    answer: LOGS,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "an error answer clamps nothing: none",
    info: range("0x60", "0x65"),
    answer: ERROR,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "a null result is no list of logs: none",
    info: range("0x60", "0x65"),
    answer: '{"jsonrpc":"2.0","id":1,"result":null}',
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "a filter by block hash names a block the provider found: none",
    info: { method: "eth_getLogs", params: [{ blockHash: `0x${"ab".repeat(32)}` }] },
    answer: LOGS,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "toBlock `latest` as written is the provider's own head: none",
    info: range("0x60", "latest"),
    answer: LOGS,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "another method: none",
    info: { method: "eth_getBlockByNumber", params: ["0x65", false] },
    answer: LOGS,
    confirmedHead: 0x64,
    expected: null,
  },
  {
    name: "an answer that is not JSON: none (the judge already kept it from the caller)",
    info: range("0x60", "0x65"),
    answer: "<html>",
    confirmedHead: 0x64,
    expected: null,
  },
];

describe("blockToConfirm", () => {
  it.each(rows)("$name", ({ info, answer, confirmedHead, expected }) => {
    expect(blockToConfirm({ info, answer, confirmedHead })).toBe(expected);
  });
});
