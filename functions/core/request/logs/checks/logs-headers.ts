import type { CallInfo } from "../../../classify/verdict.ts";
import { isRecord } from "../../../jsonrpc/envelope.ts";
import { blockRefOf } from "../../../methods/block-ref.ts";

/**
 * Block headers the log checks judge answers against (docs/behaviour.md §12.12): what one
 * header says (its number, hash and `logsBloom`), read from a node's block object, and this
 * container's small memory of the headers it has seen, per network, bounded.
 */

export interface BlockHeader {
  readonly number: number;
  /** 0x + 64 hex digits, lower case. */
  readonly hash: string;
  /** The bloom as the node sent it, or null when the block had none. */
  readonly logsBloom: string | null;
}

const QUANTITY = /^0x[0-9a-f]{1,16}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;

/** The header of a block object (`eth_getBlockBy*`), or null when it is not one. */
export function headerOf(block: unknown): BlockHeader | null {
  if (!isRecord(block)) return null;
  const { number, hash, logsBloom } = block;
  if (typeof number !== "string" || !QUANTITY.test(number)) return null;
  if (typeof hash !== "string" || !HASH.test(hash)) return null;
  const height = Number.parseInt(number, 16);
  if (!Number.isSafeInteger(height)) return null;
  return {
    number: height,
    hash: hash.toLowerCase(),
    logsBloom: typeof logsBloom === "string" ? logsBloom : null,
  };
}

/** The header a block answer carries, for a call that asked for one block; else null. */
export function headerAnswered(info: CallInfo, member: unknown): BlockHeader | null {
  if (info.method !== "eth_getBlockByNumber" && info.method !== "eth_getBlockByHash") return null;
  const ref = blockRefOf(info.method, info.params);
  if (ref?.kind !== "number" && ref?.kind !== "hash") return null;
  return isRecord(member) ? headerOf(member.result) : null;
}

/** Headers kept per network: enough for the blocks near the head a few indexers ask about. */
export const HEADERS_KEPT_PER_NETWORK = 512;

/**
 * The headers this container has seen, per network, oldest out first. Looked up by hash (a
 * `blockHash` filter names its block exactly) or by height (several hashes at a height while
 * a reorg settles: all are kept, the newest seen first).
 */
export class HeaderMemory {
  readonly #byNetwork = new Map<string, Map<string, BlockHeader>>();
  readonly #limit: number;

  constructor(limit = HEADERS_KEPT_PER_NETWORK) {
    this.#limit = limit;
  }

  keep(network: string, header: BlockHeader): void {
    let headers = this.#byNetwork.get(network);
    if (headers === undefined) {
      headers = new Map();
      this.#byNetwork.set(network, headers);
    }
    headers.delete(header.hash);
    headers.set(header.hash, header);
    for (const oldest of headers.keys()) {
      if (headers.size <= this.#limit) break;
      headers.delete(oldest);
    }
  }

  byHash(network: string, hash: string): BlockHeader | null {
    return this.#byNetwork.get(network)?.get(hash.toLowerCase()) ?? null;
  }

  /** Every header kept at each height of `from`..`to`, by height; newest seen first. */
  inRange(network: string, from: number, to: number): Map<number, BlockHeader[]> {
    const found = new Map<number, BlockHeader[]>();
    for (const header of this.#byNetwork.get(network)?.values() ?? []) {
      if (header.number < from || header.number > to) continue;
      const at = found.get(header.number) ?? [];
      at.unshift(header);
      found.set(header.number, at);
    }
    return found;
  }
}
