import { randomBytes } from "node:crypto";
import {
  type EventLog,
  type GatewayEvent,
  newestFirst,
  type StoredEvent,
} from "../../core/status/events.ts";
import { type EventStore, eventSortKey } from "./event-store.ts";

/**
 * Records events beside the work that caused them: each write starts at once and nobody awaits
 * it (a request's answer never waits for an event), and events not yet written are merged into
 * what this container reads, so its own status shows them at once. A failed write is reported
 * and dropped: an event is worth less than the request that caused it.
 */

export interface EventRecorderOptions {
  readonly store: EventStore;
  readonly clock: () => number;
  /** How long a network's events are kept (`events.retention_days`, in seconds). */
  readonly retentionSeconds: (network: string) => number;
  readonly onError: (network: string, error: unknown) => void;
  /** The most writes in flight at once; past it events are dropped (the store is failing). */
  readonly maxInFlight?: number;
}

const DEFAULT_MAX_IN_FLIGHT = 100;

export class EventRecorder implements EventLog {
  readonly #options: EventRecorderOptions;
  /** Events whose write has not finished, by id. */
  readonly #unwritten = new Map<string, StoredEvent>();
  readonly #writes = new Set<Promise<void>>();

  constructor(options: EventRecorderOptions) {
    this.#options = options;
  }

  record(event: GatewayEvent): void {
    const { store, onError } = this.#options;
    if (this.#writes.size >= (this.#options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT)) {
      onError(event.network, new Error(`event dropped: ${this.#writes.size} writes in flight`));
      return;
    }
    const stored: StoredEvent = { ...event, id: eventSortKey(event.at, randomSuffix()) };
    this.#unwritten.set(stored.id, stored);
    let retention: number;
    try {
      retention = this.#options.retentionSeconds(event.network);
    } catch (error) {
      this.#unwritten.delete(stored.id);
      onError(event.network, error);
      return;
    }
    const write: Promise<void> = store
      .write(stored, retention)
      .catch((error: unknown) => onError(event.network, error))
      .finally(() => {
        this.#unwritten.delete(stored.id);
        this.#writes.delete(write);
      });
    this.#writes.add(write);
  }

  async settled(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  /** The network's newest events: the store's and this container's unwritten ones. */
  async newest(network: string, limit: number): Promise<StoredEvent[]> {
    const pending = [...this.#unwritten.values()].filter((event) => event.network === network);
    const stored = await this.#options.store.newest(network, limit, this.#options.clock());
    return newestFirst([stored, pending], limit);
  }

  async tidy(network: string, keep: number): Promise<void> {
    await this.#options.store.tidy(network, keep, this.#options.clock());
  }

  claimConfigVersion(network: string, version: string): Promise<boolean> {
    return this.#options.store.claimConfigVersion(network, version, this.#options.clock());
  }
}

function randomSuffix(): string {
  return randomBytes(4).toString("hex");
}
