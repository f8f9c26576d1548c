import type { SubscriptionStore } from "../../functions/core/ports.ts";
import type {
  ConnectionRecord,
  ConnectOutcome,
  SubscribeOutcome,
  SubscriptionBounds,
  SubscriptionRecord,
} from "../../functions/core/subscriptions/subscription-records.ts";

interface HeldConnection {
  readonly record: ConnectionRecord;
  readonly subs: Set<string>;
}

/**
 * The subscription store in memory, for unit tests of the socket and the follower: the
 * DynamoDB adapter's semantics (a key's live connections bounded, a connection's, a key's and
 * a network's subscriptions bounded, removals only by their owner, expired records never
 * read, moves conditional on `nextBlock`), held to the same contract
 * (test/integration/adapters/subscriptions/subscription-store-contract.test.ts). Exact where the adapter may run a
 * counter ahead for a while: nothing here dies half-way.
 */
export class MemorySubscriptionStore implements SubscriptionStore {
  readonly #connections = new Map<string, Map<string, HeldConnection>>();
  readonly #subscriptions = new Map<string, Map<string, SubscriptionRecord>>();
  readonly #clock: () => number;
  /** Set to make every call fail, as an unreachable table does. */
  failing = false;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  async connect(
    network: string,
    connection: ConnectionRecord,
    maxPerKey: number,
  ): Promise<ConnectOutcome> {
    this.#check();
    const now = this.#clock();
    const held = this.#network(this.#connections, network);
    if (connection.caller !== "") {
      const live = [...held.values()].filter(
        ({ record }) => record.caller === connection.caller && record.expiresAt > now,
      ).length;
      if (live >= maxPerKey) return "over_key";
    }
    held.set(connection.id, {
      record: connection,
      subs: held.get(connection.id)?.subs ?? new Set(),
    });
    return "ok";
  }

  async connection(network: string, connectionId: string): Promise<ConnectionRecord | null> {
    this.#check();
    const held = this.#connections.get(network)?.get(connectionId);
    return held !== undefined && held.record.expiresAt > this.#clock() ? held.record : null;
  }

  async disconnect(network: string, connectionId: string): Promise<void> {
    this.#check();
    const held = this.#connections.get(network)?.get(connectionId);
    if (held === undefined) return;
    for (const id of held.subs) this.#subscriptions.get(network)?.delete(id);
    this.#connections.get(network)?.delete(connectionId);
  }

  async subscribe(
    network: string,
    subscription: SubscriptionRecord,
    bounds: SubscriptionBounds,
  ): Promise<SubscribeOutcome> {
    this.#check();
    const held = this.#connections.get(network)?.get(subscription.connection);
    if (held === undefined || held.record.expiresAt <= this.#clock()) return "no_connection";
    if (held.subs.size >= bounds.perConnection) return "over_connection";
    const subs = this.#network(this.#subscriptions, network);
    if (
      subscription.caller !== "" &&
      [...subs.values()].filter((record) => record.caller === subscription.caller).length >=
        bounds.perKey
    ) {
      return "over_key";
    }
    if (subs.size >= bounds.perNetwork) return "over_network";
    subs.set(subscription.id, subscription);
    held.subs.add(subscription.id);
    return "ok";
  }

  async unsubscribe(
    network: string,
    connectionId: string,
    subscriptionId: string,
  ): Promise<boolean> {
    this.#check();
    const subs = this.#subscriptions.get(network);
    const record = subs?.get(subscriptionId);
    if (record === undefined || record.connection !== connectionId) return false;
    this.#remove(network, record);
    return true;
  }

  async list(network: string): Promise<readonly SubscriptionRecord[]> {
    this.#check();
    const now = this.#clock();
    const all = [...(this.#subscriptions.get(network)?.values() ?? [])];
    for (const record of all) if (record.expiresAt <= now) this.#remove(network, record);
    return all.filter((record) => record.expiresAt > now);
  }

  async advance(
    network: string,
    subscriptionId: string,
    expected: number,
    next: number,
    live = false,
  ): Promise<boolean> {
    this.#check();
    const subs = this.#subscriptions.get(network);
    const record = subs?.get(subscriptionId);
    if (subs === undefined || record === undefined) return false;
    if (record.nextBlock === next && (record.live === true) === live) return true;
    if (record.nextBlock !== expected || record.live === true) return false;
    subs.set(subscriptionId, { ...record, nextBlock: next, ...(live ? { live: true } : {}) });
    return true;
  }

  async networksWithSubscribers(networks: readonly string[]): Promise<readonly string[]> {
    this.#check();
    return networks.filter((network) => (this.#subscriptions.get(network)?.size ?? 0) > 0);
  }

  #remove(network: string, record: SubscriptionRecord): void {
    this.#subscriptions.get(network)?.delete(record.id);
    this.#connections.get(network)?.get(record.connection)?.subs.delete(record.id);
  }

  #network<T>(maps: Map<string, Map<string, T>>, network: string): Map<string, T> {
    let map = maps.get(network);
    if (map === undefined) {
      map = new Map();
      maps.set(network, map);
    }
    return map;
  }

  #check(): void {
    if (this.failing) throw new Error("the subscription store is unreachable");
  }
}
