import { oneChain } from "../filters/filter-progress.ts";
import type { ConnectionPush, Telemetry } from "../ports.ts";
import { type BlockLog, logsFor } from "./block-logs.ts";
import { CatchUp } from "./catch-up.ts";
import { type ChainBlock, ChainReads, type Handle } from "./chain-reads.ts";
import {
  blockKey,
  claimed,
  completed,
  type FollowerCursor,
  interrupted,
  leased,
  logsLeftPending,
  newCursor,
  type RecentBlock,
  recovered,
  released,
  restarted,
  rewound,
  sameBlock,
  skipped,
} from "./cursor.ts";
import { farewellInterrupted, farewellRestart } from "./farewells.ts";
import {
  BLOCKS_PER_STEP,
  CURSOR_TTL_MS,
  type FollowerSettings,
  keptLogsMs,
  logsRetryMs,
  PUSH_CONCURRENCY,
} from "./follow-settings.ts";
import type { FollowerStore, FollowerSubscriptions } from "./follower-ports.ts";
import { LogsDelivery, pendingTakers } from "./logs-delivery.ts";
import { boundedNotification, errorNotification, hexNumber } from "./notifications.ts";
import { Outbox } from "./outbox.ts";
import { sendRemovals } from "./removals.ts";
import { readFork } from "./reorg.ts";
import { type Followed, standing, takesBlock } from "./subscribers.ts";

/**
 * The head follower of one network (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower): while it holds the network's lease, each step reads the served head through the
 * gateway and delivers every block up to it, in order, each claimed once in the cursor before
 * anything of it is sent: the header to `newHeads` subscribers, then the block's logs (one
 * eth_getLogs by its hash for every filter) to `logs` subscribers. A reorg sends the replaced
 * logs again as removed and then the new branch; logs no provider serves within the bound are
 * an error notification and a closed socket, never a silent gap.
 */

export interface NetworkFollowerDeps {
  readonly network: string;
  /** Names this run in the lease. */
  readonly holder: string;
  /** Serves a request text through the gateway's pipeline for this network. */
  readonly handle: Handle;
  readonly subscriptions: FollowerSubscriptions;
  readonly push: ConnectionPush;
  readonly store: FollowerStore;
  readonly clock: () => number;
  readonly wait: (ms: number) => Promise<void>;
  readonly telemetry: Telemetry;
  readonly settings: FollowerSettings;
}

/** What a step did: nothing new, blocks delivered, more to deliver at once, or the run must stop here. */
export type StepResult = "idle" | "delivered" | "behind" | "stopped";

/** A cursor write that lost to another (a run that took the lease over): this run stops. */
class LostLease extends Error {}

export class NetworkFollower {
  readonly #deps: NetworkFollowerDeps;
  readonly #reads: ChainReads;
  readonly #dropped = new Set<string>();
  /**
   * The subscriptions this run made live: the registry's list is eventually consistent, and
   * one read as it was a moment before must not miss a block.
   */
  readonly #madeLive = new Set<string>();
  readonly #catchUp: CatchUp;
  readonly #logs: LogsDelivery;
  #cursor: FollowerCursor | null = null;
  #until = 0;
  /** When the block delivered last was last read again, to see a reorg at its height (ms). */
  #tipCheckedAt = Number.NEGATIVE_INFINITY;

  constructor(deps: NetworkFollowerDeps) {
    this.#deps = deps;
    this.#reads = new ChainReads(
      deps.handle,
      deps.settings.maxBatch,
      () => this.#until - deps.clock(),
    );
    this.#logs = new LogsDelivery({
      ...deps,
      reads: this.#reads,
      outbox: () => this.#outbox(),
      until: () => this.#until,
      remembered: () => this.#held().recent.length + 1,
    });
    this.#catchUp = new CatchUp({
      ...deps,
      reads: this.#reads,
      cursor: () => this.#held(),
      write: (next) => this.#write(next),
      outbox: () => this.#outbox(),
      dropped: this.#dropped,
      madeLive: (id) => this.#madeLive.add(id),
    });
  }

  /** The cursor this run holds (tests, status). */
  get cursor(): FollowerCursor | null {
    return this.#cursor;
  }

  /**
   * Takes the network's lease until `until` (ms); false when another run holds it or nothing
   * can be read yet. A run that stopped mid-block is cleaned up first: its subscribers cannot
   * know what they were sent of it, so they are told, and their sockets closed.
   */
  async begin(until: number): Promise<boolean> {
    const { store, network, holder, clock } = this.#deps;
    this.#until = until;
    let stored = await store.readCursor(network);
    if (stored === null) {
      const head = await this.#reads.servedHead();
      if (head === null) return false;
      stored = newCursor(head + 1);
    }
    const mine = leased(stored, holder, clock(), until);
    if (mine === null) return false;
    this.#cursor = stored;
    try {
      await this.#write(mine);
      const left = interrupted(mine);
      if (left.block !== null || left.catchingUp.length > 0) {
        const subs = await this.#deps.subscriptions.list(network);
        const { telemetry } = this.#deps;
        await farewellInterrupted(
          this.#outbox(),
          subs,
          left.block,
          left.catchingUp,
          telemetry,
          network,
        );
        await this.#write(recovered(this.#held()));
      }
    } catch (error) {
      if (error instanceof LostLease) return false;
      throw error;
    }
    return true;
  }

  /** One step: the blocks up to the served head, then subscriptions behind the cursor. */
  async step(): Promise<StepResult> {
    try {
      return await this.#step();
    } catch (error) {
      if (error instanceof LostLease) return "stopped";
      throw error;
    }
  }

  /** Gives the lease back with the cursor as this run leaves it. */
  async end(): Promise<void> {
    if (this.#cursor === null) return;
    await this.#write(released(this.#cursor)).catch(() => undefined);
    this.#cursor = null;
  }

  async #step(): Promise<StepResult> {
    const { network, telemetry, subscriptions } = this.#deps;
    const head = await this.#reads.servedHead();
    if (head === null) return "idle";
    const subs = (await subscriptions.list(network))
      .filter((sub) => !this.#dropped.has(sub.connection))
      .map((sub) =>
        sub.live !== true && this.#madeLive.has(sub.id) ? { ...sub, live: true } : sub,
      );
    const start = this.#held();
    telemetry.measure(
      "follower_lag_blocks",
      { network },
      Math.max(0, head - (start.next - 1)),
      "Count",
    );
    if (start.logsPending !== null) {
      const block = { number: start.next - 1, hash: start.logsPending };
      const takers = pendingTakers(subs, block.number);
      const pending =
        takers.length === 0 ? "done" : await this.#logs.deliver(block, takers, start.pendingSince);
      if (pending === "stopped") return "stopped";
      this.#cursor = completed(this.#held());
    }
    this.#skipUnwanted(subs, head);
    const cursor = this.#held();
    const result =
      cursor.next > head
        ? await this.#checkTip(head, subs)
        : await this.#deliverFrom(cursor.next, head, cursor.next, subs);
    if (result === "stopped") return result;
    await this.#catchUp.run(subs);
    // Behind only when blocks went out and more are there: a block not shown yet is waited for.
    return result === "delivered" && this.#held().next <= head ? "behind" : result;
  }

  /** With no live subscription, blocks nobody waits for are not read: the cursor moves past them. */
  #skipUnwanted(subs: readonly Followed[], head: number): void {
    const cursor = this.#held();
    if (subs.some((sub) => sub.live === true)) return;
    const waiting = subs
      .filter((sub) => standing(sub, cursor.next) === "waiting")
      .map((sub) => sub.nextBlock);
    const target = Math.min(head + 1, ...waiting);
    if (target > cursor.next) this.#cursor = skipped(cursor, target);
  }

  /**
   * With no new block, the block delivered last is read again once a block time: a reorg
   * that replaced it with another of the same height is delivered before the next block comes.
   * A served head below it is a chain that restarted.
   */
  async #checkTip(head: number, subs: Followed[]): Promise<StepResult> {
    const { clock, settings } = this.#deps;
    const cursor = this.#held();
    if (head < cursor.next - 1) {
      // The served head never goes back but when the chain restarted lower (§10.7).
      await this.#restart(head, subs);
      return "delivered";
    }
    const tip = cursor.recent.at(-1);
    if (tip === undefined || tip.number !== head || subs.length === 0) return "idle";
    if (clock() - this.#tipCheckedAt < settings.blockTimeMs) return "idle";
    this.#tipCheckedAt = clock();
    const found = await this.#reads.blocks([head]);
    const block = found?.get(head);
    if (block == null || sameBlock(block.hash, tip.key)) return "idle";
    return this.#reorg(head, cursor.next, subs);
  }

  /** Delivers blocks `from`.. up to `head` (at most a step's worth); `cycleNext`: the cursor when the step began. */
  async #deliverFrom(
    from: number,
    head: number,
    cycleNext: number,
    subs: Followed[],
    afterReorg = false,
  ): Promise<StepResult> {
    const to = Math.min(head, from + BLOCKS_PER_STEP - 1);
    const numbers = Array.from({ length: to - from + 1 }, (_, index) => from + index);
    const found = await this.#reads.blocks(numbers);
    if (found === null) return "idle";
    const chain: ChainBlock[] = [];
    for (const number of numbers) {
      const block = found.get(number);
      if (block == null) break;
      chain.push(block);
    }
    // Blocks of two branches (a reorg between two reads, providers on two forks): read again.
    if (chain.length === 0 || !oneChain(chain, null)) return "idle";
    const tip = this.#held().recent.at(-1);
    const first = chain[0] as ChainBlock;
    if (tip !== undefined && tip.number === from - 1 && !sameBlock(first.parentHash, tip.key)) {
      // A second reorg while the first was handled: the next step reads the chain again.
      return afterReorg ? "idle" : this.#reorg(head, cycleNext, subs);
    }
    for (const block of chain) {
      const delivered = await this.#deliver(block, subs, cycleNext);
      if (delivered !== "done") return delivered === "stopped" ? "stopped" : "idle";
    }
    return "delivered";
  }

  /** Claims one block, sends its header, then its logs. */
  async #deliver(
    block: ChainBlock,
    subs: Followed[],
    cycleNext: number,
  ): Promise<"done" | "replaced" | "stopped"> {
    const { network, subscriptions, clock, settings } = this.#deps;
    const cursor = this.#held();
    const takers = subs.filter(
      (sub) => !this.#dropped.has(sub.connection) && takesBlock(sub, block.number, cycleNext),
    );
    const recent: RecentBlock = { number: block.number, key: blockKey(block.hash) };
    await this.#write(claimed(cursor, recent));
    const sent: Followed[] = [];
    for (const sub of takers) {
      if (standing(sub, cycleNext) === "waiting") {
        // Its first block: from now on the cursor's deliveries are its, with no write of its own.
        if (!(await subscriptions.advance(network, sub.id, sub.nextBlock, sub.nextBlock, true)))
          continue;
        this.#madeLive.add(sub.id);
        replaceIn(subs, { ...sub, live: true });
      }
      sent.push(sub);
    }
    const outbox = this.#outbox();
    for (const sub of sent) {
      if (sub.kind !== "newHeads") continue;
      const what = `the header of block ${hexNumber(block.number)}`;
      outbox.add(sub.connection, "newHeads", boundedNotification(sub.id, block.header, what));
    }
    await outbox.flush();
    const logTakers = sent.filter(
      (sub) => sub.kind === "logs" && !this.#dropped.has(sub.connection),
    );
    const askedAt = clock();
    const logs =
      logTakers.length === 0 ? "done" : await this.#logs.deliver(block, logTakers, askedAt);
    if (logs === "stopped") {
      await this.#write(logsLeftPending(this.#held(), block.hash, askedAt));
      return "stopped";
    }
    this.#cursor = completed(this.#held());
    return logs;
  }

  /**
   * A reorg: the blocks it replaced are found, their logs sent again as removed to every
   * subscription that was sent them, then the new branch is delivered from the fork point.
   */
  async #reorg(head: number, cycleNext: number, subs: Followed[]): Promise<StepResult> {
    const { network, telemetry } = this.#deps;
    const cursor = this.#held();
    const finding = await readFork(this.#reads, cursor.recent);
    if (finding?.kind !== "fork") return "idle";
    if (finding.deeper && head <= finding.fork) {
      await this.#restart(head, subs);
      return "delivered";
    }
    const removed = await sendRemovals(this.#removalDeps(), finding.replaced, subs, cursor.next);
    telemetry.count("follower_reorgs", { network });
    telemetry.log("warn", "the follower saw a reorg", {
      network,
      fork: finding.fork,
      replaced: finding.replaced.length,
      deeper_than_remembered: finding.deeper,
      ...removed,
    });
    this.#cursor = rewound(this.#held(), finding.fork);
    return this.#deliverFrom(finding.fork + 1, head, cycleNext, subs, true);
  }

  /** The chain is now below every block remembered (a restart): every subscriber starts afresh. */
  async #restart(head: number, subs: readonly Followed[]): Promise<void> {
    const { network, telemetry } = this.#deps;
    await farewellRestart(this.#outbox(), subs, head, telemetry, network);
    await this.#write(restarted(this.#held(), head + 1));
  }

  #removalDeps() {
    return { ...this.#deps, outbox: () => this.#outbox() };
  }

  #outbox(): Outbox {
    const { network, push, subscriptions, telemetry } = this.#deps;
    return new Outbox({
      network,
      push,
      forget: (connection) => subscriptions.disconnect(network, connection),
      telemetry,
      concurrency: PUSH_CONCURRENCY,
      dropped: this.#dropped,
    });
  }

  #held(): FollowerCursor {
    if (this.#cursor === null) throw new LostLease("the follower holds no lease");
    return this.#cursor;
  }

  /** Writes the cursor over the version this run holds; a write that loses means the lease is gone. */
  async #write(next: FollowerCursor): Promise<void> {
    const { store, network, clock } = this.#deps;
    const held = this.#held();
    const written = { ...next, version: held.version + 1 };
    if (!(await store.writeCursor(network, written, held.version, clock() + CURSOR_TTL_MS))) {
      this.#cursor = null;
      throw new LostLease(`the follower's cursor of ${network} was written by another run`);
    }
    this.#cursor = written;
  }
}

function replaceIn(subs: Followed[], changed: Followed): void {
  const index = subs.findIndex((sub) => sub.id === changed.id);
  if (index >= 0) subs[index] = changed;
}
