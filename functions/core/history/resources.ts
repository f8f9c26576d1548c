import { type BlockRef, blockRefOf } from "../methods/block-ref.ts";
import { methodSpec } from "../methods/catalogue.ts";

/**
 * What a call needs a provider to still keep (docs/behaviour.md §16): the resource and the
 * block. A full node keeps recent state only (geth: 128 blocks), and history expiry removes old
 * bodies, receipts and logs too, each on its own schedule, so each has a bound of its own.
 */

/**
 * `state`: balances, code, storage, calls and traces (a trace re-executes on the state before
 * its block); `proofs`: `eth_getProof`, which a path-scheme archive may keep for fewer blocks
 * than the state itself (geth's `stateproofs`); `bodies`: blocks with their transactions;
 * `receipts`; `logs`. The names of `eth_capabilities` map onto these (`blocks` is `bodies`).
 */
export const HISTORY_RESOURCES = ["state", "proofs", "bodies", "receipts", "logs"] as const;
export type HistoryResource = (typeof HISTORY_RESOURCES)[number];

/** How the clear error and the routing explanation name each resource. */
export const RESOURCE_WORDS: Readonly<Record<HistoryResource, string>> = {
  state: "state",
  proofs: "state proofs",
  bodies: "the block body",
  receipts: "receipts",
  logs: "logs",
};

const STATE_METHODS = [
  "eth_getBalance",
  "eth_getTransactionCount",
  "eth_getCode",
  "eth_getStorageAt",
  "eth_getStorageValues",
  "eth_getAccount",
  "eth_call",
  "eth_estimateGas",
  "eth_createAccessList",
  "eth_simulateV1",
  "debug_traceCall",
  "debug_storageRangeAt",
  "trace_call",
  "trace_callMany",
];
/** Traces of a mined block re-execute it on its parent's state. */
const TRACE_METHODS = [
  "debug_traceBlockByNumber",
  "debug_traceBlockByHash",
  "trace_block",
  "trace_replayBlockTransactions",
];
const BODY_METHODS = [
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_getBlockTransactionCountByNumber",
  "eth_getBlockTransactionCountByHash",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getRawTransactionByBlockNumberAndIndex",
  "eth_getRawTransactionByBlockHashAndIndex",
  "eth_getUncleByBlockNumberAndIndex",
  "eth_getUncleByBlockHashAndIndex",
  "eth_getUncleCountByBlockNumber",
  "eth_getUncleCountByBlockHash",
  "debug_getRawBlock",
];

const RESOURCE_OF: ReadonlyMap<string, HistoryResource> = new Map<string, HistoryResource>([
  ...STATE_METHODS.map((method) => [method, "state"] as const),
  ...TRACE_METHODS.map((method) => [method, "state"] as const),
  ...BODY_METHODS.map((method) => [method, "bodies"] as const),
  ["eth_getProof", "proofs"],
  ["eth_getBlockReceipts", "receipts"],
  ["debug_getRawReceipts", "receipts"],
  ["eth_getLogs", "logs"],
]);
const PARENT_STATE: ReadonlySet<string> = new Set(TRACE_METHODS);

/** The resource a method reads at its block, or null (headers, lookups by transaction hash). */
export function resourceOf(method: string): HistoryResource | null {
  return RESOURCE_OF.get(method) ?? null;
}

/**
 * EIP-1898's `{blockNumber: "earliest"}`, which nodes read as block 0 and the block reader
 * leaves to the node (a tag in an object is pinned by nobody).
 */
function earliestByObject(method: string, params: unknown): BlockRef | null {
  const where = methodSpec(method).block;
  if (where.kind !== "number-or-tag" && where.kind !== "number-tag-or-hash") return null;
  const given: unknown = Array.isArray(params) ? params[where.at] : undefined;
  if (typeof given !== "object" || given === null) return null;
  const named = given as { blockNumber?: unknown; blockHash?: unknown };
  return named.blockNumber === "earliest" && named.blockHash === undefined
    ? { kind: "tag", tag: "earliest" }
    : null;
}

/** What one call needs: a resource at a block. */
export interface HistoryNeed {
  readonly resource: HistoryResource;
  readonly block: number;
}

/**
 * What a call needs, or null when no bound applies: a method about no old data, a tag that
 * moves (`latest` and its kin, unless tag pinning turned it into a number), or a block hash the
 * gateway cannot put a number to. `earliest` is block 0; a log range needs its first block.
 * `numberOfHash` gives the number of a block known by its hash, when the gateway knows it.
 */
export function historyNeedOf(
  method: string,
  params: unknown,
  numberOfHash: (hash: string) => number | null = () => null,
): HistoryNeed | null {
  const resource = resourceOf(method);
  if (resource === null) return null;
  const ref = blockRefOf(method, params) ?? earliestByObject(method, params);
  let block: number | null = null;
  if (ref === null) return null;
  if (ref.kind === "number") block = ref.number;
  else if (ref.kind === "tag") block = ref.tag === "earliest" ? 0 : null;
  else if (ref.kind === "hash") block = numberOfHash(ref.hash);
  else if (ref.from.kind === "number") block = ref.from.number;
  else if (ref.from.kind === "tag" && ref.from.tag === "earliest") block = 0;
  if (block === null) return null;
  // A trace of block 0 re-executes nothing: genesis state is its own.
  if (PARENT_STATE.has(method) && methodSpec(method).tracesMinedBlock)
    block = Math.max(0, block - 1);
  return { resource, block };
}
