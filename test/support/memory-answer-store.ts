import { gzipSync } from "node:zlib";
import { MAX_COMPRESSED_BYTES } from "../../functions/adapters/store/answer-store.ts";
import type { SharedAnswerStore } from "../../functions/core/ports.ts";

/**
 * The answer cache's shared tier in memory, honouring the DynamoDB adapter's contract (the
 * contract test in test/integration/adapters/store/answer-store-contract.test.ts runs against both): what is
 * written is read back by network and key; an expired answer is not read; an answer over the
 * item cap compressed (or too large for an item at all) is not kept. Counts reads and writes for the pipeline's tests.
 */
export class MemoryAnswerStore implements SharedAnswerStore {
  readonly #answers = new Map<string, { text: string; expiresAt: number }>();
  readonly #clock: () => number;
  /** Reads that reached the store (one per GetItem or BatchGetItem), with their keys. */
  readonly reads: Array<{ network: string; keys: readonly string[] }> = [];
  /** Writes that reached the store. */
  readonly writes: Array<{ network: string; key: string }> = [];
  /** Makes every read fail, as an unreachable table would. */
  failing = false;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  async read(network: string, keys: readonly string[]): Promise<ReadonlyMap<string, string>> {
    this.reads.push({ network, keys });
    if (this.failing) throw new Error("connect ECONNREFUSED (shared answer store)");
    const found = new Map<string, string>();
    for (const key of keys) {
      const stored = this.#answers.get(`${network}\n${key}`);
      if (stored !== undefined && stored.expiresAt > this.#clock()) found.set(key, stored.text);
    }
    return found;
  }

  async write(
    network: string,
    key: string,
    text: string,
    expiresAt: number,
    maxBytes: number,
  ): Promise<boolean> {
    const cap = Math.min(maxBytes, MAX_COMPRESSED_BYTES);
    if (gzipSync(Buffer.from(text, "utf8")).length > cap) return false;
    this.writes.push({ network, key });
    this.#answers.set(`${network}\n${key}`, { text, expiresAt });
    return true;
  }
}
