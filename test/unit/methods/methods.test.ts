import { describe, expect, it } from "vitest";
import { type BlockRef, blockRefOf } from "../../../functions/core/methods/block-ref.ts";
import {
  isKnownMethod,
  KNOWN_METHODS,
  methodSpec,
} from "../../../functions/core/methods/catalogue.ts";
import type { MethodSpec } from "../../../functions/core/methods/method-spec.ts";
import { loadExecutionApisFixtures } from "../../support/execution-apis.ts";

const HASH = `0x${"ab".repeat(32)}`;
const OTHER_HASH = `0x${"cd".repeat(32)}`;
const ADDRESS = `0x${"11".repeat(20)}`;

const tag = (name: "latest" | "safe" | "finalized" | "earliest" | "pending"): BlockRef => ({
  kind: "tag",
  tag: name,
});
const num = (number: number): BlockRef => ({ kind: "number", number });
const hash = (value: string): BlockRef => ({ kind: "hash", hash: value });
const range = (from: BlockRef, to: BlockRef): BlockRef => ({ kind: "range", from, to }) as BlockRef;

type Summary = Pick<MethodSpec, "hashKeyed" | "idempotent" | "weight" | "cache"> & {
  readonly block: string;
};

/** The block parameter in one word ("number-or-tag@0?latest"), for readable rows. */
function summarise(spec: MethodSpec): Summary {
  const { block } = spec;
  const where =
    block.kind === "none"
      ? "none"
      : `${block.kind}@${block.at}${"whenOmitted" in block && block.whenOmitted ? `?${block.whenOmitted}` : ""}`;
  return {
    block: where,
    hashKeyed: spec.hashKeyed,
    idempotent: spec.idempotent,
    weight: spec.weight,
    cache: spec.cache,
  };
}

const row = (
  block: string,
  cache: MethodSpec["cache"],
  weight: MethodSpec["weight"] = "light",
  hashKeyed: MethodSpec["hashKeyed"] = null,
  idempotent = true,
): Summary => ({ block, hashKeyed, idempotent, weight, cache });

describe("methodSpec: catalogue entries", () => {
  it.each<[string, Summary]>([
    ["eth_chainId", row("none", "static")],
    ["net_version", row("none", "static")],
    ["eth_blockNumber", row("none", "realtime")],
    ["eth_gasPrice", row("none", "realtime")],
    ["eth_maxPriorityFeePerGas", row("none", "realtime")],
    ["eth_blobBaseFee", row("none", "realtime")],
    ["eth_syncing", row("none", "realtime")],
    ["eth_feeHistory", row("number-or-tag@1", "by-block")],
    ["eth_getBalance", row("number-tag-or-hash@1?latest", "by-block")],
    ["eth_getCode", row("number-tag-or-hash@1?latest", "by-block")],
    ["eth_getStorageAt", row("number-tag-or-hash@2?latest", "by-block")],
    ["eth_call", row("number-tag-or-hash@1?latest", "by-block", "heavy")],
    ["eth_estimateGas", row("number-or-tag@1?pending", "by-block", "heavy")],
    ["eth_createAccessList", row("number-or-tag@1?pending", "by-block", "heavy")],
    ["eth_getProof", row("number-tag-or-hash@2?latest", "by-block", "heavy")],
    ["eth_simulateV1", row("number-tag-or-hash@1?latest", "by-block", "heavy")],
    ["eth_getBlockByNumber", row("number-or-tag@0", "by-block")],
    ["eth_getBlockReceipts", row("number-tag-or-hash@0", "by-block")],
    ["eth_getLogs", row("filter@0", "by-block", "heavy")],
    ["eth_getBlockByHash", row("hash@0", "by-hash", "light", "block")],
    ["eth_getBlockTransactionCountByHash", row("hash@0", "by-hash", "light", "block")],
    ["eth_getTransactionByBlockHashAndIndex", row("hash@0", "by-hash", "light", "block")],
    ["eth_getTransactionByHash", row("none", "by-hash", "light", "tx")],
    ["eth_getTransactionReceipt", row("none", "by-hash", "light", "tx")],
    ["debug_traceTransaction", row("none", "by-hash", "heavy", "tx")],
    ["debug_traceBlockByHash", row("hash@0", "by-hash", "heavy", "block")],
    ["debug_traceBlockByNumber", row("number-or-tag@0", "by-block", "heavy")],
    ["debug_traceCall", row("number-tag-or-hash@1", "by-block", "heavy")],
    ["debug_getRawHeader", row("number-or-tag@0", "by-block")],
    ["trace_block", row("number-or-tag@0", "by-block", "heavy")],
    ["trace_filter", row("filter@0", "by-block", "heavy")],
    ["trace_call", row("number-tag-or-hash@2?latest", "by-block", "heavy")],
    ["trace_transaction", row("none", "by-hash", "heavy", "tx")],
    ["eth_sendRawTransaction", row("none", "never", "light", null, false)],
    ["eth_sendTransaction", row("none", "never", "light", null, false)],
    ["eth_sign", row("none", "never", "light", null, false)],
    ["eth_signTransaction", row("none", "never", "light", null, false)],
    ["eth_newFilter", row("filter@0", "never", "light", null, false)],
    ["eth_newBlockFilter", row("none", "never", "light", null, false)],
    ["eth_uninstallFilter", row("none", "never", "light", null, false)],
    ["eth_getFilterChanges", row("none", "never", "light", null, false)],
    ["eth_subscribe", row("none", "never", "light", null, false)],
    ["eth_unsubscribe", row("none", "never", "light", null, false)],
    ["eth_accounts", row("none", "never")],
    ["web3_clientVersion", row("none", "never")],
    ["txpool_status", row("none", "never")],
    ["txpool_content", row("none", "never", "heavy")],
  ])("%s", (method, expected) => {
    expect(isKnownMethod(method)).toBe(true);
    expect(summarise(methodSpec(method))).toEqual(expected);
  });
});

describe("methodSpec: methods the catalogue does not list", () => {
  const conservative = row("none", "never");
  it.each<[string, Summary]>([
    ["an unknown eth_ method", conservative],
    ["eth_somethingNew", conservative],
    ["", conservative],
    ["ETH_CHAINID", conservative],
    ["constructor", conservative],
    ["__proto__", conservative],
    ["toString", conservative],
    ["hasOwnProperty", conservative],
    ["debug_somethingNew", row("none", "never", "heavy")],
    ["trace_somethingNew", row("none", "never", "heavy")],
    ["debug_", row("none", "never", "heavy")],
  ])("%s gets the default", (method, expected) => {
    const spec = methodSpec(method);
    expect(summarise(spec)).toEqual(expected);
    expect(spec.result).toBeNull();
    expect(spec.tracesMinedBlock).toBe(false);
    expect(isKnownMethod(method)).toBe(false);
  });

  it("returns the same object for every call of a method", () => {
    expect(methodSpec("eth_getLogs")).toBe(methodSpec("eth_getLogs"));
  });
});

describe("the catalogue's entries agree with one another", () => {
  it.each(KNOWN_METHODS)("%s", (method) => {
    const spec = methodSpec(method);
    // Looked up by a block hash exactly when the block parameter is a hash.
    expect(spec.hashKeyed === "block").toBe(spec.block.kind === "hash");
    if (spec.hashKeyed !== null) expect(spec.cache).toBe("by-hash");
    if (spec.cache === "by-hash") expect(spec.hashKeyed).not.toBeNull();
    if (spec.cache === "by-block") expect(spec.block.kind).not.toBe("none");
    if (!spec.idempotent) expect(spec.cache).toBe("never");
    if (spec.tracesMinedBlock) expect(spec.weight).toBe("heavy");
    if (spec.result?.nullWhen === "unsettled-block") {
      expect(["number-or-tag", "number-tag-or-hash"]).toContain(spec.block.kind);
    }
  });
});

describe("the classifier's rules, read from the catalogue", () => {
  it("lists a result rule for exactly the methods the classifier judged before", () => {
    const rules = Object.fromEntries(
      KNOWN_METHODS.flatMap((method) => {
        const rule = methodSpec(method).result;
        return rule === null ? [] : [[method, `${rule.shape}/${rule.nullWhen}`]];
      }),
    );
    expect(rules).toEqual({
      eth_blockNumber: "quantity/never",
      eth_chainId: "quantity/never",
      eth_gasPrice: "quantity/never",
      eth_maxPriorityFeePerGas: "quantity/never",
      eth_blobBaseFee: "quantity/never",
      eth_getBalance: "quantity/never",
      eth_getTransactionCount: "quantity/never",
      eth_estimateGas: "quantity/never",
      eth_getCode: "data/never",
      eth_call: "data/never",
      eth_getStorageAt: "data/never",
      eth_sendRawTransaction: "data/never",
      net_version: "version/never",
      eth_getLogs: "array/never",
      eth_feeHistory: "object/never",
      eth_getBlockByNumber: "object/unsettled-block",
      eth_getBlockReceipts: "array/unsettled-block",
      eth_getBlockTransactionCountByNumber: "quantity/unsettled-block",
      eth_getUncleCountByBlockNumber: "quantity/unsettled-block",
      eth_getHeaderByNumber: "object/unsettled-block",
      trace_block: "array/unsettled-block",
      trace_replayBlockTransactions: "array/unsettled-block",
      eth_getBlockByHash: "object/always",
      eth_getTransactionByHash: "object/always",
      eth_getTransactionReceipt: "object/always",
    });
  });

  it("marks as running the caller's code exactly the calls, simulations and JS-tracer traces", () => {
    expect(KNOWN_METHODS.filter((method) => methodSpec(method).runsCallersCode).sort()).toEqual([
      "debug_traceBlock",
      "debug_traceBlockByHash",
      "debug_traceBlockByNumber",
      "debug_traceCall",
      "debug_traceTransaction",
      "eth_call",
      "eth_createAccessList",
      "eth_estimateGas",
      "eth_simulateV1",
      "trace_call",
      "trace_callMany",
      "trace_rawTransaction",
    ]);
  });

  it("marks exactly the traces of mined blocks the classifier retried before", () => {
    expect(KNOWN_METHODS.filter((method) => methodSpec(method).tracesMinedBlock).sort()).toEqual([
      "debug_traceBlockByHash",
      "debug_traceBlockByNumber",
      "debug_traceTransaction",
      "trace_block",
      "trace_replayBlockTransactions",
      "trace_replayTransaction",
      "trace_transaction",
    ]);
  });
});

describe("blockRefOf", () => {
  it.each<[string, string, unknown, BlockRef | null]>([
    // a number or tag
    ["a number", "eth_getBlockByNumber", ["0x2a", false], num(42)],
    ["block zero", "eth_getBlockByNumber", ["0x0", false], num(0)],
    ["an upper-case 0X", "eth_getBlockByNumber", ["0X1b", false], num(27)],
    ["a leading zero", "eth_getBlockByNumber", ["0x01", false], num(1)],
    ["latest", "eth_getBlockByNumber", ["latest", false], tag("latest")],
    ["safe", "eth_getBlockByNumber", ["safe", false], tag("safe")],
    ["finalized", "eth_getBlockByNumber", ["finalized", false], tag("finalized")],
    ["earliest", "eth_getBlockByNumber", ["earliest", false], tag("earliest")],
    ["pending", "eth_getBlockByNumber", ["pending", false], tag("pending")],
    ["the newest block of fee history", "eth_feeHistory", ["0x4", "latest", [25]], tag("latest")],
    ["a numbered newest block", "eth_feeHistory", ["0x4", "0x10", []], num(16)],
    ["EIP-1898 by number", "eth_getBlockByNumber", [{ blockNumber: "0x10" }], num(16)],
    ["EIP-1898 by hash", "eth_getBlockByNumber", [{ blockHash: HASH }], hash(HASH)],
    [
      "EIP-1898 by hash, canonical",
      "eth_getBlockByNumber",
      [{ blockHash: HASH, requireCanonical: true }],
      hash(HASH),
    ],
    ["a hash where only a number or tag goes", "eth_getBlockByNumber", [HASH, false], null],
    // a number, tag or hash
    ["a state read at a number", "eth_getBalance", [ADDRESS, "0x5"], num(5)],
    ["a state read at a tag", "eth_getBalance", [ADDRESS, "finalized"], tag("finalized")],
    ["a state read at a hash", "eth_getBalance", [ADDRESS, HASH], hash(HASH)],
    [
      "a hash, in lower case",
      "eth_getCode",
      [ADDRESS, HASH.toUpperCase().replace("0X", "0x")],
      hash(HASH),
    ],
    ["EIP-1898 in eth_call", "eth_call", [{ to: ADDRESS }, { blockNumber: "0x7" }], num(7)],
    [
      "EIP-1898 hash in eth_getStorageAt",
      "eth_getStorageAt",
      [ADDRESS, "0x0", { blockHash: HASH, requireCanonical: false }],
      hash(HASH),
    ],
    ["a hash for block receipts", "eth_getBlockReceipts", [HASH], hash(HASH)],
    ["a proof at a block", "eth_getProof", [ADDRESS, [], "0x9"], num(9)],
    ["a trace call at a block", "trace_call", [{ to: ADDRESS }, ["trace"], "safe"], tag("safe")],
    // an optional block left out
    ["a balance without a block", "eth_getBalance", [ADDRESS], tag("latest")],
    ["a balance with a null block", "eth_getBalance", [ADDRESS, null], tag("latest")],
    ["a call without a block", "eth_call", [{ to: ADDRESS }], tag("latest")],
    ["a storage read without a block", "eth_getStorageAt", [ADDRESS, "0x0"], tag("latest")],
    ["an estimate without a block", "eth_estimateGas", [{ to: ADDRESS }], tag("pending")],
    ["an access list without a block", "eth_createAccessList", [{}], tag("pending")],
    ["a simulation without a block", "eth_simulateV1", [{ blockStateCalls: [] }], tag("latest")],
    // a block hash
    ["a block by hash", "eth_getBlockByHash", [HASH, false], hash(HASH)],
    ["a trace of a block by hash", "debug_traceBlockByHash", [HASH, {}], hash(HASH)],
    [
      "a transaction by block hash and index",
      "eth_getTransactionByBlockHashAndIndex",
      [HASH, "0x0"],
      hash(HASH),
    ],
    ["a short hash", "eth_getBlockByHash", ["0x01", false], null],
    ["a number where a hash goes", "eth_getBlockByHash", ["0x10", false], null],
    // a log filter
    ["a range", "eth_getLogs", [{ fromBlock: "0x32", toBlock: "0x38" }], range(num(50), num(56))],
    [
      "a range of tags",
      "eth_getLogs",
      [{ fromBlock: "safe", toBlock: "latest" }],
      range(tag("safe"), tag("latest")),
    ],
    ["a range without an end", "eth_getLogs", [{ fromBlock: "0x1" }], range(num(1), tag("latest"))],
    ["a range without a start", "eth_getLogs", [{ toBlock: "0x9" }], range(tag("latest"), num(9))],
    [
      "a filter naming no block",
      "eth_getLogs",
      [{ address: ADDRESS }],
      range(tag("latest"), tag("latest")),
    ],
    [
      "a filter with null ends",
      "eth_getLogs",
      [{ fromBlock: null, toBlock: null }],
      range(tag("latest"), tag("latest")),
    ],
    ["a filter by block hash", "eth_getLogs", [{ blockHash: HASH, topics: [] }], hash(HASH)],
    [
      "a filter by block hash, null ends",
      "eth_getLogs",
      [{ blockHash: HASH, fromBlock: null }],
      hash(HASH),
    ],
    [
      "a new filter",
      "eth_newFilter",
      [{ fromBlock: "0x1", toBlock: "0x2" }],
      range(num(1), num(2)),
    ],
    [
      "a trace filter",
      "trace_filter",
      [{ fromBlock: "0x1", toBlock: "0x2", count: 5 }],
      range(num(1), num(2)),
    ],
    // methods about no block
    ["a transaction hash is not a block", "eth_getTransactionByHash", [HASH], null],
    ["eth_chainId", "eth_chainId", [], null],
    ["an unknown method", "eth_somethingNew", ["latest"], null],
    ["an unknown trace method", "trace_somethingNew", ["0x1"], null],
  ])("%s", (_, method, params, expected) => {
    expect(blockRefOf(method, params)).toEqual(expected);
  });

  it.each<[string, string, unknown]>([
    ["params absent", "eth_getBlockByNumber", undefined],
    ["params an object", "eth_getBlockByNumber", { block: "latest" }],
    ["params a string", "eth_getBalance", "latest"],
    ["params null", "eth_getLogs", null],
    ["a required block left out", "eth_getBlockByNumber", []],
    ["a required block null", "eth_getBlockByNumber", [null, false]],
    ["a required newest block left out", "eth_feeHistory", ["0x4"]],
    ["a required hash left out", "eth_getBlockByHash", []],
    ["an optional block with what comes before it left out", "eth_getStorageAt", [ADDRESS]],
    ["an unknown tag", "eth_getBlockByNumber", ["Latest", false]],
    ["a tag with spaces", "eth_getBlockByNumber", [" latest", false]],
    ["a decimal string", "eth_getBlockByNumber", ["42", false]],
    ["a JSON number", "eth_getBlockByNumber", [42, false]],
    ["0x alone", "eth_getBlockByNumber", ["0x", false]],
    ["not hex", "eth_getBlockByNumber", ["0xzz", false]],
    ["a negative number", "eth_getBlockByNumber", ["-0x1", false]],
    ["a number past 64 bits", "eth_getBlockByNumber", [`0x1${"0".repeat(16)}`, false]],
    ["a number past 2^53", "eth_getBlockByNumber", ["0x20000000000000", false]],
    ["a boolean", "eth_getBalance", [ADDRESS, true]],
    ["an array", "eth_getBalance", [ADDRESS, ["latest"]]],
    ["a hash one digit short", "eth_getBalance", [ADDRESS, HASH.slice(0, -1)]],
    ["a hash one digit long", "eth_getBalance", [ADDRESS, `${HASH}0`]],
    ["EIP-1898 naming both", "eth_getBalance", [ADDRESS, { blockNumber: "0x1", blockHash: HASH }]],
    ["EIP-1898 naming neither", "eth_getBalance", [ADDRESS, {}]],
    ["EIP-1898 with a tag for a number", "eth_getBalance", [ADDRESS, { blockNumber: "latest" }]],
    ["EIP-1898 nested", "eth_getBalance", [ADDRESS, { blockNumber: { blockNumber: "0x1" } }]],
    ["EIP-1898 with a bad hash", "eth_getBalance", [ADDRESS, { blockHash: "0x01" }]],
    [
      "EIP-1898 with a non-boolean requireCanonical",
      "eth_getBalance",
      [ADDRESS, { blockHash: HASH, requireCanonical: "yes" }],
    ],
    ["a filter that is not an object", "eth_getLogs", ["latest"]],
    ["a filter that is an array", "eth_getLogs", [[]]],
    ["a filter left out", "eth_getLogs", []],
    ["a filter naming a hash and a range", "eth_getLogs", [{ blockHash: HASH, fromBlock: "0x1" }]],
    [
      "a filter naming a hash and an end",
      "eth_getLogs",
      [{ blockHash: OTHER_HASH, toBlock: "latest" }],
    ],
    ["a filter with a bad hash", "eth_getLogs", [{ blockHash: "0x01" }]],
    ["a filter with a bad start", "eth_getLogs", [{ fromBlock: "0xzz" }]],
    ["a filter with a bad end", "eth_getLogs", [{ toBlock: 7 }]],
    ["a filter with an object for an end", "eth_getLogs", [{ toBlock: { blockNumber: "0x1" } }]],
  ])("%s: null", (_, method, params) => {
    expect(blockRefOf(method, params)).toBeNull();
  });

  it("never throws, whatever the params", () => {
    const odd: unknown[] = [
      undefined,
      null,
      0,
      Number.NaN,
      "",
      "latest",
      HASH,
      true,
      [],
      {},
      [null],
      [undefined, undefined, undefined],
      [{}, {}, {}],
      [[], [], []],
      [Object.create(null)],
      [{ blockHash: null, blockNumber: null }],
      [{ fromBlock: {}, toBlock: [] }],
      [ADDRESS, { blockNumber: 1n }],
      new Array(5),
      ["0x1", "0x1", "0x1", "0x1"],
    ];
    for (const method of [...KNOWN_METHODS, "eth_somethingNew", "debug_x"]) {
      for (const params of odd) expect(() => blockRefOf(method, params)).not.toThrow();
    }
  });
});

describe("the execution-apis conformance suite", () => {
  const fixtures = loadExecutionApisFixtures();
  const calls = fixtures.flatMap((fixture) =>
    fixture.exchanges.map((exchange) => {
      const request = JSON.parse(exchange.request) as { method: string; params?: unknown };
      const answered = !("error" in (JSON.parse(exchange.response) as object));
      return { file: fixture.file, method: request.method, params: request.params, answered };
    }),
  );

  // testing_* builds blocks for client tests; it is no method a gateway serves.
  const served = [...new Set(calls.map((call) => call.method))].filter(
    (method) => !method.startsWith("testing_"),
  );

  it.each(served)("lists %s", (method) => {
    expect(isKnownMethod(method)).toBe(true);
  });

  it("reads the block of every call a node answered", () => {
    const unread = calls.filter(
      (call) =>
        call.answered &&
        methodSpec(call.method).block.kind !== "none" &&
        blockRefOf(call.method, call.params) === null,
    );
    expect(unread.map((call) => call.file)).toEqual([]);
  });

  it("reads no block from a filter the node refused for naming both a hash and a range", () => {
    const refused = calls.find((call) =>
      call.file.startsWith("eth_getLogs/filter-error-invalid-blockHash-and-range"),
    );
    expect(refused?.answered).toBe(false);
    expect(blockRefOf("eth_getLogs", refused?.params)).toBeNull();
  });
});
