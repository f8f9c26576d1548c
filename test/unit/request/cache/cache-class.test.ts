import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import {
  AnswerMemory,
  type MemoryAnswer,
  stillTrue,
} from "../../../../functions/core/request/cache/answer-memory.ts";
import {
  answerKey,
  blockNamedBy,
  classifyAnswer,
  contradictsHead,
  knownFinality,
  planCall,
} from "../../../../functions/core/request/cache/cache-class.ts";
import type { AnswerClass } from "../../../../functions/core/request/vocabulary.ts";

/**
 * The answer cache's classes (docs/behaviour.md §11), from the call alone and then from the
 * answer: which answers are immutable (shared tier), unfinalized or realtime (memory, a block
 * time), and which are never kept.
 */

const NOW = 1_800_000_000_000;
const hash = (digit: string) => `0x${digit.repeat(64)}`;
const hex = (n: number) => `0x${n.toString(16)}`;

/** finalized 100, safe 110, latest 120; another container served 121. */
const HEAD: ChainHead = {
  latest: { number: 120, hash: hash("c") },
  safe: { number: 110, hash: hash("b") },
  finalized: { number: 100, hash: hash("a") },
  served: { block: 121, at: NOW - 500 },
  previousServed: null,
  updatedAt: NOW - 1000,
  reorgSeenAt: 0,
};
const ADDRESS = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const TX = hash("7");

const ok = (result: unknown) => ({ jsonrpc: "2.0", id: 1, result });
const block = (number: number, blockHash = hash("d")) =>
  ok({ number: hex(number), hash: blockHash });
const transaction = (number: number | null, blockHash: string | null = hash("d")) =>
  ok({
    hash: TX,
    blockNumber: number === null ? null : hex(number),
    blockHash: number === null ? null : blockHash,
  });

/** The class of `answer` to `method(params)`, judged as the pipeline judges it. */
function classOf(
  method: string,
  params: unknown,
  answer: unknown,
  head: ChainHead | null = HEAD,
): AnswerClass {
  return classifyAnswer(planCall(method, params, head), answer, head).class;
}

describe("classes of calls and their answers", () => {
  it.each<[string, string, unknown, unknown, AnswerClass]>([
    // static
    ["the chain id", "eth_chainId", [], ok("0x1"), "immutable"],
    ["net_version", "net_version", [], ok("1"), "immutable"],
    // by block number
    [
      "the finalized block",
      "eth_getBlockByNumber",
      [hex(100), false],
      block(100, hash("a")),
      "immutable",
    ],
    ["an old block", "eth_getBlockByNumber", [hex(5), true], block(5), "immutable"],
    ["block 0 by earliest", "eth_getBlockByNumber", ["earliest", false], block(0), "immutable"],
    [
      "a finalized block's receipts",
      "eth_getBlockReceipts",
      [hex(90)],
      ok([{ blockNumber: hex(90), blockHash: hash("9") }]),
      "immutable",
    ],
    [
      "eth_call at a finalized block",
      "eth_call",
      [{ to: ADDRESS }, hex(99)],
      ok("0x"),
      "immutable",
    ],
    [
      "eth_call at a finalized block by EIP-1898 number",
      "eth_call",
      [{ to: ADDRESS }, { blockNumber: hex(99) }],
      ok("0x01"),
      "immutable",
    ],
    [
      "a balance at a finalized block",
      "eth_getBalance",
      [ADDRESS, hex(100)],
      ok("0x0"),
      "immutable",
    ],
    [
      "logs of a finalized range",
      "eth_getLogs",
      [{ fromBlock: hex(90), toBlock: hex(100) }],
      ok([]),
      "immutable",
    ],
    [
      "logs from earliest to a finalized block",
      "eth_getLogs",
      [{ fromBlock: "earliest", toBlock: hex(50) }],
      ok([]),
      "immutable",
    ],
    [
      "fee history ending at a finalized block",
      "eth_feeHistory",
      ["0x4", hex(100), []],
      ok({ oldestBlock: hex(97), baseFeePerGas: [] }),
      "immutable",
    ],
    [
      "a missing transaction index of a finalized block (null)",
      "eth_getTransactionByBlockNumberAndIndex",
      [hex(100), "0x5"],
      ok(null),
      "immutable",
    ],
    [
      "a block above finalized",
      "eth_getBlockByNumber",
      [hex(101), false],
      block(101),
      "unfinalized",
    ],
    [
      "the served head's block",
      "eth_getBlockByNumber",
      [hex(121), false],
      block(121),
      "unfinalized",
    ],
    ["eth_call above finalized", "eth_call", [{ to: ADDRESS }, hex(115)], ok("0x"), "unfinalized"],
    [
      "logs of a range ending above finalized",
      "eth_getLogs",
      [{ fromBlock: hex(95), toBlock: hex(105) }],
      ok([]),
      "unfinalized",
    ],
    ["a block above the served head", "eth_getBlockByNumber", [hex(122), false], ok(null), "never"],
    [
      "a block above the served head, even when a node has it",
      "eth_getBlockByNumber",
      [hex(122), false],
      block(122),
      "never",
    ],
    ["a null block above finalized", "eth_getBlockByNumber", [hex(105), false], ok(null), "never"],
    [
      "another block than the one asked for",
      "eth_getBlockByNumber",
      [hex(100), false],
      block(99),
      "never",
    ],
    // regression: a finalized block answered with an object naming no block (garbage, or cut
    // short) was kept in the shared tier and served to every container for a week.
    [
      "a finalized block answered with an object naming no block",
      "eth_getBlockByNumber",
      [hex(5), false],
      ok({ foo: 1 }),
      "never",
    ],
    [
      "a finalized block cut short to its number",
      "eth_getBlockByNumber",
      ["earliest", false],
      ok({ number: "0x0" }),
      "never",
    ],
    [
      "a finalized block's receipts naming no block",
      "eth_getBlockReceipts",
      [hex(90)],
      ok([{ status: "0x1" }]),
      "never",
    ],
    [
      "a finalized block's receipts when it has no transactions",
      "eth_getBlockReceipts",
      [hex(90)],
      ok([]),
      "immutable",
    ],
    [
      "a block whose hash is not the chain's at that height",
      "eth_getBlockByNumber",
      [hex(110), false],
      block(110, hash("e")),
      "never",
    ],
    // tags
    [
      "the latest block (tag not pinned)",
      "eth_getBlockByNumber",
      ["latest", false],
      block(120),
      "realtime",
    ],
    [
      "the finalized block by tag",
      "eth_getBlockByNumber",
      ["finalized", false],
      block(100),
      "realtime",
    ],
    ["a balance, block left out (latest)", "eth_getBalance", [ADDRESS], ok("0x1"), "realtime"],
    ["logs to latest", "eth_getLogs", [{ fromBlock: hex(90) }], ok([]), "realtime"],
    ["the pending block", "eth_getBlockByNumber", ["pending", false], block(121), "never"],
    [
      "logs to pending",
      "eth_getLogs",
      [{ fromBlock: hex(1), toBlock: "pending" }],
      ok([]),
      "never",
    ],
    [
      "logs from pending",
      "eth_getLogs",
      [{ fromBlock: "pending", toBlock: "latest" }],
      ok([]),
      "never",
    ],
    [
      "gas estimate, block left out (pending)",
      "eth_estimateGas",
      [{ to: ADDRESS }],
      ok("0x5208"),
      "never",
    ],
    ["fee history to latest", "eth_feeHistory", ["0x4", "latest", []], ok({}), "realtime"],
    // realtime methods
    ["the gas price", "eth_gasPrice", [], ok("0x1"), "realtime"],
    ["the blob base fee", "eth_blobBaseFee", [], ok("0x1"), "realtime"],
    ["the block number", "eth_blockNumber", [], ok("0x78"), "realtime"],
    // by hash
    [
      "a transaction in a finalized block",
      "eth_getTransactionByHash",
      [TX],
      transaction(100, hash("a")),
      "immutable",
    ],
    [
      "a receipt above finalized",
      "eth_getTransactionReceipt",
      [TX],
      transaction(111),
      "unfinalized",
    ],
    [
      "a pending transaction (blockHash null)",
      "eth_getTransactionByHash",
      [TX],
      transaction(null),
      "never",
    ],
    ["an unknown transaction (null)", "eth_getTransactionByHash", [TX], ok(null), "never"],
    [
      "a transaction in a block above the served head",
      "eth_getTransactionByHash",
      [TX],
      transaction(130),
      "never",
    ],
    [
      "a transaction in a replaced block at the finalized height",
      "eth_getTransactionReceipt",
      [TX],
      transaction(100, hash("f")),
      "never",
    ],
    [
      "a finalized block by hash",
      "eth_getBlockByHash",
      [hash("a"), false],
      block(100, hash("a")),
      "immutable",
    ],
    [
      "a block by hash answered with another block",
      "eth_getBlockByHash",
      [hash("5"), false],
      block(90, hash("6")),
      "never",
    ],
    [
      "eth_call by block hash (the answer names no block)",
      "eth_call",
      [{ to: ADDRESS }, { blockHash: hash("a") }],
      ok("0x"),
      "never",
    ],
    [
      "receipts by a finalized block's hash",
      "eth_getBlockReceipts",
      [hash("a")],
      ok([{ blockNumber: hex(100), blockHash: hash("a") }]),
      "immutable",
    ],
    ["a trace that names no block", "debug_traceTransaction", [TX], ok({ gas: 1 }), "never"],
    // never
    ["a send", "eth_sendRawTransaction", ["0x02"], ok(TX), "never"],
    ["a filter poll", "eth_getFilterChanges", ["0x1"], ok([]), "never"],
    ["the client version", "web3_clientVersion", [], ok("anvil/v1"), "never"],
    ["a made-up method", "eth_madeUp", [], ok("0x1"), "never"],
    ["params a node would refuse", "eth_getBlockByNumber", ["0xZZ", false], ok(null), "never"],
    // errors are never kept
    [
      "an error about a finalized block",
      "eth_getBlockByNumber",
      [hex(100), false],
      { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "x" } },
      "never",
    ],
    [
      "an error to a static method",
      "eth_chainId",
      [],
      { jsonrpc: "2.0", id: 1, error: {} },
      "never",
    ],
    ["no answer at all", "eth_chainId", [], undefined, "never"],
    // what each answer must be, to be kept
    ["a null to a static method", "eth_chainId", [], ok(null), "never"],
    [
      "an answer carrying both a result and an error",
      "eth_chainId",
      [],
      { jsonrpc: "2.0", id: 1, result: "0x1", error: { code: -32000, message: "x" } },
      "never",
    ],
    [
      "a finalized header naming no block (garbage, or cut short)",
      "eth_getHeaderByNumber",
      [hex(100)],
      ok({ parentHash: hash("9") }),
      "never",
    ],
    [
      "a finalized block's transaction naming no block",
      "eth_getTransactionByBlockNumberAndIndex",
      [hex(100), "0x0"],
      ok({ hash: TX }),
      "never",
    ],
    [
      "a filter install over finalized blocks: a write, never kept",
      "eth_newFilter",
      [{ fromBlock: hex(1), toBlock: hex(2) }],
      ok("0x1"),
      "never",
    ],
    [
      "logs of a finalized range whose first log is below its top block",
      "eth_getLogs",
      [{ fromBlock: hex(1), toBlock: hex(5) }],
      ok([{ blockNumber: hex(2), blockHash: hash("2"), logIndex: "0x0" }]),
      "immutable",
    ],
    [
      // Parity-style traces name their block by a JSON number: no block a list must name.
      "traces of a finalized range",
      "trace_filter",
      [{ fromBlock: hex(1), toBlock: hex(5) }],
      ok([{ blockNumber: 2, blockHash: hash("2"), type: "call" }]),
      "immutable",
    ],
    [
      "a transaction at the served head (above latest)",
      "eth_getTransactionByHash",
      [TX],
      transaction(121),
      "unfinalized",
    ],
    [
      "a transaction above the served head",
      "eth_getTransactionByHash",
      [TX],
      transaction(122),
      "never",
    ],
  ])("%s", (_name, method, params, answer, expected) => {
    expect(classOf(method, params, answer)).toBe(expected);
  });

  it("a chain without finalized blocks keeps nothing named by hash as immutable, block 0 included", () => {
    const head = { ...HEAD, finalized: null, safe: null };
    for (const number of [0, 1]) {
      expect(classOf("eth_getTransactionByHash", [TX], transaction(number), head)).toBe(
        "unfinalized",
      );
    }
  });

  it("no chain position: nothing to contradict", () => {
    expect(contradictsHead(null, { number: 120, hash: hash("9") })).toBe(false);
  });

  it.each<[string, string, unknown, unknown, AnswerClass]>([
    ["a finalized block", "eth_getBlockByNumber", [hex(1), false], block(1), "never"],
    ["a transaction", "eth_getTransactionByHash", [TX], transaction(1), "never"],
    ["logs", "eth_getLogs", [{ fromBlock: hex(0), toBlock: hex(1) }], ok([]), "never"],
    ["the chain id", "eth_chainId", [], ok("0x1"), "immutable"],
    ["the gas price", "eth_gasPrice", [], ok("0x1"), "realtime"],
  ])("with no chain position known, %s is %s", (_name, method, params, answer, expected) => {
    expect(classOf(method, params, answer, null)).toBe(expected);
  });

  it("the chain position counts for three check intervals, then finality is unknown", () => {
    const head = { ...HEAD, updatedAt: NOW - 45_000 };
    expect(knownFinality(head, NOW, 15)).toBe(head);
    expect(knownFinality(head, NOW + 1, 15)).toBeNull();
    expect(knownFinality(null, NOW, 15)).toBeNull();
  });

  it("a chain without finalized blocks caches nothing as immutable by number", () => {
    const head = { ...HEAD, finalized: null, safe: null };
    expect(classOf("eth_getBlockByNumber", [hex(1), false], block(1), head)).toBe("unfinalized");
  });
});

describe("which block an answer names", () => {
  it.each<[string, unknown, { number: number; hash: string } | null]>([
    ["a block", { number: "0x10", hash: hash("A") }, { number: 16, hash: hash("a") }],
    [
      "a transaction (its block, not its own hash)",
      { hash: TX, blockNumber: "0x2", blockHash: hash("b") },
      { number: 2, hash: hash("b") },
    ],
    ["a pending transaction", { hash: TX, blockNumber: null, blockHash: null }, null],
    ["receipts", [{ blockNumber: "0x3", blockHash: hash("c") }], { number: 3, hash: hash("c") }],
    ["no receipts", [], null],
    ["a quantity", "0x10", null],
    ["a bad number", { number: "16", hash: hash("a") }, null],
    ["a short hash", { number: "0x1", hash: "0x12" }, null],
    ["a number past 2^53", { number: "0xffffffffffffffff", hash: hash("a") }, null],
    ["a hash with text after it", { number: "0x1", hash: `${hash("a")}00` }, null],
    ["a hash with text before it", { number: "0x1", hash: `zz${hash("a")}` }, null],
    ["a number with text after it", { number: "0x10zz", hash: hash("a") }, null],
    ["a number with text before it", { number: "ab0x10", hash: hash("a") }, null],
    [
      "a block hash without its number (its own number is not its block's)",
      { number: "0x10", hash: hash("a"), blockHash: hash("b") },
      null,
    ],
    [
      "a block number without its hash",
      { number: "0x10", hash: hash("a"), blockNumber: "0x10" },
      null,
    ],
  ])("%s", (_name, result, expected) => {
    expect(blockNamedBy(result)).toEqual(expected);
  });
});

describe("unfinalized answers in memory", () => {
  const entry = {
    text: "{}",
    class: "unfinalized" as const,
    storedAt: NOW,
    expiresAt: NOW + 12_000,
    height: 120,
    blockHash: hash("c"),
  };

  it.each<[string, ChainHead | null, number, boolean]>([
    ["within a block time, same chain", HEAD, NOW + 1000, true],
    ["a block time later", HEAD, NOW + 12_000, false],
    ["after a reorg was seen", { ...HEAD, reorgSeenAt: NOW + 10 }, NOW + 1000, false],
    ["a reorg seen before it was stored", { ...HEAD, reorgSeenAt: NOW - 10 }, NOW + 1000, true],
    [
      "another block at its height",
      { ...HEAD, latest: { number: 120, hash: hash("9") } },
      NOW + 1000,
      false,
    ],
    ["finality unknown", null, NOW + 1000, false],
    [
      "a reorg seen the very millisecond it was stored",
      { ...HEAD, reorgSeenAt: NOW },
      NOW + 1000,
      false,
    ],
  ])("%s: served %s", (_name, head, now, served) => {
    expect(stillTrue(entry, head, now)).toBe(served);
  });

  it("an answer naming no block (a balance) is served within a block time, with no block to check", () => {
    const balance = { ...entry, height: 115, blockHash: null };
    expect(stillTrue(balance, HEAD, NOW + 1000)).toBe(true);
  });

  it("an immutable answer stays true whatever the chain position", () => {
    const immutable = { ...entry, class: "immutable" as const, expiresAt: Infinity };
    expect(stillTrue(immutable, null, NOW + 1e12)).toBe(true);
  });
});

describe("keys", () => {
  it("differ by chain, method and params, and never by the caller's id", () => {
    const key = answerKey(1, "eth_getBlockByNumber", ["0x1", false]);
    expect(answerKey(1, "eth_getBlockByNumber", ["0x1", false])).toBe(key);
    expect(answerKey(2, "eth_getBlockByNumber", ["0x1", false])).not.toBe(key);
    expect(answerKey(1, "eth_getBlockByNumber", ["0x1", true])).not.toBe(key);
    expect(answerKey(1, "eth_getHeaderByNumber", ["0x1", false])).not.toBe(key);
  });

  it("before any reset they are the chain, the method and the params alone (items kept before generations existed are found); after one, each generation its own", () => {
    expect(answerKey(1, "eth_chainId", [])).toBe("1\neth_chainId\n[]");
    expect(answerKey(1, "eth_chainId", [], 0)).toBe("1\neth_chainId\n[]");
    const keys = [0, 2_000, 3_000].map((generation) => answerKey(1, "eth_chainId", [], generation));
    expect(new Set(keys).size).toBe(3);
  });
});

describe("the memory tier: least recently used out first, bounded in bytes", () => {
  const answer = (text: string): MemoryAnswer => ({
    text,
    class: "immutable",
    storedAt: NOW,
    expiresAt: Number.POSITIVE_INFINITY,
    height: null,
    blockHash: null,
  });
  /** Each entry costs its key, its text and 160 bytes of bookkeeping. */
  const cost = (key: string, text: string) => key.length + text.length + 160;

  it("drops the least recently used entries to fit, a read counting as a use", () => {
    const memory = new AnswerMemory();
    const budget = 3 * cost("k1", "x".repeat(100));
    for (const key of ["k1", "k2", "k3"]) memory.set(key, answer("x".repeat(100)), budget);
    expect(memory.get("k1", HEAD, NOW)).not.toBeNull();
    memory.set("k4", answer("x".repeat(100)), budget);
    expect(memory.get("k2", HEAD, NOW)).toBeNull();
    expect(["k1", "k3", "k4"].map((key) => memory.get(key, HEAD, NOW) !== null)).toEqual([
      true,
      true,
      true,
    ]);
    expect(memory.usage()).toEqual({ bytes: budget, entries: 3 });
  });

  it("keeps no answer larger than the whole budget, and a smaller budget evicts down to it", () => {
    const memory = new AnswerMemory();
    memory.set("big", answer("x".repeat(2000)), 1000);
    expect(memory.usage()).toEqual({ bytes: 0, entries: 0 });
    for (const key of ["a", "b", "c"]) memory.set(key, answer("y"), 1000);
    memory.set("d", answer("y"), cost("d", "y") * 2);
    expect(memory.usage().entries).toBe(2);
    expect(memory.get("c", HEAD, NOW)).not.toBeNull();
  });

  it("an entry of exactly the budget is kept; one larger leaves the others where they are", () => {
    const memory = new AnswerMemory();
    memory.set("k", answer("x".repeat(100)), cost("k", "x".repeat(100)));
    expect(memory.usage().entries).toBe(1);
    const roomy = new AnswerMemory();
    for (const key of ["a", "b"]) roomy.set(key, answer("y"), 1000);
    roomy.set("big", answer("x".repeat(2000)), 1000);
    expect(roomy.usage()).toEqual({ bytes: 2 * cost("a", "y"), entries: 2 });
  });

  it("a key stored again is the most recently used: the oldest other one goes first", () => {
    const memory = new AnswerMemory();
    const budget = 2 * cost("k1", "x");
    memory.set("k1", answer("x"), budget);
    memory.set("k2", answer("x"), budget);
    memory.set("k1", answer("x"), budget);
    memory.set("k3", answer("x"), budget);
    expect(["k1", "k2", "k3"].map((key) => memory.get(key, HEAD, NOW) !== null)).toEqual([
      true,
      false,
      true,
    ]);
  });

  it("a key stored again replaces its entry and its bytes", () => {
    const memory = new AnswerMemory();
    memory.set("k", answer("short"), 10_000);
    memory.set("k", answer("a longer text"), 10_000);
    expect(memory.get("k", HEAD, NOW)?.text).toBe("a longer text");
    expect(memory.usage()).toEqual({ bytes: cost("k", "a longer text"), entries: 1 });
  });

  it("an entry no longer true is dropped when read, and its bytes freed", () => {
    const memory = new AnswerMemory();
    memory.set("gas", { ...answer("0x1"), class: "realtime", expiresAt: NOW + 12_000 }, 10_000);
    expect(memory.get("gas", HEAD, NOW + 11_999)).not.toBeNull();
    expect(memory.get("gas", HEAD, NOW + 12_000)).toBeNull();
    expect(memory.usage()).toEqual({ bytes: 0, entries: 0 });
  });
});
