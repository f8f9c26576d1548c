/**
 * The words nodes and providers answer with when they no longer keep (or never kept) the state,
 * bodies, receipts or logs of the block asked about (docs/behaviour.md §16.4): one row per
 * wording, each with where it was read. A provider's gateway (Ankr, QuickNode, Alchemy, dRPC's
 * nodecore) mostly passes its node's words on, so the node rows cover it too; the rows below
 * name the providers' own words where they have any. Case-insensitive, word-based: the caller's
 * words echoed back are taken out before these are looked for (classify-error.ts).
 */

export interface PrunedHistoryRow {
  /** Who says it. */
  readonly client: string;
  /** A real answer's message, for the table-driven test of this row. */
  readonly example: string;
  readonly pattern: RegExp;
  /** Where the wording was read (repository and file, or the public thread quoting it). */
  readonly source: string;
}

export const PRUNED_HISTORY_ROWS: readonly PrunedHistoryRow[] = [
  {
    client: "geth (hash scheme), bor, BSC, coreth, Nethermind",
    example:
      "missing trie node 945e00a1e6f72d0cea125f726a81a110c5f04da829238e186cdcf5e887e8be79 (path )",
    pattern: /\bmissing trie node\b/,
    source: "ethereum/go-ethereum trie/errors.go (MissingNodeError); ethereum/go-ethereum#20874",
  },
  {
    client: "Polygon bor",
    example:
      "missing trie node c6ebfa185e24077a555f06caaf4b78d9e0ae9dcb7a693ec753e856f49f55c85c (path ) state 0xc6ebfa185e24077a555f06caaf4b78d9e0ae9dcb7a693ec753e856f49f55c85c is not available, not found",
    pattern: /\bstate 0x[0-9a-f]{8,64} is not available\b/,
    source: "0xPolygon/bor#1303",
  },
  {
    client: "geth (path scheme)",
    example:
      "historical state 8d3c625e6b2d96b06b2d96b06b2d96b06b2d96b06b2d96b06b2d96b06b2d96b0 is not available",
    pattern: /\bhistorical state\b[^.]{0,80}\bnot available\b/,
    source: "ethereum/go-ethereum core/state/database_history.go (HistoricDB.Reader)",
  },
  {
    client: "geth (path archive, past --history.state)",
    example:
      "state 0x669c5301b4a7abb7d1cd82d98f1c8a0d39e4dc0c3f807086c73e3172eb0c256f is not available",
    pattern: /\bstate 0x[0-9a-f]{8,64} is not available\b/,
    source: "ethereum/go-ethereum#32148 (geth 1.16.1)",
  },
  {
    client: "geth (path archive, indexing)",
    example: "state histories haven't been fully indexed yet",
    pattern:
      /\b(state|trienode) histories haven't been fully indexed\b|\bhistory is not fully indexed\b/,
    source: "ethereum/go-ethereum triedb/pathdb/reader.go, triedb/pathdb/history_reader.go",
  },
  {
    client: "geth, bor, coreth (tracing)",
    example: "required historical state unavailable (reexec=128)",
    pattern: /\brequired historical state unavailable\b/,
    source: "ethereum/go-ethereum eth/state_accessor.go; 0xPolygon/bor#322",
  },
  {
    client: "geth (EIP-4444 history expiry, code 4444)",
    example: "pruned history unavailable",
    pattern: /\bpruned history unavailable\b/,
    source: "ethereum/go-ethereum core/history (PrunedHistoryError), eth/api_backend.go",
  },
  {
    client: "reth (code 4444)",
    example: "pruned history unavailable: requested 5, earliest available 100",
    pattern: /\bpruned history unavailable\b/,
    source: "paradigmxyz/reth crates/rpc/rpc-eth-types/src/error/mod.rs (PrunedHistoryUnavailable)",
  },
  {
    client: "reth (state)",
    example: "state at block #14875359 is pruned",
    pattern: /\bstate at block #?\d+ is pruned\b/,
    source: "paradigmxyz/reth crates/storage/errors/src/provider.rs (StateAtBlockPruned)",
  },
  {
    client: "Erigon 3",
    example:
      "old data not available due to pruning: requested block 14000000, blocks are available from block 15537393",
    pattern: /\bold data not available due to pruning\b/,
    source:
      "erigontech/erigon db/state/history_reader_v3.go (PrunedError), rpc/jsonrpc/eth_api.go (checkPruneBlocks)",
  },
  {
    client: "Erigon 2",
    example: "history has been pruned for this block",
    pattern: /\bhistory has been pruned for this block\b/,
    source: "erigontech/erigon turbo/jsonrpc/eth_api.go (checkPruneHistory)",
  },
  {
    client: "Nethermind (code -32002)",
    example:
      "No state available for block 45615500 (0x3f9e020290502d1d41f4b5519e7d456f0935dea980ec310935206cac8239117e)",
    pattern: /\bno state available for block\b/,
    source:
      "NethermindEth/nethermind Nethermind.JsonRpc (GetStateFailureResult); NethermindEth/nethermind#13603",
  },
  {
    client: "Besu",
    example: "World state unavailable",
    pattern: /\bworld state unavailable\b/,
    source: "hyperledger/besu RpcErrorType.java (WORLD_STATE_UNAVAILABLE)",
  },
  {
    client: "Avalanche coreth",
    example:
      "block number 100 is before the oldest allowed block number 2000 (window of 32 blocks)",
    pattern: /\bis before the oldest allowed block number\b/,
    source: "ava-labs/coreth internal/ethapi/api_extra.go (stateQueryBlockNumberAllowed)",
  },
  {
    client: "Avalanche coreth (path scheme)",
    example: "historical state not available in path scheme yet",
    pattern:
      /\bhistorical state not available in path scheme\b|\bstate history is not yet available in path-based scheme\b/,
    source: "ava-labs/coreth eth/state_accessor.go, eth/api_debug.go",
  },
  {
    client: "OpenEthereum / Parity",
    example:
      "This request is not supported because your node is running with state pruning. Run with --pruning=archive.",
    pattern: /\brunning with state pruning\b/,
    source: "openethereum/parity-ethereum#11594",
  },
  {
    client: "Infura (code -32002, HTTP 403)",
    example: "project ID does not have access to archive state",
    pattern: /\b(does not have access to|is required to access) archive state\b/,
    source:
      "ethers-io/ethers.js#715; status-im/status-legacy#13361; miguelmota/ethereum-development-with-go-book#42",
  },
  {
    client: "dRPC (code 27)",
    example: "Unknown state. First available state is 14875359",
    pattern: /\bunknown state\b[^.]{0,10}\.?\s*first available state\b/,
    source:
      "subsquid/squid-sdk evm/evm-rpc/test/rpc-client.test.ts (PERMANENT); a dRPC user's notes (code 27)",
  },
  {
    client: "Chainstack",
    example: "Access to archival, debug, or trace data is not included in your current plan",
    pattern: /\baccess to archival\b[^.]{0,40}\bnot included in your current plan\b/,
    source: 'drpcorg/dshackle EthereumLowerBoundStateDetector.kt ("chainstack")',
  },
  {
    client: "Kava, Cronos",
    example: "height 100 is not available, lowest height is 2000",
    pattern: /\bis not available, lowest height is\b/,
    source: 'drpcorg/dshackle EthereumLowerBoundStateDetector.kt ("kava, cronos")',
  },
  {
    client: "Moonbeam, Moonriver",
    example: "State already discarded for BlockId::Hash(0x…)",
    pattern: /\bstate already discarded for\b/,
    source: 'drpcorg/dshackle EthereumLowerBoundStateDetector.kt ("moonriver, moonbeam")',
  },
  {
    client: "Fantom, Sonic",
    example: "state does not maintain archive data",
    pattern: /\bstate does not maintain archive data\b/,
    source:
      '0xsoniclabs/sonic#1046; drpcorg/dshackle EthereumLowerBoundStateDetector.kt ("fantom")',
  },
  {
    client: "Monad",
    example: "Request might be querying historical state that is not available",
    pattern: /\bquerying historical state that is not available\b/,
    source: 'drpcorg/dshackle EthereumLowerBoundStateDetector.kt ("monad")',
  },
  {
    client: "nodecore (dRPC's gateway)",
    example: "block 100 has been pruned; earliest available is 2000",
    pattern: /\bhas been pruned; earliest available is\b|\bnode state is pruned\b/,
    source: "drpcorg/nodecore internal/upstreams/lower_bounds/evm_bounds/no_data_errors.go",
  },
];

/** Any row's words: the node no longer keeps (or never kept) what the call is about. */
export const PRUNED_HISTORY = new RegExp(
  [...new Set(PRUNED_HISTORY_ROWS.map((row) => row.pattern.source))].join("|"),
  "i",
);

/** EIP-4444's code for "pruned history unavailable" (geth and reth): the code alone says so. */
export const PRUNED_HISTORY_CODE = 4444;

/**
 * The oldest block the answer says the node keeps, when it says (reth's "earliest available",
 * dRPC's "first available state is", Erigon's "available from block", coreth's "oldest allowed
 * block number", Kava's "lowest height is"): decimal, as they write it.
 */
const OLDEST_NAMED =
  /\b(?:earliest available(?: is)?|first available state is|available from block|oldest allowed block number|lowest height is)\s+#?(\d{1,16})\b/i;

export function oldestNamedIn(message: string): number | null {
  const match = OLDEST_NAMED.exec(message);
  if (match?.[1] === undefined) return null;
  const block = Number(match[1]);
  return Number.isSafeInteger(block) ? block : null;
}
