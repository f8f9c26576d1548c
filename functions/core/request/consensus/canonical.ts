import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { methodSpec } from "../../methods/catalogue.ts";

/**
 * Answers compared as values, not as text (docs/behaviour.md §17.2): keys in one order, hex in
 * lower case, quantities without leading zeros, members that are `null` left out (a node that
 * omits a field and one that writes `null` say the same), and the fields nodes legitimately
 * answer differently dropped by path. Two answers agree when their canonical forms hash alike.
 */

/** OP-stack receipt fields each node derives from its own view of L1. */
const L1_FEE_FIELDS = [
  "l1Fee",
  "l1GasUsed",
  "l1GasPrice",
  "l1FeeScalar",
  "l1BaseFeeScalar",
  "l1BlobBaseFee",
  "l1BlobBaseFeeScalar",
  "operatorFeeScalar",
  "operatorFeeConstant",
];
/** A receipt's fields that differ between nodes: geth 1.16's timestamps, OP-stack L1 fees. */
const RECEIPT_FIELDS = ["blockTimestamp", "logs.*.blockTimestamp", ...L1_FEE_FIELDS];
/** A transaction's: geth 1.16's `blockTimestamp`; `yParity`, which older clients leave out beside `v`. */
const TRANSACTION_FIELDS = ["blockTimestamp", "yParity"];
/** A block's: `totalDifficulty`, which geth stopped answering after the merge and others still do. */
const BLOCK_FIELDS = [
  "totalDifficulty",
  ...TRANSACTION_FIELDS.map((path) => `transactions.*.${path}`),
];

/** Fields ignored whatever the config says, by method; a network's `ignore_fields` adds to them. */
export const DEFAULT_IGNORED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  eth_getLogs: ["*.blockTimestamp"],
  eth_getTransactionReceipt: RECEIPT_FIELDS,
  eth_getBlockReceipts: RECEIPT_FIELDS.map((path) => `*.${path}`),
  eth_getBlockByNumber: BLOCK_FIELDS,
  eth_getBlockByHash: BLOCK_FIELDS,
  eth_getTransactionByHash: TRANSACTION_FIELDS,
  eth_getTransactionByBlockHashAndIndex: TRANSACTION_FIELDS,
  eth_getTransactionByBlockNumberAndIndex: TRANSACTION_FIELDS,
};

/**
 * Members that are quantities wherever they appear: their leading zeros say nothing (a node
 * may pad `r` to 32 bytes, or write `0x00` for zero). Data members (hashes, addresses, input,
 * log data) keep theirs, which are part of the bytes.
 */
const QUANTITY_KEYS: ReadonlySet<string> = new Set([
  "number",
  "blockNumber",
  "transactionIndex",
  "logIndex",
  "nonce",
  "gas",
  "gasLimit",
  "gasPrice",
  "gasUsed",
  "cumulativeGasUsed",
  "effectiveGasPrice",
  "blobGasUsed",
  "blobGasPrice",
  "excessBlobGas",
  "maxFeePerGas",
  "maxPriorityFeePerGas",
  "maxFeePerBlobGas",
  "baseFeePerGas",
  "status",
  "type",
  "value",
  "v",
  "r",
  "s",
  "yParity",
  "chainId",
  "difficulty",
  "totalDifficulty",
  "size",
  "timestamp",
  "index",
  "validatorIndex",
  "amount",
  "mint",
  "depositNonce",
  "depositReceiptVersion",
  "gasUsedForL1",
  "l1BlockNumber",
  ...L1_FEE_FIELDS,
]);

/** Nesting past this is no answer worth comparing (and would cost a deep recursion). */
const MAX_DEPTH = 256;

const HEX = /^0x[0-9a-fA-F]*$/;

type Path = readonly string[];

/** The paths ignored for `method`: the defaults, then the network's own. */
export function ignoredPaths(
  method: string,
  configured: Readonly<Record<string, readonly string[]>>,
): readonly Path[] {
  const paths = [...(DEFAULT_IGNORED_FIELDS[method] ?? []), ...(configured[method] ?? [])];
  return paths.map((path) => path.split("."));
}

class TooDeep extends Error {}

/**
 * The canonical JSON text of a result for `method`, with `ignored` paths dropped; null when the
 * result nests too deep to compare.
 */
export function canonicalText(
  result: unknown,
  method: string,
  ignored: readonly Path[],
): string | null {
  const quantity = methodSpec(method).result?.shape === "quantity";
  try {
    return JSON.stringify(canonical(result, ignored, quantity, 0));
  } catch (error) {
    if (error instanceof TooDeep || error instanceof RangeError) return null;
    throw error;
  }
}

function canonical(
  value: unknown,
  paths: readonly Path[],
  quantity: boolean,
  depth: number,
): unknown {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (typeof value === "string") return canonicalString(value, quantity);
  if (Array.isArray(value)) {
    return value.map((item, index) => {
      const below = pathsBelow(paths, String(index));
      return below === DROP ? null : canonical(item, below, false, depth + 1);
    });
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member === null || member === undefined) continue;
      const below = pathsBelow(paths, key);
      if (below === DROP) continue;
      out[key] = canonical(member, below, QUANTITY_KEYS.has(key), depth + 1);
    }
    return out;
  }
  return value;
}

const DROP: readonly Path[] = [];

/** The paths left below `key`, or DROP when one of them ends at it. */
function pathsBelow(paths: readonly Path[], key: string): readonly Path[] {
  if (paths.length === 0) return paths;
  const below: Path[] = [];
  for (const path of paths) {
    const [head, ...rest] = path;
    if (head !== key && head !== "*") continue;
    if (rest.length === 0) return DROP;
    below.push(rest);
  }
  return below;
}

function canonicalString(text: string, quantity: boolean): string {
  if (!HEX.test(text)) return text;
  const lower = text.toLowerCase();
  if (!quantity) return lower;
  const digits = lower.slice(2).replace(/^0+/, "");
  return `0x${digits === "" ? "0" : digits}`;
}

const encoder = new TextEncoder();

/** A digest of canonical text: equal texts, equal digests. */
export function digestOf(text: string): string {
  return bytesToHex(keccak_256(encoder.encode(text)));
}

/** The first characters of a digest, as events and error messages show it. */
export function shortDigest(digest: string): string {
  return digest.slice(0, 12);
}
