import type { Telemetry } from "../../ports.ts";
import { oneChain } from "../../request/filters/filter-progress.ts";
import type { ChainBlock, ChainReads } from "../chain-reads.ts";
import { catchingUp, type FollowerCursor, sameBlock } from "../cursor.ts";
import {
  BLOCKS_PER_STEP,
  CATCH_UP_BLOCKS,
  CATCH_UP_SUBSCRIPTIONS,
  type FollowerSettings,
} from "../follow-settings.ts";
import { type BlockLog, logsFor } from "./block-logs.ts";
import { boundedNotification, errorNotification, hexNumber } from "./notifications.ts";
import type { Outbox } from "./outbox.ts";
import { type Followed, standing } from "./subscribers.ts";

/**
 * Subscriptions behind the cursor (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower): one that resumed (`resumeFrom`), or one subscribed while the served head its
 * container read trailed the follower. Each step sends a few of them their next blocks, in
 * order, read through the gateway as the cursor's are (and checked against the blocks the
 * cursor delivered, so a subscription catching up sees the same chain), each subscription's
 * move claimed conditionally before anything is sent; the one that reaches the cursor goes live.
 */

export interface CatchUpDeps {
  readonly network: string;
  readonly reads: ChainReads;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly settings: FollowerSettings;
  readonly cursor: () => FollowerCursor;
  readonly write: (next: FollowerCursor) => Promise<void>;
  readonly outbox: () => Outbox;
  readonly dropped: ReadonlySet<string>;
  /** Moves a subscription on (`SubscriberListing.move`): false when the registry holds it elsewhere. */
  readonly move: (sub: Followed, next: number, live: boolean) => Promise<boolean>;
}

export class CatchUp {
  readonly #deps: CatchUpDeps;
  /** When each subscription's blocks first could not be read (ms), for the delivery bound. */
  readonly #failingSince = new Map<string, number>();

  constructor(deps: CatchUpDeps) {
    this.#deps = deps;
  }

  async run(subs: readonly Followed[]): Promise<void> {
    const { settings, clock } = this.#deps;
    const cursor = this.#deps.cursor();
    const behind = subs
      .filter(
        (sub) => standing(sub, cursor.next) === "behind" && !this.#deps.dropped.has(sub.connection),
      )
      .slice(0, CATCH_UP_SUBSCRIPTIONS);
    if (behind.length === 0) return;
    const windowBlocks =
      Math.ceil(settings.resumeWindowMs / settings.blockTimeMs) + BLOCKS_PER_STEP;
    const outbox = this.#deps.outbox();
    const blocks = new Map<number, ChainBlock | null>();
    const logs = new Map<string, readonly BlockLog[] | null>();
    const ready: Array<{ sub: Followed; range: ChainBlock[] }> = [];
    for (const sub of behind) {
      if (sub.nextBlock < cursor.next - windowBlocks) {
        this.#tooFarBehind(outbox, sub, cursor.next);
        continue;
      }
      const end = Math.min(sub.nextBlock + CATCH_UP_BLOCKS, cursor.next) - 1;
      const range = await this.#range(sub.nextBlock, end, cursor, blocks);
      const ok = range !== null && (sub.kind !== "logs" || (await this.#logs(range, behind, logs)));
      if (ok) {
        this.#failingSince.delete(sub.id);
        ready.push({ sub, range });
      } else {
        const since = this.#failingSince.get(sub.id) ?? clock();
        this.#failingSince.set(sub.id, since);
        if (clock() - since >= settings.deliveryTimeoutMs) this.#undeliverable(outbox, sub);
      }
    }
    if (ready.length > 0) await this.#send(ready, cursor, outbox, logs);
    await outbox.flush();
  }

  /** Claims the catch-ups (so a run that stops mid-way is known), moves each, then sends. */
  async #send(
    ready: ReadonlyArray<{ sub: Followed; range: ChainBlock[] }>,
    cursor: FollowerCursor,
    outbox: Outbox,
    logs: ReadonlyMap<string, readonly BlockLog[] | null>,
  ): Promise<void> {
    await this.#deps.write(
      catchingUp(
        this.#deps.cursor(),
        ready.map(({ sub }) => sub.id),
      ),
    );
    for (const { sub, range } of ready) {
      const next = (range.at(-1) as ChainBlock).number + 1;
      if (!(await this.#deps.move(sub, next, next === cursor.next))) continue;
      for (const block of range) {
        if (sub.kind === "newHeads") {
          const what = `the header of block ${hexNumber(block.number)}`;
          outbox.add(sub.connection, "newHeads", boundedNotification(sub.id, block.header, what));
          continue;
        }
        for (const log of logsFor(logs.get(block.hash) ?? [], sub.filter)) {
          const what = `the log ${hexNumber(log.index)} of block ${hexNumber(block.number)}`;
          outbox.add(sub.connection, "logs", boundedNotification(sub.id, log.text, what));
        }
      }
    }
    await outbox.flush();
    await this.#deps.write(catchingUp(this.#deps.cursor(), []));
  }

  /**
   * Blocks `from`..`to`, one chain, each the block the cursor delivered at its height while it
   * remembers it; null when they cannot all be read so (read again at the next step).
   */
  async #range(
    from: number,
    to: number,
    cursor: FollowerCursor,
    known: Map<number, ChainBlock | null>,
  ): Promise<ChainBlock[] | null> {
    const numbers = Array.from({ length: to - from + 1 }, (_, index) => from + index);
    const missing = numbers.filter((number) => !known.has(number));
    if (missing.length > 0) {
      const found = await this.#deps.reads.blocks(missing);
      if (found === null) return null;
      for (const [number, block] of found) known.set(number, block);
    }
    const range: ChainBlock[] = [];
    for (const number of numbers) {
      const block = known.get(number);
      if (block == null) return null;
      const remembered = cursor.recent.find((recent) => recent.number === number);
      if (remembered !== undefined && !sameBlock(block.hash, remembered.key)) return null;
      range.push(block);
    }
    return oneChain(range, null) ? range : null;
  }

  /** Reads the logs of every block of the range (for every catching-up filter at once); false if one fails. */
  async #logs(
    range: readonly ChainBlock[],
    behind: readonly Followed[],
    logs: Map<string, readonly BlockLog[] | null>,
  ): Promise<boolean> {
    const filters = behind.filter((sub) => sub.kind === "logs").map((sub) => sub.filter ?? {});
    for (const block of range) {
      if (!logs.has(block.hash)) {
        const answer = await this.#deps.reads.blockLogs(block.hash, filters);
        logs.set(block.hash, answer.ok ? answer.logs : null);
      }
      if (logs.get(block.hash) === null) return false;
    }
    return true;
  }

  #tooFarBehind(outbox: Outbox, sub: Followed, next: number): void {
    const message = `this subscription is at block ${hexNumber(sub.nextBlock)}, ${next - sub.nextBlock} blocks behind the chain: more than the resume window holds; subscribe again`;
    outbox.fail(sub.connection, sub.kind, errorNotification(sub.id, message), "too far behind");
    this.#deps.telemetry.count("subscription_delivery_failures", { network: this.#deps.network });
  }

  #undeliverable(outbox: Outbox, sub: Followed): void {
    const seconds = Math.round(this.#deps.settings.deliveryTimeoutMs / 1000);
    const message = `the blocks from ${hexNumber(sub.nextBlock)} could not be read from any provider within ${seconds} s: subscribe again with resumeFrom ${hexNumber(sub.nextBlock - 1)}`;
    outbox.fail(
      sub.connection,
      sub.kind,
      errorNotification(sub.id, message),
      "blocks undeliverable",
    );
    this.#failingSince.delete(sub.id);
    this.#deps.telemetry.count("subscription_delivery_failures", { network: this.#deps.network });
  }
}
