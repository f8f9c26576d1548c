import { describe, expect, it } from "vitest";
import { mergedAnswer, pieceLogsOf } from "../../../../functions/core/request/logs/logs-merge.ts";
import {
  alignedPieces,
  type BlockRange,
  halves,
  logQueryOf,
  pieceCall,
} from "../../../../functions/core/request/logs/logs-range.ts";
import {
  type LogsRefusal,
  logsRefusalOf,
} from "../../../../functions/core/request/logs/logs-refusal.ts";
import {
  type SplitDeps,
  serveInPieces,
} from "../../../../functions/core/request/logs/logs-split.ts";

/** The pure parts of eth_getLogs over any range (docs/behaviour.md §12). */

describe("logQueryOf: the range of a log query the gateway can cut", () => {
  it.each<[string, string, unknown, BlockRange | null]>([
    ["two numbers", "eth_getLogs", [{ fromBlock: "0x10", toBlock: "0x20" }], { from: 16, to: 32 }],
    [
      "earliest is block 0",
      "eth_getLogs",
      [{ fromBlock: "earliest", toBlock: "0x5" }],
      { from: 0, to: 5 },
    ],
    ["one block", "eth_getLogs", [{ fromBlock: "0x7", toBlock: "0x7" }], { from: 7, to: 7 }],
    ["a tag left as written", "eth_getLogs", [{ fromBlock: "0x1", toBlock: "latest" }], null],
    ["an absent end means latest", "eth_getLogs", [{ fromBlock: "0x1" }], null],
    ["pending", "eth_getLogs", [{ fromBlock: "0x1", toBlock: "pending" }], null],
    [
      "from after to (the node's to refuse)",
      "eth_getLogs",
      [{ fromBlock: "0x9", toBlock: "0x1" }],
      null,
    ],
    ["by block hash", "eth_getLogs", [{ blockHash: `0x${"1".repeat(64)}` }], null],
    ["another method", "eth_newFilter", [{ fromBlock: "0x1", toBlock: "0x2" }], null],
    ["params not a list", "eth_getLogs", { fromBlock: "0x1" }, null],
    ["no filter", "eth_getLogs", [], null],
    [
      "a number past 2^53",
      "eth_getLogs",
      [{ fromBlock: "0x1", toBlock: "0xffffffffffffffff" }],
      null,
    ],
  ])("%s", (_, method, params, expected) => {
    const query = logQueryOf(method, params);
    expect(query === null ? null : { from: query.from, to: query.to }).toEqual(expected);
  });

  it("a piece keeps the caller's filter and params and gets its own ends", () => {
    const query = logQueryOf("eth_getLogs", [
      { address: "0xabc", topics: [null, "0x1"], fromBlock: "0x0", toBlock: "0x2710" },
      "extra",
    ]);
    if (query === null) throw new Error("not a query");
    expect(JSON.parse(pieceCall(query, { from: 16, to: 31 }, 4))).toEqual({
      jsonrpc: "2.0",
      id: 4,
      method: "eth_getLogs",
      params: [
        { address: "0xabc", topics: [null, "0x1"], fromBlock: "0x10", toBlock: "0x1f" },
        "extra",
      ],
    });
  });
});

describe("alignedPieces: cut at multiples of the piece size", () => {
  it.each<[string, BlockRange, number, Array<[number, number]>]>([
    [
      "aligned both ends",
      { from: 0, to: 29 },
      10,
      [
        [0, 9],
        [10, 19],
        [20, 29],
      ],
    ],
    [
      "partial first and last",
      { from: 5, to: 24 },
      10,
      [
        [5, 9],
        [10, 19],
        [20, 24],
      ],
    ],
    ["inside one piece", { from: 12, to: 17 }, 10, [[12, 17]]],
    ["one block", { from: 7, to: 7 }, 10, [[7, 7]]],
    [
      "size 1",
      { from: 3, to: 5 },
      1,
      [
        [3, 3],
        [4, 4],
        [5, 5],
      ],
    ],
    [
      "ends on a boundary",
      { from: 10, to: 20 },
      10,
      [
        [10, 19],
        [20, 20],
      ],
    ],
  ])("%s", (_, range, size, expected) => {
    expect(alignedPieces(range, size).map((p) => [p.from, p.to])).toEqual(expected);
  });

  it("the same blocks always make the same pieces, wherever the query starts", () => {
    const a = alignedPieces({ from: 3, to: 40_000 }, 10_000).slice(1);
    const b = alignedPieces({ from: 9_000, to: 40_000 }, 10_000).slice(1);
    expect(a).toEqual(b);
  });
});

describe("halves", () => {
  it.each<[BlockRange, Array<[number, number]> | null]>([
    [
      { from: 0, to: 9_999 },
      [
        [0, 4_999],
        [5_000, 9_999],
      ],
    ],
    [
      { from: 1, to: 5 },
      [
        [1, 2],
        [3, 5],
      ],
    ],
    [
      { from: 4, to: 5 },
      [
        [4, 4],
        [5, 5],
      ],
    ],
    [{ from: 4, to: 4 }, null],
  ])("%o", (range, expected) => {
    expect(halves(range)?.map((p) => [p.from, p.to]) ?? null).toEqual(expected);
  });
});

type Expected = Pick<LogsRefusal, "kind" | "limit" | "hint"> | null;

describe("logsRefusalOf: refusals as providers word them", () => {
  const error = (code: number, message: string, data?: unknown) =>
    JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code, message, data } });
  it.each<[string, string, Expected]>([
    [
      "geth-based nodes (BSC, public RPCs)",
      error(-32000, "exceed maximum block range: 5000"),
      { kind: "range", limit: 5000, hint: null },
    ],
    [
      "reth",
      error(-32602, "query exceeds max block range 100000"),
      { kind: "range", limit: 100_000, hint: null },
    ],
    [
      "QuickNode",
      error(-32602, "eth_getLogs is limited to a 10,000 range"),
      { kind: "range", limit: 10_000, hint: null },
    ],
    [
      "QuickNode, with eth_newFilter",
      error(-32602, "eth_getLogs and eth_newFilter are limited to a 10,000 blocks range"),
      { kind: "range", limit: 10_000, hint: null },
    ],
    [
      "Avalanche",
      error(-32000, "requested too many blocks from 0 to 100000, maximum is set to 2048"),
      { kind: "range", limit: 2048, hint: null },
    ],
    [
      "Alchemy free tier",
      error(
        -32600,
        "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range. Based on your parameters, this block range should work: [0x1, 0xa]. Upgrade to PAYG for expanded block range.",
      ),
      { kind: "range", limit: 10, hint: { from: 1, to: 10 } },
    ],
    [
      "dRPC free tier",
      error(35, "ranges over 10000 blocks are not supported on freetier"),
      { kind: "range", limit: 10_000, hint: null },
    ],
    [
      "a cap with a K",
      error(-32000, "block range too large, max is 2K"),
      { kind: "range", limit: 2000, hint: null },
    ],
    [
      "Ankr, no number",
      error(-32600, "block range is too wide"),
      { kind: "range", limit: null, hint: null },
    ],
    [
      "Cloudflare",
      error(-32602, "Invalid params; please retry with a smaller block range"),
      { kind: "range", limit: null, hint: null },
    ],
    [
      "Erigon",
      error(-32000, "query exceeds limit, please retry with a smaller block range"),
      { kind: "range", limit: null, hint: null },
    ],
    [
      "Infura: too many results, with a hint and data",
      error(
        -32005,
        "query returned more than 10000 results. Try with this block range [0x10, 0x3e8].",
        {
          from: "0x10",
          limit: 10000,
          to: "0x3e8",
        },
      ),
      { kind: "results", limit: null, hint: { from: 16, to: 1000 } },
    ],
    [
      "reth: too many results, decimal hint",
      error(-32602, "query exceeds max results 20000, retry with the range 18000000-18001234"),
      { kind: "results", limit: null, hint: { from: 18_000_000, to: 18_001_234 } },
    ],
    [
      "Alchemy: response size, whose 2K is not the cap",
      error(
        -32602,
        "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x100, 0x1ff]",
      ),
      { kind: "size", limit: null, hint: { from: 256, to: 511 } },
    ],
    [
      "jsonrpsee: response too big",
      error(-32008, "Response is too big", "Exceeded max limit of 10485760"),
      { kind: "size", limit: null, hint: null },
    ],
    [
      "the gateway's own max_response_bytes refusal",
      error(
        -32603,
        "the upstream answer is over the limit of 6000000 bytes (max_response_bytes); ask for less, e.g. a smaller block range",
      ),
      { kind: "size", limit: null, hint: null },
    ],
    ["a rate limit is not a refusal", error(-32005, "limit exceeded"), null],
    ["another error", error(-32000, "leveldb: closed"), null],
    ["logs", '{"jsonrpc":"2.0","id":1,"result":[]}', null],
    ["not JSON", "<html>", null],
    [
      "a hint the wrong way round is no hint",
      error(
        -32005,
        "query returned more than 10000 results. Try with this block range [0x9, 0x1].",
      ),
      { kind: "results", limit: null, hint: null },
    ],
  ])("%s", (_, text, expected) => {
    const refusal = logsRefusalOf(text);
    expect(
      refusal === null ? null : { kind: refusal.kind, limit: refusal.limit, hint: refusal.hint },
    ).toEqual(expected);
  });
});

describe("merging pieces", () => {
  const log = (block: number, index: number) =>
    `{"blockNumber":"0x${block.toString(16)}","logIndex":"0x${index.toString(16)}","data":"0x"}`;
  const answer = (...logs: string[]) => `{"jsonrpc":"2.0","id":3,"result":[${logs.join(",")}]}`;

  it("orders by block then log index across pieces, drops duplicates and logs outside a piece", () => {
    const second = pieceLogsOf(answer(log(12, 1), log(12, 0), log(9, 0)), { from: 10, to: 19 });
    const first = pieceLogsOf(answer(log(3, 0), log(3, 0), log(5, 2)), { from: 0, to: 9 });
    if (first === null || second === null) throw new Error("not logs");
    expect(mergedAnswer([second, first])).toBe(
      `{"jsonrpc":"2.0","id":null,"result":[${[log(3, 0), log(5, 2), log(12, 0), log(12, 1)].join(",")}]}`,
    );
  });

  it.each([
    ["an error", '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}'],
    ["a null result", '{"jsonrpc":"2.0","id":1,"result":null}'],
    ["a log without a block number", '{"jsonrpc":"2.0","id":1,"result":[{"logIndex":"0x0"}]}'],
    ["a log without a log index", '{"jsonrpc":"2.0","id":1,"result":[{"blockNumber":"0x1"}]}'],
    ["a log that is not an object", '{"jsonrpc":"2.0","id":1,"result":["0x1"]}'],
  ])("%s is not a piece's logs", (_, text) => {
    expect(pieceLogsOf(text, { from: 0, to: 9 })).toBeNull();
  });

  it("counts the bytes as they are and once JSON-escaped", () => {
    const piece = pieceLogsOf(answer(log(1, 0)), { from: 0, to: 9 });
    const text = log(1, 0);
    expect(piece?.bytes).toBe(text.length + 1);
    expect(piece?.escapedBytes).toBe(text.length + (text.match(/"/g)?.length ?? 0) + 1);
  });
});

describe("serveInPieces: the run of one query's pieces", () => {
  const logsText = (range: BlockRange) =>
    `{"jsonrpc":"2.0","id":1,"result":[{"blockNumber":"0x${range.from.toString(16)}","logIndex":"0x0"}]}`;
  const deps = (overrides: Partial<SplitDeps> = {}): SplitDeps => ({
    pieceSize: () => 10,
    serve: async (piece) => ({ text: logsText(piece), provider: "p", error: "", upstreamCalls: 1 }),
    learn: () => undefined,
    share: () => undefined,
    concurrency: 2,
    maxUpstreamCalls: 50,
    attemptsPerPiece: 3,
    maxBytes: 1_000_000,
    maxEscapedBytes: 1_000_000,
    clock: () => 0,
    deadline: 1,
    ...overrides,
  });

  it("keeps at most `concurrency` pieces in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const outcome = await serveInPieces(
      { from: 0, to: 99 },
      deps({
        concurrency: 3,
        serve: async (piece) => {
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 1));
          inFlight--;
          return { text: logsText(piece), provider: "p", error: "", upstreamCalls: 1 };
        },
      }),
    );
    expect(outcome).toMatchObject({ kind: "logs", pieces: 10, upstreamCalls: 10 });
    expect(most).toBe(3);
  });

  it("starts no piece once the deadline has passed", async () => {
    let served = 0;
    const outcome = await serveInPieces(
      { from: 0, to: 99 },
      deps({
        clock: () => 5,
        serve: async () => {
          served++;
          return { text: null, provider: null, error: "", upstreamCalls: 1 };
        },
      }),
    );
    expect(outcome).toMatchObject({ kind: "failed", detail: "the request's deadline passed" });
    expect(served).toBe(0);
  });

  it("a piece whose serving throws fails the query, with no unhandled rejection", async () => {
    const outcome = await serveInPieces(
      { from: 0, to: 29 },
      deps({
        serve: async (piece) => {
          if (piece.from === 10) throw new Error("boom");
          return { text: logsText(piece), provider: "p", error: "", upstreamCalls: 1 };
        },
      }),
    );
    expect(outcome).toMatchObject({ kind: "failed", piece: { from: 10, to: 19 }, detail: "boom" });
  });

  it("stops at max_upstream_calls and names the first part left unserved", async () => {
    const outcome = await serveInPieces(
      { from: 0, to: 99 },
      deps({
        maxUpstreamCalls: 12,
        concurrency: 1,
        // Each piece costs two calls (a retry on another provider).
        serve: async (piece) => ({
          text: logsText(piece),
          provider: "p",
          error: "",
          upstreamCalls: 2,
        }),
      }),
    );
    expect(outcome).toMatchObject({ kind: "failed", piece: { from: 60, to: 69 } });
    expect(outcome.upstreamCalls).toBe(12);
  });
});
