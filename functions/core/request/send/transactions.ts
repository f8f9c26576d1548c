import { decode } from "@ethereumjs/rlp";
import { keccak_256 } from "@noble/hashes/sha3.js";

/**
 * What the gateway reads from a signed raw transaction (`eth_sendRawTransaction`'s param)
 * before it goes anywhere (docs/behaviour.md §4.12): its hash, which every node will report
 * for it, so a send whose answer was lost can be recognised; and the chain it was signed for.
 */
export interface RawTransaction {
  /** keccak-256 of the signed bytes, 0x-prefixed lower-case hex. */
  readonly hash: string;
  /** The chain id it was signed for; null when it names none (pre-EIP-155) or is unreadable. */
  readonly chainId: number | null;
}

const HEX = /^0x(?:[0-9a-fA-F]{2})+$/;
/** EIP-2718 typed transactions: 0x00–0x7f is the type byte; a legacy one starts an RLP list. */
const LAST_TYPE_BYTE = 0x7f;

/** The raw transaction's hash and chain id, or null when `raw` is not hex bytes at all. */
export function readRawTransaction(raw: unknown): RawTransaction | null {
  if (typeof raw !== "string" || !HEX.test(raw)) return null;
  const bytes = Buffer.from(raw.slice(2), "hex");
  return { hash: `0x${Buffer.from(keccak_256(bytes)).toString("hex")}`, chainId: chainIdOf(bytes) };
}

function chainIdOf(bytes: Uint8Array): number | null {
  const first = bytes[0];
  if (first === undefined) return null;
  try {
    if (first <= LAST_TYPE_BYTE) {
      // Typed (EIP-2930, 1559, 4844, 7702): the chain id is the first field of the payload.
      const fields = decode(bytes.subarray(1));
      return Array.isArray(fields) ? quantity(fields[0]) : null;
    }
    // Legacy: v = chainId * 2 + 35 or 36 under EIP-155; 27 or 28 names no chain.
    const fields = decode(bytes);
    if (!Array.isArray(fields) || fields.length !== 9) return null;
    const v = quantity(fields[6]);
    return v === null || v < 35 ? null : Math.floor((v - 35) / 2);
  } catch {
    return null;
  }
}

function quantity(field: unknown): number | null {
  if (!(field instanceof Uint8Array) || field.length > 6) return null;
  let value = 0;
  for (const byte of field) value = value * 256 + byte;
  return value;
}
