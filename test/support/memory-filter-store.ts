import { randomBytes } from "node:crypto";
import type { FilterStore, NewFilter } from "../../functions/core/ports.ts";
import {
  FILTER_ID_RANDOM_BYTES,
  FILTER_SLOTS,
  filterIdOf,
  gatewayFilterId,
  slotOfFilterId,
} from "../../functions/core/request/filters/filter-id.ts";
import type {
  FilterAdvance,
  FilterRecord,
} from "../../functions/core/request/filters/filter-progress.ts";

/**
 * The filter store in memory, for the pipeline's unit tests: the DynamoDB adapter's semantics
 * (slots per owner, conditional moves on the version, expired filters not read), held to the
 * same contract (test/integration/adapters/store/filter-store-contract.test.ts).
 */
export class MemoryFilterStore implements FilterStore {
  readonly #slots = new Map<string, Map<number, FilterRecord>>();
  /** Every write that moved a filter, for tests that count them. */
  writes = 0;

  async install(
    network: string,
    owner: string,
    filter: NewFilter,
    max: number,
    now: number,
  ): Promise<string | null> {
    const slots = this.#owner(network, owner);
    const limit = Math.min(max, FILTER_SLOTS);
    const live = [...slots.values()].filter((record) => record.expiresAt > now).length;
    if (live >= limit) return null;
    for (let slot = 0; slot < limit; slot++) {
      const held = slots.get(slot);
      if (held !== undefined && held.expiresAt > now) continue;
      const id = filterIdOf(slot, randomBytes(FILTER_ID_RANDOM_BYTES));
      slots.set(slot, { ...filter, id, version: 0 });
      this.writes++;
      return id;
    }
    return null;
  }

  async read(
    network: string,
    owner: string,
    id: string,
    now: number,
  ): Promise<FilterRecord | null> {
    const record = this.#find(network, owner, id);
    return record !== null && record.expiresAt > now ? structuredClone(record) : null;
  }

  async advance(
    network: string,
    owner: string,
    id: string,
    version: number,
    next: FilterAdvance,
  ): Promise<boolean> {
    const record = this.#find(network, owner, id);
    if (record === null || record.version !== version) return false;
    this.#owner(network, owner).set(slotOfFilterId(record.id), {
      ...record,
      ...structuredClone(next),
      version: version + 1,
    });
    this.writes++;
    return true;
  }

  async uninstall(network: string, owner: string, id: string, now: number): Promise<boolean> {
    const record = this.#find(network, owner, id);
    if (record === null || record.expiresAt <= now) return false;
    this.#owner(network, owner).set(slotOfFilterId(record.id), { ...record, expiresAt: 0 });
    return true;
  }

  /** Every filter an owner holds, live or not, by slot (tests look behind the store's back). */
  held(network: string, owner: string): ReadonlyMap<number, FilterRecord> {
    return this.#owner(network, owner);
  }

  #owner(network: string, owner: string): Map<number, FilterRecord> {
    const key = `${network}\n${owner}`;
    let slots = this.#slots.get(key);
    if (slots === undefined) {
      slots = new Map();
      this.#slots.set(key, slots);
    }
    return slots;
  }

  #find(network: string, owner: string, id: string): FilterRecord | null {
    const ours = gatewayFilterId(id);
    if (ours === null) return null;
    const record = this.#owner(network, owner).get(slotOfFilterId(ours));
    return record?.id === ours ? record : null;
  }
}
