/**
 * The method catalogue (docs/behaviour.md §9): one table of the standard Ethereum JSON-RPC
 * methods and the common client extensions, the one place the gateway reads method semantics
 * from. A method not in the table gets a conservative default.
 */

import type {
  BlockParam,
  BlockTag,
  CacheClass,
  MethodSpec,
  ResultRule,
  ResultShape,
} from "./method-spec.ts";

const NO_BLOCK: BlockParam = { kind: "none" };

/** A block number or tag at `params[at]`; `whenOmitted` makes it optional. */
const numberOrTag = (at: number, whenOmitted?: BlockTag): BlockParam =>
  whenOmitted === undefined
    ? { kind: "number-or-tag", at }
    : { kind: "number-or-tag", at, whenOmitted };
/** A block number, tag or hash at `params[at]`; `whenOmitted` makes it optional. */
const numberTagOrHash = (at: number, whenOmitted?: BlockTag): BlockParam =>
  whenOmitted === undefined
    ? { kind: "number-tag-or-hash", at }
    : { kind: "number-tag-or-hash", at, whenOmitted };
const blockHash = (at: number): BlockParam => ({ kind: "hash", at });
const logFilter = (at: number): BlockParam => ({ kind: "filter", at });

const value = (shape: ResultShape): ResultRule => ({ shape, nullWhen: "never" });
const orNull = (shape: ResultShape): ResultRule => ({ shape, nullWhen: "always" });
const orNullIfUnsettled = (shape: ResultShape): ResultRule => ({
  shape,
  nullWhen: "unsettled-block",
});

/** A light, repeatable read about no block, with no result rule, unless `overrides` say so. */
function spec(cache: CacheClass, overrides: Partial<MethodSpec> = {}): MethodSpec {
  return {
    block: NO_BLOCK,
    hashKeyed: null,
    idempotent: true,
    weight: "light",
    cache,
    result: null,
    tracesMinedBlock: false,
    runsCallersCode: false,
    ...overrides,
  };
}

const byTxHash = (overrides: Partial<MethodSpec> = {}): MethodSpec =>
  spec("by-hash", { hashKeyed: "tx", ...overrides });
const byBlockHash = (at: number, overrides: Partial<MethodSpec> = {}): MethodSpec =>
  spec("by-hash", { block: blockHash(at), hashKeyed: "block", ...overrides });
const atBlock = (block: BlockParam, overrides: Partial<MethodSpec> = {}): MethodSpec =>
  spec("by-block", { block, ...overrides });
/** Changes the chain or the node's own state: never repeated, never cached. */
const write = (overrides: Partial<MethodSpec> = {}): MethodSpec =>
  spec("never", { idempotent: false, ...overrides });
const HEAVY = { weight: "heavy" } as const;
/** Runs the caller's code, or the block's under the caller's tracer. */
const CALLERS_CODE = { weight: "heavy", runsCallersCode: true } as const;
const TRACE_OF_MINED_BLOCK = { weight: "heavy", tracesMinedBlock: true } as const;
/** A debug trace of a mined block, under a tracer the caller may have written (JS). */
const DEBUG_TRACE_OF_MINED_BLOCK = { ...TRACE_OF_MINED_BLOCK, runsCallersCode: true } as const;

/** State at a block: the block parameter is optional and means "latest" when left out. */
const stateAt = (at: number, result: ResultRule | null = null): MethodSpec =>
  atBlock(numberTagOrHash(at, "latest"), { result });

const CATALOGUE: Readonly<Record<string, MethodSpec>> = {
  // ---- chain and node
  eth_chainId: spec("static", { result: value("quantity") }),
  net_version: spec("static", { result: value("version") }),
  web3_sha3: spec("static"), // a pure function of its input
  eth_blockNumber: spec("realtime", { result: value("quantity") }),
  eth_syncing: spec("realtime"),
  eth_config: spec("realtime"), // the fork schedule: changes only when a fork activates
  // Each of these describes the node that answers, so one provider's answer is not another's.
  web3_clientVersion: spec("never"),
  net_listening: spec("never"),
  net_peerCount: spec("never"),
  eth_protocolVersion: spec("never"),
  eth_capabilities: spec("never"),
  eth_mining: spec("never"),
  eth_hashrate: spec("never"),
  eth_coinbase: spec("never"),
  eth_accounts: spec("never"),

  // ---- fees
  eth_gasPrice: spec("realtime", { result: value("quantity") }),
  eth_maxPriorityFeePerGas: spec("realtime", { result: value("quantity") }),
  eth_blobBaseFee: spec("realtime", { result: value("quantity") }),
  eth_baseFee: spec("realtime"),
  // By the newest block named; with a tag that block moves, so the answer is realtime.
  eth_feeHistory: atBlock(numberOrTag(1), { result: value("object") }),

  // ---- blocks
  eth_getBlockByHash: byBlockHash(0, { result: orNull("object") }),
  eth_getBlockByNumber: atBlock(numberOrTag(0), { result: orNullIfUnsettled("object") }),
  eth_getBlockTransactionCountByHash: byBlockHash(0),
  // Null only when the node has no such block: about a block the gateway knows exists, a
  // provider that has not reached it yet (the same for the uncle count and the header).
  eth_getBlockTransactionCountByNumber: atBlock(numberOrTag(0), {
    result: orNullIfUnsettled("quantity"),
  }),
  eth_getBlockReceipts: atBlock(numberTagOrHash(0), { result: orNullIfUnsettled("array") }),
  eth_getBlockAccessList: atBlock(numberTagOrHash(0)),
  eth_getHeaderByHash: byBlockHash(0),
  eth_getHeaderByNumber: atBlock(numberOrTag(0), { result: orNullIfUnsettled("object") }),
  eth_getUncleByBlockHashAndIndex: byBlockHash(0),
  eth_getUncleByBlockNumberAndIndex: atBlock(numberOrTag(0)),
  eth_getUncleCountByBlockHash: byBlockHash(0),
  eth_getUncleCountByBlockNumber: atBlock(numberOrTag(0), {
    result: orNullIfUnsettled("quantity"),
  }),

  // ---- transactions and receipts
  eth_getTransactionByHash: byTxHash({ result: orNull("object") }),
  eth_getTransactionReceipt: byTxHash({ result: orNull("object") }),
  eth_getRawTransactionByHash: byTxHash(),
  eth_getTransactionByBlockHashAndIndex: byBlockHash(0),
  eth_getTransactionByBlockNumberAndIndex: atBlock(numberOrTag(0)),
  eth_getRawTransactionByBlockHashAndIndex: byBlockHash(0),
  eth_getRawTransactionByBlockNumberAndIndex: atBlock(numberOrTag(0)),

  // ---- state
  eth_getBalance: stateAt(1, value("quantity")),
  eth_getTransactionCount: stateAt(1, value("quantity")),
  eth_getCode: stateAt(1, value("data")),
  eth_getStorageAt: stateAt(2, value("data")),
  eth_getStorageValues: stateAt(1),
  eth_getAccount: atBlock(numberTagOrHash(1)),
  // Builds Merkle proofs out of the state trie: slow on old blocks of an archive node.
  eth_getProof: atBlock(numberTagOrHash(2, "latest"), HEAVY),

  // ---- execution
  // Runs the caller's code: how long it takes is the caller's, never a sign of a slow provider.
  eth_call: atBlock(numberTagOrHash(1, "latest"), { ...CALLERS_CODE, result: value("data") }),
  // Both run against the pending block when no block is given (go-ethereum's default).
  eth_estimateGas: atBlock(numberOrTag(1, "pending"), {
    ...CALLERS_CODE,
    result: value("quantity"),
  }),
  eth_createAccessList: atBlock(numberOrTag(1, "pending"), CALLERS_CODE),
  eth_simulateV1: atBlock(numberTagOrHash(1, "latest"), CALLERS_CODE),
  eth_fillTransaction: spec("never"), // fills nonce and fees from the pending state

  // ---- logs and filters (a filter lives on the one provider that installed it)
  eth_getLogs: atBlock(logFilter(0), { weight: "heavy", result: value("array") }),
  eth_newFilter: write({ block: logFilter(0) }),
  eth_newBlockFilter: write(),
  eth_newPendingTransactionFilter: write(),
  eth_uninstallFilter: write(),
  eth_getFilterChanges: write(), // each poll consumes the changes since the last one
  eth_getFilterLogs: spec("never", HEAVY),
  eth_subscribe: write(),
  eth_unsubscribe: write(),

  // ---- sending and signing
  eth_sendRawTransaction: write({ result: value("data") }),
  eth_sendRawTransactionSync: write(HEAVY), // waits for the receipt: slow by design
  eth_sendTransaction: write(),
  eth_sign: write(),
  eth_signTransaction: write(),
  eth_signTypedData_v4: write(),

  // ---- txpool: the node's own pending transactions
  txpool_status: spec("never"),
  txpool_contentFrom: spec("never"),
  // Every pending transaction of the node: megabytes on a busy chain.
  txpool_content: spec("never", HEAVY),
  txpool_inspect: spec("never", HEAVY),

  // ---- debug: raw getters are stored lookups, light unlike the rest of the family
  debug_getRawHeader: atBlock(numberOrTag(0)),
  debug_getRawBlock: atBlock(numberOrTag(0)),
  debug_getRawReceipts: atBlock(numberOrTag(0)),
  debug_getRawBlockAccessList: atBlock(numberOrTag(0)),
  debug_getRawTransaction: byTxHash(),
  debug_getBadBlocks: spec("never"),
  debug_traceBlockByNumber: atBlock(numberOrTag(0), DEBUG_TRACE_OF_MINED_BLOCK),
  debug_traceBlockByHash: byBlockHash(0, DEBUG_TRACE_OF_MINED_BLOCK),
  debug_traceTransaction: byTxHash(DEBUG_TRACE_OF_MINED_BLOCK),
  debug_traceCall: atBlock(numberTagOrHash(1), CALLERS_CODE),
  debug_traceBlock: spec("never", CALLERS_CODE), // a block given as RLP, maybe never mined
  debug_storageRangeAt: byBlockHash(0, HEAVY),
  debug_setHead: write(),

  // ---- trace (OpenEthereum, Erigon, Nethermind, Reth)
  // Null only for a block the node does not have (reth, Erigon), as for a block's own lookup.
  trace_block: atBlock(numberOrTag(0), {
    ...TRACE_OF_MINED_BLOCK,
    result: orNullIfUnsettled("array"),
  }),
  trace_replayBlockTransactions: atBlock(numberOrTag(0), {
    ...TRACE_OF_MINED_BLOCK,
    result: orNullIfUnsettled("array"),
  }),
  trace_transaction: byTxHash(TRACE_OF_MINED_BLOCK),
  trace_replayTransaction: byTxHash(TRACE_OF_MINED_BLOCK),
  trace_get: byTxHash(HEAVY),
  trace_filter: atBlock(logFilter(0), HEAVY),
  trace_call: atBlock(numberTagOrHash(2, "latest"), CALLERS_CODE),
  trace_callMany: atBlock(numberTagOrHash(1, "latest"), CALLERS_CODE),
  trace_rawTransaction: spec("never", CALLERS_CODE), // traced on top of the node's own tip
};

const SPECS: ReadonlyMap<string, MethodSpec> = new Map(Object.entries(CATALOGUE));

/** Every method the catalogue lists. */
export const KNOWN_METHODS: readonly string[] = [...SPECS.keys()];

/** Not cached, retried on another provider, light, about no block, any result accepted. */
const UNKNOWN_METHOD: MethodSpec = spec("never");
/** A family whose members re-execute transactions: heavy even when not listed. */
const HEAVY_FAMILIES = ["debug_", "trace_"];
const UNKNOWN_HEAVY_METHOD: MethodSpec = spec("never", HEAVY);

/** The catalogue entry for `method`, or the default for a method it does not list. */
export function methodSpec(method: string): MethodSpec {
  const known = SPECS.get(method);
  if (known !== undefined) return known;
  const heavy = typeof method === "string" && HEAVY_FAMILIES.some((p) => method.startsWith(p));
  return heavy ? UNKNOWN_HEAVY_METHOD : UNKNOWN_METHOD;
}

/** Whether the catalogue lists `method` (a family default does not count). */
export function isKnownMethod(method: string): boolean {
  return SPECS.has(method);
}
