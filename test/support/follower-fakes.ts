import { createHash } from "node:crypto";
import type { Followed } from "../../functions/core/follower/delivery/subscribers.ts";
import type { FollowerSubscriptions } from "../../functions/core/follower/follower-ports.ts";
import type { ConnectionPush, Telemetry } from "../../functions/core/ports.ts";
import type { PushOutcome } from "../../functions/core/subscriptions/subscription-records.ts";
import { MemoryFollowerStore } from "./memory-follower-store.ts";

/**
 * In-memory parts for the head follower's unit tests: a chain that answers the reads the
 * follower makes through the gateway (served head, blocks by number, logs by block hash) and
 * can reorg or fail, the registry's subscriptions, and pushes that record every message per
 * connection; the cursor store is `memory-follower-store.ts`.
 */

const hex = (n: number) => `0x${n.toString(16)}`;
const hash32 = (text: string) => `0x${createHash("sha256").update(text).digest("hex")}`;

export interface FakeLog {
  readonly address: string;
  readonly topics: readonly string[];
}

interface FakeBlock {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
  readonly logs: readonly FakeLog[];
  readonly extra: string;
}

export class FakeChain {
  blocks: FakeBlock[] = [];
  /** The served head the gateway answers; by default the chain's tip. */
  servedHead: number | null = null;
  /** Logs of these block numbers are answered with an error, this many more times. */
  readonly failingLogs = new Map<number, number>();
  /** Requests holding a call of these methods throw (the pipeline failing), this many more times. */
  readonly throwing = new Map<string, number>();
  /** Calls answered so far, by method. */
  readonly calls = new Map<string, number>();
  /** Bytes of filler in every header (to test the message bound). */
  headerPadding = 0;
  #fork = 0;

  constructor(length = 1) {
    for (let i = 0; i < length; i++) this.mine();
  }

  get tip(): number {
    return this.blocks.length - 1;
  }

  mine(logs: readonly FakeLog[] = []): number {
    const number = this.blocks.length;
    const parentHash =
      number === 0 ? hash32("genesis-parent") : (this.blocks[number - 1] as FakeBlock).hash;
    this.blocks.push({
      number,
      hash: hash32(`${this.#fork}:${number}:${parentHash}`),
      parentHash,
      logs,
      extra: "",
    });
    return number;
  }

  /** Replaces the newest `depth` blocks by as many new ones, with these logs each. */
  reorg(depth: number, logs: (number: number) => readonly FakeLog[] = () => []): void {
    this.#fork++;
    const kept = this.blocks.length - depth;
    this.blocks = this.blocks.slice(0, kept);
    for (let i = 0; i < depth; i++) this.mine(logs(kept + i));
  }

  block(number: number): FakeBlock | undefined {
    return this.blocks[number];
  }

  logObjects(block: FakeBlock): Record<string, unknown>[] {
    return block.logs.map((log, index) => ({
      address: log.address,
      topics: log.topics,
      data: "0x",
      blockNumber: hex(block.number),
      blockHash: block.hash,
      transactionHash: hash32(`tx:${block.hash}:${index}`),
      transactionIndex: "0x0",
      logIndex: hex(index),
      removed: false,
    }));
  }

  #head(): number {
    return Math.min(this.servedHead ?? this.tip, this.tip);
  }

  #answer(call: { id: unknown; method: string; params: unknown[] }): Record<string, unknown> {
    this.calls.set(call.method, (this.calls.get(call.method) ?? 0) + 1);
    const ok = (result: unknown) => ({ jsonrpc: "2.0", id: call.id, result });
    if (call.method === "eth_blockNumber") return ok(hex(this.#head()));
    if (call.method === "eth_getBlockByNumber") {
      const number = Number(call.params[0]);
      const block = number <= this.#head() ? this.block(number) : undefined;
      if (block === undefined) return ok(null);
      return ok({
        number: hex(block.number),
        hash: block.hash,
        parentHash: block.parentHash,
        logsBloom: "0x00",
        extraData: `0x${"ab".repeat(this.headerPadding)}`,
        timestamp: hex(1_700_000_000 + block.number),
        transactions: [hash32(`tx:${block.hash}:0`)],
        uncles: [],
        size: "0x100",
        totalDifficulty: "0x0",
      });
    }
    if (call.method === "eth_getLogs") {
      const filter = call.params[0] as { blockHash: string; address?: string[] };
      const block = this.blocks.find((one) => one.hash === filter.blockHash);
      const failures = block === undefined ? 0 : (this.failingLogs.get(block.number) ?? 0);
      if (block !== undefined && failures > 0) this.failingLogs.set(block.number, failures - 1);
      if (block === undefined || failures > 0) {
        return {
          jsonrpc: "2.0",
          id: call.id,
          error: { code: -32603, message: "all providers failed for eth_getLogs" },
        };
      }
      const wanted = filter.address?.map((address) => address.toLowerCase());
      return ok(
        this.logObjects(block).filter(
          (log) => wanted === undefined || wanted.includes(String(log.address).toLowerCase()),
        ),
      );
    }
    return { jsonrpc: "2.0", id: call.id, error: { code: -32601, message: "not here" } };
  }

  /** The served head as the gateway reads it for the follower (`Gateway.servedHead`). */
  readonly servedHeadRead = async (): Promise<number | null> => {
    this.calls.set("servedHead", (this.calls.get("servedHead") ?? 0) + 1);
    return this.#head();
  };

  /** A quorum member's head, as the gateway's poll asks it (`Gateway.pollHead`). */
  readonly probeHead = async (): Promise<number | null> => {
    this.calls.set("probe", (this.calls.get("probe") ?? 0) + 1);
    return this.tip;
  };

  /** The gateway's pipeline as the follower calls it. */
  readonly handle = async (body: string): Promise<{ body: string }> => {
    const parsed = JSON.parse(body) as unknown;
    const calls = (Array.isArray(parsed) ? parsed : [parsed]) as Array<{
      id: unknown;
      method: string;
      params: unknown[];
    }>;
    for (const call of calls) {
      const left = this.throwing.get(call.method) ?? 0;
      if (left === 0) continue;
      this.throwing.set(call.method, left - 1);
      throw new Error(`the pipeline failed on ${call.method}`);
    }
    const answers = calls.map((call) => this.#answer(call));
    return { body: JSON.stringify(Array.isArray(parsed) ? answers : answers[0]) };
  };
}

let subscriptionCount = 0;

export function subscription(
  connection: string,
  kind: Followed["kind"],
  nextBlock: number,
  filter: Followed["filter"] = null,
): Followed {
  subscriptionCount++;
  return {
    id: `0x${subscriptionCount.toString(16).padStart(32, "0")}`,
    connection,
    caller: "",
    kind,
    filter,
    nextBlock,
    firstBlock: nextBlock,
    live: false,
    expiresAt: Number.MAX_SAFE_INTEGER,
  };
}

export class MemorySubscriptions implements FollowerSubscriptions {
  readonly subs = new Map<string, Followed>();
  readonly disconnected: string[] = [];
  advances = 0;
  /** Reads of the list (one Query each in DynamoDB). */
  lists = 0;
  /** The next this many advances are made, and then answered with an error (an answer lost). */
  lostAnswers = 0;
  /** Advances answered after a turn of the event loop (a write's round trip), and the most at once. */
  slowAdvances = false;
  #inFlight = 0;
  mostAdvancesAtOnce = 0;
  /** `list()` answers as the store stood at the call before (an eventually consistent read). */
  staleReads = false;
  #previous: Followed[] = [];

  add(...subs: Followed[]): void {
    for (const sub of subs) this.subs.set(sub.id, sub);
  }

  async list(_network?: string): Promise<readonly Followed[]> {
    this.lists++;
    const now = [...this.subs.values()];
    const answer = this.staleReads ? this.#previous : now;
    this.#previous = now;
    return answer;
  }

  async advance(_network: string, id: string, expected: number, next: number, live = false) {
    if (this.slowAdvances) {
      this.#inFlight++;
      this.mostAdvancesAtOnce = Math.max(this.mostAdvancesAtOnce, this.#inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      this.#inFlight--;
    }
    const sub = this.subs.get(id);
    if (sub === undefined || sub.live === true || sub.nextBlock !== expected) return false;
    this.advances++;
    this.subs.set(id, { ...sub, nextBlock: next, live });
    if (this.lostAnswers > 0) {
      this.lostAnswers--;
      throw new Error("socket hang up (the answer was lost; the write was made)");
    }
    return true;
  }

  /** Every network asked, while any subscription is held (the unit tests' one network). */
  async networksWithSubscribers(networks: readonly string[]): Promise<readonly string[]> {
    return this.subs.size > 0 ? networks : [];
  }

  async disconnect(_network: string, connection: string): Promise<void> {
    this.disconnected.push(connection);
    for (const [id, sub] of this.subs) if (sub.connection === connection) this.subs.delete(id);
  }
}

export class RecordingPush implements ConnectionPush {
  readonly sent = new Map<string, unknown[]>();
  readonly closed = new Map<string, string>();
  /** Connections whose pushes end this way instead of "ok". */
  readonly outcomes = new Map<string, PushOutcome>();

  async post(_network: string, connection: string, data: string): Promise<PushOutcome> {
    const outcome = this.outcomes.get(connection) ?? "ok";
    if (outcome === "ok") {
      const list = this.sent.get(connection) ?? [];
      list.push(JSON.parse(data));
      this.sent.set(connection, list);
    }
    return outcome;
  }

  async close(_network: string, connection: string, reason: string): Promise<void> {
    this.closed.set(connection, reason);
  }

  /** The results sent to one subscription, in order. */
  results(connection: string, subscription: string): Array<Record<string, unknown>> {
    return (this.sent.get(connection) ?? [])
      .map(
        (message) =>
          (message as { params: { subscription: string; result?: unknown; error?: unknown } })
            .params,
      )
      .filter((params) => params.subscription === subscription)
      .map((params) => (params.result ?? { error: params.error }) as Record<string, unknown>);
  }
}

export class CountingTelemetry implements Telemetry {
  readonly counts = new Map<string, number>();
  readonly logs: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  readonly measures: Array<{ name: string; value: number }> = [];

  log(level: string, message: string, fields?: Record<string, unknown>): void {
    this.logs.push({ level, message, ...(fields ? { fields } : {}) });
  }

  count(name: string, dimensions: Record<string, string>, value = 1): void {
    const key = `${name}${dimensions.outcome ? `:${dimensions.outcome}` : ""}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + value);
  }

  measure(name: string, _dimensions: Record<string, string>, value: number): void {
    this.measures.push({ name, value });
  }
}

export interface FollowerScene {
  readonly chain: FakeChain;
  readonly subscriptions: MemorySubscriptions;
  readonly store: MemoryFollowerStore;
  readonly push: RecordingPush;
  readonly telemetry: CountingTelemetry;
  readonly clock: { now: number };
}

/** The parts of one network's follower, on a test clock that `wait` moves on. */
export function followerScene(
  chainLength = 10,
  clock: { now: number } = { now: 1_000_000 },
): FollowerScene {
  return {
    chain: new FakeChain(chainLength),
    subscriptions: new MemorySubscriptions(),
    store: new MemoryFollowerStore(() => clock.now),
    push: new RecordingPush(),
    telemetry: new CountingTelemetry(),
    clock,
  };
}

/** The message of an error notification's result as `RecordingPush.results` gives it ("" if none). */
export function errorMessage(result: Record<string, unknown> | undefined): string {
  const error = result?.error as { message?: unknown } | undefined;
  return typeof error?.message === "string" ? error.message : "";
}
