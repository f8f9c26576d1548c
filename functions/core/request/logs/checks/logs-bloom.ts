import { keccak_256 } from "@noble/hashes/sha3.js";
import { isRecord } from "../../../jsonrpc/envelope.ts";

/**
 * A block's `logsBloom` against a log filter (docs/behaviour.md §12.12), as the Yellow Paper
 * defines the bloom: 2048 bits; each log's address and each of its topics set three bits,
 * taken from the first three pairs of bytes of the value's keccak-256, 11 bits each, counted
 * from the bloom's last byte. A bloom can say "maybe" for a value no log of the block has (a
 * false positive), never "no" for one it has. Pure.
 */

/** The filter of an eth_getLogs call, as far as blooms and logs are concerned. */
export interface LogFilter {
  /** Addresses a log may come from (any of them); empty: any address. */
  readonly addresses: readonly string[];
  /** Per position, the topics a log may have there (any of them); empty: any topic. */
  readonly topics: ReadonlyArray<readonly string[]>;
}

const ADDRESS = /^0x[0-9a-f]{40}$/i;
const TOPIC = /^0x[0-9a-f]{64}$/i;
const BLOOM = /^0x[0-9a-f]{512}$/i;
const EMPTY_BLOOM = /^0x0{512}$/;

/**
 * The filter an eth_getLogs filter object states, or null when it is not one the check can
 * read (an address or topic that is not hex of its length): such a call is left to the node.
 */
export function logFilterOf(filter: unknown): LogFilter | null {
  if (!isRecord(filter)) return null;
  const addresses = oneOrMany(filter.address);
  if (addresses === null || !addresses.every((address) => ADDRESS.test(address))) return null;
  const given = filter.topics;
  if (given !== undefined && given !== null && !Array.isArray(given)) return null;
  const topics: string[][] = [];
  for (const position of (given ?? []) as unknown[]) {
    const any = oneOrMany(position);
    if (any === null || !any.every((topic) => TOPIC.test(topic))) return null;
    topics.push(any);
  }
  return {
    addresses: addresses.map((address) => address.toLowerCase()),
    topics: topics.map((position) => position.map((topic) => topic.toLowerCase())),
  };
}

/** A string, a list of strings, or nothing (null, absent): nothing is the empty list. */
function oneOrMany(value: unknown): string[] | null {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value;
  return null;
}

/** The three bloom bits a value sets: bit positions 0..2047, counted from the last byte. */
export function bloomBits(value: Uint8Array): readonly [number, number, number] {
  const hash = keccak_256(value);
  const bit = (pair: number) => (((hash[2 * pair] ?? 0) << 8) | (hash[2 * pair + 1] ?? 0)) & 2047;
  return [bit(0), bit(1), bit(2)];
}

/** Whether a bloom (0x + 512 hex digits) has every one of the bits set. */
function hasBits(bloom: string, bits: readonly number[]): boolean {
  for (const bit of bits) {
    // Bit b lives in byte 255 - floor(b / 8) (big-endian), nibble by nibble in the text.
    const digit = bloom.length - 1 - Math.floor(bit / 4);
    const nibble = Number.parseInt(bloom[digit] ?? "0", 16);
    if ((nibble & (1 << (bit % 4))) === 0) return false;
  }
  return true;
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.slice(2), "hex"));
}

/**
 * Whether a block whose bloom is `bloom` may hold a log the filter matches: null when the
 * bloom is not one (absent, the wrong length, not hex). Bit positions are worked out once per
 * filter, so each block costs only lookups.
 */
export type BloomTest = (bloom: unknown) => boolean | null;

export function bloomTestFor(filter: LogFilter): BloomTest {
  const bitsOf = (values: readonly string[]) => values.map((value) => bloomBits(hexBytes(value)));
  const addresses = bitsOf(filter.addresses);
  const topics = filter.topics.map(bitsOf);
  return (bloom) => {
    if (typeof bloom !== "string" || !BLOOM.test(bloom)) return null;
    // No bit set: the block has no log at all (a filter without address or topics included).
    if (EMPTY_BLOOM.test(bloom)) return false;
    const any = (candidates: ReadonlyArray<readonly number[]>) =>
      candidates.length === 0 || candidates.some((bits) => hasBits(bloom, bits));
    return any(addresses) && topics.every(any);
  };
}

/** Whether one log (as a node returns it) matches the filter: address, then topics by position. */
export function logMatches(log: unknown, filter: LogFilter): boolean {
  if (!isRecord(log)) return false;
  const address = typeof log.address === "string" ? log.address.toLowerCase() : null;
  if (filter.addresses.length > 0 && (address === null || !filter.addresses.includes(address))) {
    return false;
  }
  const topics = Array.isArray(log.topics) ? log.topics : [];
  return filter.topics.every((wanted, position) => {
    if (wanted.length === 0) return true;
    const topic = topics[position];
    return typeof topic === "string" && wanted.includes(topic.toLowerCase());
  });
}
