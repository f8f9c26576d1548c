import type { ChainHead } from "../../chain/chain-head.ts";
import type { AnswerClass } from "../vocabulary.ts";
import { contradictsHead } from "./cache-class.ts";

/**
 * The memory tier of the answer cache (docs/behaviour.md §11): one per container, every
 * network together, least recently used first out, bounded in bytes (`cache_memory_bytes`).
 * Answers stay whole JSON texts; an entry knows its class and what keeps it true.
 *
 * A Map keeps insertion order, so moving a used entry to the end makes its first entry the
 * least recently used. (`lru-cache` does the same with `maxSize`, at 21.6 KB of the proxy
 * bundle, which took it over its size bound; this is the part of it the cache needs.)
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

/** What an entry costs the memory tier: JSON answers are ASCII, one byte a character in V8. */
export function entryBytes(key: string, text: string): number {
  return key.length + text.length + ENTRY_OVERHEAD_BYTES;
}

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
  readonly #entries = new Map<string, { entry: MemoryAnswer; bytes: number }>();
  #bytes = 0;

  /** The entry for `key` when it is still true (now the most recently used); a stale one is dropped. */
  get(key: string, head: ChainHead | null, now: number): MemoryAnswer | null {
    const kept = this.#entries.get(key);
    if (kept === undefined) return null;
    this.#entries.delete(key);
    if (!stillTrue(kept.entry, head, now)) {
      this.#bytes -= kept.bytes;
      return null;
    }
    this.#entries.set(key, kept);
    return kept.entry;
  }

  /**
   * Keeps an answer, dropping the least recently used ones until every entry fits `maxBytes`;
   * one larger than the whole budget is not kept.
   */
  set(key: string, entry: MemoryAnswer, maxBytes: number): void {
    const previous = this.#entries.get(key);
    if (previous !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= previous.bytes;
    }
    const bytes = entryBytes(key, entry.text);
    if (bytes <= maxBytes) {
      this.#entries.set(key, { entry, bytes });
      this.#bytes += bytes;
    }
    // The least recently used go while the entries do not fit (no walk while they do).
    if (this.#bytes <= maxBytes) return;
    for (const [oldest, kept] of this.#entries) {
      if (this.#bytes <= maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= kept.bytes;
    }
  }

  /** Bytes and entries held now. */
  usage(): { readonly bytes: number; readonly entries: number } {
    return { bytes: this.#bytes, entries: this.#entries.size };
  }
}
