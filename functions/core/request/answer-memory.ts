import { LRUCache } from "lru-cache";
import type { ChainHead } from "../chain-head.ts";
import { type AnswerClass, contradictsHead } from "./cache-class.ts";

/**
 * The memory tier of the answer cache (docs/behaviour.md §11): one per container, every
 * network together, least recently used first out, bounded in bytes (`cache_memory_bytes`).
 * Answers stay whole JSON texts; an entry knows its class and what keeps it true.
 */

export interface MemoryAnswer {
  readonly text: string;
  readonly class: Exclude<AnswerClass, "never">;
  /** When it was stored (this container's clock, ms). */
  readonly storedAt: number;
  /** When it stops being served (ms); never for an immutable answer. */
  readonly expiresAt: number;
  /** The block it is about (an unfinalized answer), to check against the chain position. */
  readonly height: number | null;
  /** The hash of that block, when the answer named it. */
  readonly blockHash: string | null;
}

/** Bytes an entry costs beyond its texts: the entry object, the LRU's bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 160;

/**
 * Whether an entry may still be served: not expired, and for an unfinalized one, the chain
 * position known, no reorg seen since it was stored, and no other block at its height.
 */
export function stillTrue(entry: MemoryAnswer, head: ChainHead | null, now: number): boolean {
  if (now >= entry.expiresAt) return false;
  if (entry.class !== "unfinalized") return true;
  if (head === null || head.reorgSeenAt >= entry.storedAt) return false;
  if (entry.height === null || entry.blockHash === null) return true;
  return !contradictsHead(head, { number: entry.height, hash: entry.blockHash });
}

export class AnswerMemory {
  #cache: LRUCache<string, MemoryAnswer> | null = null;
  #maxBytes = 0;

  /** The entry for `key` when it is still true; a stale one is dropped. */
  get(key: string, head: ChainHead | null, now: number): MemoryAnswer | null {
    const entry = this.#cache?.get(key);
    if (entry === undefined) return null;
    if (stillTrue(entry, head, now)) return entry;
    this.#cache?.delete(key);
    return null;
  }

  /** Keeps an answer; one larger than the whole budget is not kept. */
  set(key: string, entry: MemoryAnswer, maxBytes: number): void {
    this.#resize(maxBytes).set(key, entry);
  }

  /** Bytes and entries held now. */
  usage(): { readonly bytes: number; readonly entries: number } {
    return { bytes: this.#cache?.calculatedSize ?? 0, entries: this.#cache?.size ?? 0 };
  }

  /** The LRU for the configured budget: a changed budget starts an empty one. */
  #resize(maxBytes: number): LRUCache<string, MemoryAnswer> {
    if (this.#cache === null || this.#maxBytes !== maxBytes) {
      this.#maxBytes = maxBytes;
      this.#cache = new LRUCache<string, MemoryAnswer>({
        maxSize: maxBytes,
        maxEntrySize: maxBytes,
        // JSON answers are ASCII: V8 keeps them one byte per character.
        sizeCalculation: (entry, key) =>
          Math.max(1, key.length + entry.text.length + ENTRY_OVERHEAD_BYTES),
      });
    }
    return this.#cache;
  }
}
