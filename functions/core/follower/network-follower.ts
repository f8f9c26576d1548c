import type { ConnectionPush, Telemetry } from "../ports.ts";
import { oneChain } from "../request/filters/filter-progress.ts";
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
import { CatchUp } from "./delivery/catch-up.ts";
import { farewellDeepReorg, farewellInterrupted, farewellRestart } from "./delivery/farewells.ts";
import { SubscriberListing } from "./delivery/listing.ts";
import { LogsDelivery, pendingTakers } from "./delivery/logs-delivery.ts";
import { boundedNotification, hexNumber } from "./delivery/notifications.ts";
import { Outbox } from "./delivery/outbox.ts";
import { sendRemovals } from "./delivery/removals.ts";
import {
  type Followed,
  firstWanted,
  replaceIn,
  standing,
  takesBlock,
} from "./delivery/subscribers.ts";
import { type FollowerSettings, PUSH_CONCURRENCY, stepRange } from "./follow-settings.ts";
import type { FollowerStore, FollowerSubscriptions } from "./follower-ports.ts";
import { HeadWatch } from "./head-watch.ts";
import { LeasedCursor, LostLease } from "./leased-cursor.ts";
import { readFork } from "./reorg.ts";

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
  /** The served head, never asked of a provider (`Gateway.servedHead`). */
  readonly servedHead: () => Promise<number | null>;
  /**
   * Asks a quorum member for its head now, published as the gateway's polls are
   * (`Gateway.pollHead`); the number, or null.
   */
  readonly probeHead: (timeoutMs: number) => Promise<number | null>;
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

/** The tip is read again when no new block came for this many block times. */
const TIP_CHECK_BLOCKS = 2;

export class NetworkFollower {
  readonly #deps: NetworkFollowerDeps;
  readonly #reads: ChainReads;
  readonly #dropped = new Set<string>();
  readonly #listing: SubscriberListing;
  readonly #watch: HeadWatch;
  readonly #catchUp: CatchUp;
  readonly #logs: LogsDelivery;
  readonly #lease: LeasedCursor;
  #until = 0;
  /** When the block delivered last was last read again, to see a reorg at its height (ms). */
  #tipCheckedAt = Number.NEGATIVE_INFINITY;

  constructor(deps: NetworkFollowerDeps) {
    this.#deps = deps;
    this.#lease = new LeasedCursor(deps);
    this.#listing = new SubscriberListing({ ...deps, dropped: this.#dropped });
    this.#watch = new HeadWatch({
      ...deps,
      readAhead: (block) => void this.#reads.blocks([block]).catch(() => undefined),
    });
    this.#reads = new ChainReads({
      ...deps,
      maxBatch: deps.settings.maxBatch,
      remainingMs: () => this.#until - deps.clock(),
    });
    this.#logs = new LogsDelivery({
      ...deps,
      reads: this.#reads,
      outbox: () => this.#outbox(),
      until: () => this.#until,
      remembered: () => this.#lease.held().recent.length + 1,
    });
    this.#catchUp = new CatchUp({
      ...deps,
      reads: this.#reads,
      cursor: () => this.#lease.held(),
      write: (next) => this.#lease.write(next),
      outbox: () => this.#outbox(),
      dropped: this.#dropped,
      move: (sub, next, live) => this.#listing.move(sub, next, live),
    });
  }

  /** The cursor this run holds (tests, status). */
  get cursor(): FollowerCursor | null {
    return this.#lease.current;
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
    this.#lease.hold(stored);
    try {
      await this.#lease.write(mine);
      await this.#recover();
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

  /** How long to wait before the next step when the last one left nothing to do at once (ms). */
  waitMs(): number {
    return this.#watch.waitMs();
  }

  /** Gives the lease back with the cursor as this run leaves it. */
  async end(): Promise<void> {
    const held = this.#lease.current;
    if (held !== null) await this.#lease.release(released(held));
  }

  /**
   * What a run left half-done (the one before, or this one in a step that threw): a block
   * whose header may have reached some of its subscribers and not others, catch-ups claimed.
   * Its subscribers cannot know what they were sent of it, so they are told, and their sockets
   * closed; never a silent gap.
   */
  async #recover(): Promise<void> {
    const left = interrupted(this.#lease.held());
    if (left.block === null && left.catchingUp.length === 0) return;
    const { network, telemetry } = this.#deps;
    const subs = await this.#deps.subscriptions.list(network);
    const outbox = this.#outbox();
    await farewellInterrupted(outbox, subs, left.block, left.catchingUp, telemetry, network);
    await this.#lease.write(recovered(this.#lease.held()));
  }

  async #step(): Promise<StepResult> {
    const { network, telemetry, clock, settings } = this.#deps;
    await this.#recover();
    this.#watch.lookAhead();
    const head = await this.#reads.servedHead();
    if (head === null) return "idle";
    this.#watch.look(head);
    const start = this.#lease.held();
    telemetry.measure(
      "follower_lag_blocks",
      { network },
      Math.max(0, head - (start.next - 1)),
      "Count",
    );
    const tipDue =
      start.recent.at(-1)?.number === head &&
      this.#listing.count > 0 &&
      clock() - this.#tipCheckedAt >= TIP_CHECK_BLOCKS * settings.blockTimeMs;
    const work = head !== start.next - 1 || start.logsPending !== null || tipDue;
    if (!this.#listing.due(work)) return "idle";
    // The blocks are read while the subscriptions are: one round trip less before a header goes out.
    const reading =
      start.logsPending === null && head >= start.next
        ? this.#reads.blocks(stepRange(start.next, head)).catch(() => null)
        : null;
    const subs = await this.#listing.read(start.next);
    if (start.logsPending !== null) {
      const block = { number: start.next - 1, hash: start.logsPending };
      const takers = pendingTakers(subs, block.number);
      const pending =
        takers.length === 0 ? "done" : await this.#logs.deliver(block, takers, start.pendingSince);
      if (pending === "stopped") return "stopped";
      this.#lease.set(completed(this.#lease.held()));
    }
    const wanted = firstWanted(subs, start.next, head);
    if (wanted > start.next) this.#lease.set(skipped(this.#lease.held(), wanted));
    const cursor = this.#lease.held();
    const result =
      cursor.next > head
        ? await this.#checkTip(head, subs)
        : await this.#deliverFrom(cursor.next, head, cursor.next, subs, {
            read: cursor.next === start.next ? reading : null,
          });
    if (result === "stopped") return result;
    await this.#catchUp.run(subs);
    // Behind only when blocks went out and more are there: a block not shown yet is waited for.
    return result === "delivered" && this.#lease.held().next <= head ? "behind" : result;
  }

  /**
   * With no new block for two block times, the block delivered last is read again: a reorg that
   * replaced it with another of the same height is delivered without waiting for the next
   * block (whose parent shows the reorg otherwise). A served head below it is a chain that
   * restarted.
   */
  async #checkTip(head: number, subs: Followed[]): Promise<StepResult> {
    const { clock, settings } = this.#deps;
    const cursor = this.#lease.held();
    if (head < cursor.next - 1) {
      // The served head never goes back but when the chain restarted lower (§10.7).
      await this.#restart(head, subs);
      return "delivered";
    }
    const tip = cursor.recent.at(-1);
    if (tip === undefined || tip.number !== head || subs.length === 0) return "idle";
    if (clock() - this.#tipCheckedAt < TIP_CHECK_BLOCKS * settings.blockTimeMs) return "idle";
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
    { afterReorg = false, read = null }: { afterReorg?: boolean; read?: BlocksRead | null } = {},
  ): Promise<StepResult> {
    const numbers = stepRange(from, head);
    const found = await (read ?? this.#reads.blocks(numbers));
    if (found === null) return "idle";
    const chain: ChainBlock[] = [];
    for (const number of numbers) {
      const block = found.get(number);
      if (block == null) break;
      chain.push(block);
    }
    // Blocks of two branches (a reorg between two reads, providers on two forks): read again.
    if (chain.length === 0 || !oneChain(chain, null)) return "idle";
    const tip = this.#lease.held().recent.at(-1);
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
    const { clock } = this.#deps;
    const cursor = this.#lease.held();
    const takers = subs.filter(
      (sub) => !this.#dropped.has(sub.connection) && takesBlock(sub, block.number, cycleNext),
    );
    const recent: RecentBlock = { number: block.number, key: blockKey(block.hash) };
    await this.#lease.write(claimed(cursor, recent));
    // Their first block: from now on the cursor's deliveries are theirs, with no write of their own.
    const waiting = takers.filter((sub) => standing(sub, cycleNext) === "waiting");
    const madeLive = await this.#listing.goLive(waiting);
    for (const sub of waiting) if (madeLive.has(sub.id)) replaceIn(subs, { ...sub, live: true });
    const sent = takers.filter(
      (sub) => standing(sub, cycleNext) !== "waiting" || madeLive.has(sub.id),
    );
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
      logTakers.length === 0
        ? "done"
        : await this.#logs.deliver(block, logTakers, askedAt).catch(async (error: unknown) => {
            // The header went out: the logs are left pending, for the next step to send.
            await this.#lease.write(logsLeftPending(this.#lease.held(), block.hash, askedAt));
            throw error;
          });
    if (logs === "stopped") {
      await this.#lease.write(logsLeftPending(this.#lease.held(), block.hash, askedAt));
      return "stopped";
    }
    this.#lease.set(completed(this.#lease.held()));
    this.#tipCheckedAt = clock();
    return logs;
  }

  /**
   * A reorg: the blocks it replaced are found, their logs sent again as removed to every
   * subscription that was sent them, then the new branch is delivered from the fork point.
   */
  async #reorg(head: number, cycleNext: number, subs: Followed[]): Promise<StepResult> {
    const { network, telemetry } = this.#deps;
    const cursor = this.#lease.held();
    const finding = await readFork(this.#reads, cursor.recent);
    if (finding?.kind !== "fork") return "idle";
    if (finding.deeper) {
      if (head <= finding.fork) {
        await this.#restart(head, subs);
        return "delivered";
      }
      await farewellDeepReorg(this.#outbox(), subs, cursor, telemetry, network);
    }
    const removalDeps = { ...this.#deps, outbox: () => this.#outbox() };
    const removed = await sendRemovals(removalDeps, finding.replaced, subs, cursor.next);
    telemetry.count("follower_reorgs", { network });
    telemetry.log("warn", "the follower saw a reorg", {
      network,
      fork: finding.fork,
      replaced: finding.replaced.length,
      deeper_than_remembered: finding.deeper,
      ...removed,
    });
    this.#lease.set(rewound(this.#lease.held(), finding.fork));
    return this.#deliverFrom(finding.fork + 1, head, cycleNext, subs, { afterReorg: true });
  }

  /** The chain is now below every block remembered (a restart): every subscriber starts afresh. */
  async #restart(head: number, subs: readonly Followed[]): Promise<void> {
    const { network, telemetry } = this.#deps;
    await farewellRestart(this.#outbox(), subs, head, telemetry, network);
    await this.#lease.write(restarted(this.#lease.held(), head + 1));
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
}

type BlocksRead = Promise<Map<number, ChainBlock | null> | null>;
