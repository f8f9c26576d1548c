import { type ChainHead, mayPublish } from "../../functions/core/chain/chain-head.ts";
import { HEALTHY, type ProviderHealth } from "../../functions/core/health/health.ts";
import type {
  HistoryProbe,
  LearnedBound,
  ProviderHistory,
} from "../../functions/core/history/bounds.ts";
import type { HistoryResource } from "../../functions/core/history/resources.ts";
import type { StateStore, WriteOutcome } from "../../functions/core/ports.ts";
import type {
  LearnedLimit,
  NetworkState,
  QuorumSnapshot,
} from "../../functions/core/routing/network-state.ts";

/**
 * The shared state in memory, honouring the DynamoDB adapter's contract (the contract test
 * in test/integration/adapters/store/state-store-contract.test.ts runs against both): health writes succeed
 * only at the expected version and otherwise return the stored item; capability blacklists
 * only move later; expired capability blacklists are not read. For unit tests of the request
 * pipeline that must run in milliseconds.
 */
export class MemoryStateStore implements StateStore {
  readonly #health = new Map<string, ProviderHealth>();
  readonly #capabilities = new Map<string, Map<string, Map<string, number>>>();
  readonly #quorum = new Map<string, QuorumSnapshot>();
  readonly #batchLimits = new Map<string, Map<string, LearnedLimit>>();
  readonly #logsRanges = new Map<string, Map<string, LearnedLimit>>();
  readonly #heads = new Map<string, ChainHead>();
  /** network/provider → resource → learned bound; network/provider → probe. */
  readonly #historyBounds = new Map<string, Map<HistoryResource, LearnedBound>>();
  readonly #historyProbes = new Map<string, HistoryProbe>();
  /** History writes that reached the store, in order, for tests to count. */
  readonly historyWrites: Array<{ provider: string; resource: HistoryResource; from: number }> = [];
  readonly #clock: () => number;
  /** Writes that reached the store, in order, for tests to count. */
  readonly healthWrites: Array<{ network: string; provider: string; next: ProviderHealth }> = [];
  /** Conditional writes to refuse (as if another container had won), before the real check. */
  conflictsToInject = 0;
  /** Reads of the chain position alone (`readHead`), for tests to count. */
  headReads = 0;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  setQuorum(network: string, snapshot: QuorumSnapshot): void {
    this.#quorum.set(network, snapshot);
  }

  /** Stores the chain position as the monitor would have written it. */
  setHead(network: string, head: ChainHead): void {
    this.#heads.set(network, head);
  }

  /** Stores health as another container would have written it. */
  setHealth(network: string, provider: string, health: ProviderHealth): void {
    this.#health.set(`${network}/${provider}`, health);
  }

  async readNetwork(network: string): Promise<NetworkState> {
    const now = this.#clock();
    const providers = new Map<string, ProviderHealth>();
    for (const [key, health] of this.#health) {
      const [owner, provider] = key.split("/");
      if (owner === network && provider !== undefined) providers.set(provider, health);
    }
    const capabilities = new Map<string, Map<string, number>>();
    for (const [provider, methods] of this.#capabilities.get(network) ?? []) {
      const live = new Map([...methods].filter(([, until]) => until > now));
      if (live.size > 0) capabilities.set(provider, live);
    }
    return {
      providers,
      capabilities,
      quorum: this.#quorum.get(network) ?? null,
      monitorTickAt: this.#quorum.get(network)?.computedAt ?? 0,
      batchLimits: new Map(
        [...(this.#batchLimits.get(network) ?? [])].filter(([, limit]) => limit.until > now),
      ),
      logsRanges: new Map(
        [...(this.#logsRanges.get(network) ?? [])].filter(([, limit]) => limit.until > now),
      ),
      head: this.#heads.get(network) ?? null,
      history: this.#historyOf(network, now),
    };
  }

  #historyOf(network: string, now: number): Map<string, ProviderHistory> {
    const out = new Map<string, ProviderHistory>();
    const providerOf = (key: string) =>
      key.startsWith(`${network}/`) ? key.slice(network.length + 1) : null;
    for (const [key, bounds] of this.#historyBounds) {
      const provider = providerOf(key);
      if (provider === null) continue;
      const live = new Map([...bounds].filter(([, bound]) => bound.until > now));
      out.set(provider, { learned: live, probe: out.get(provider)?.probe ?? null });
    }
    for (const [key, probe] of this.#historyProbes) {
      const provider = providerOf(key);
      if (provider === null) continue;
      out.set(provider, { learned: out.get(provider)?.learned ?? new Map(), probe });
    }
    return out;
  }

  async recordHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    bound: LearnedBound,
  ): Promise<void> {
    const key = `${network}/${provider}`;
    const bounds = this.#historyBounds.get(key) ?? new Map<HistoryResource, LearnedBound>();
    const current = bounds.get(resource);
    if (current === undefined || current.from < bound.from || current.until < this.#clock()) {
      bounds.set(resource, bound);
      this.historyWrites.push({ provider, resource, from: bound.from });
    }
    this.#historyBounds.set(key, bounds);
  }

  async forgetHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    block: number,
  ): Promise<void> {
    const bounds = this.#historyBounds.get(`${network}/${provider}`);
    const current = bounds?.get(resource);
    if (current !== undefined && current.from > block) bounds?.delete(resource);
  }

  async recordHistoryProbe(network: string, provider: string, probe: HistoryProbe): Promise<void> {
    this.#historyProbes.set(`${network}/${provider}`, probe);
  }

  async readHead(network: string): Promise<ChainHead | null> {
    this.headReads++;
    return this.#heads.get(network) ?? null;
  }

  async writeHealth(
    network: string,
    provider: string,
    expectedVersion: number,
    next: ProviderHealth,
  ): Promise<WriteOutcome> {
    const key = `${network}/${provider}`;
    const current = this.#health.get(key) ?? HEALTHY;
    if (this.conflictsToInject > 0) {
      this.conflictsToInject--;
      // Another container got there first with a newer version of the same health.
      const raced = { ...current, version: current.version + 1 };
      this.#health.set(key, raced);
      return { written: false, current: raced };
    }
    if (current.version !== expectedVersion) return { written: false, current };
    // As DynamoDB's UpdateItem: attributes a write does not name stay as stored.
    const { consensus } = current;
    this.#health.set(
      key,
      next.consensus === undefined && consensus ? { ...next, consensus } : next,
    );
    this.healthWrites.push({ network, provider, next });
    return { written: true };
  }

  async publishServed(
    network: string,
    block: number,
    at: number,
    delayMs: number,
    resetAt: number,
  ): Promise<boolean> {
    const head = this.#heads.get(network);
    // Published values live beside the monitor's head; with no head yet there is none to keep.
    if (head === undefined || !mayPublish(head, block, at, delayMs)) return false;
    // A publication made before a reset of the chain position is about the chain before it.
    if ((head.resetAt ?? 0) !== resetAt) return false;
    this.#heads.set(network, {
      ...head,
      previousServed: head.served,
      served: { block, at },
    });
    return true;
  }

  async recordBatchLimit(
    network: string,
    provider: string,
    size: number,
    until: number,
  ): Promise<void> {
    this.#recordLearned(this.#batchLimits, network, provider, size, until);
  }

  async recordLogsRange(
    network: string,
    provider: string,
    blocks: number,
    until: number,
  ): Promise<void> {
    this.#recordLearned(this.#logsRanges, network, provider, blocks, until);
  }

  #recordLearned(
    all: Map<string, Map<string, LearnedLimit>>,
    network: string,
    provider: string,
    value: number,
    until: number,
  ): void {
    let limits = all.get(network);
    if (!limits) {
      limits = new Map();
      all.set(network, limits);
    }
    const current = limits.get(provider);
    if (current === undefined || current.value > value || current.until < this.#clock()) {
      limits.set(provider, { value, until });
    }
  }

  async blacklistCapability(
    network: string,
    provider: string,
    method: string,
    until: number,
  ): Promise<void> {
    let providers = this.#capabilities.get(network);
    if (!providers) {
      providers = new Map();
      this.#capabilities.set(network, providers);
    }
    let methods = providers.get(provider);
    if (!methods) {
      methods = new Map();
      providers.set(provider, methods);
    }
    if ((methods.get(method) ?? 0) < until) methods.set(method, until);
  }
}
