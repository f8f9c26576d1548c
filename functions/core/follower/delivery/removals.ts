import type { Telemetry } from "../../ports.ts";
import { removedLogText } from "../../request/filters/filter-answers.ts";
import type { RecentBlock } from "../cursor.ts";
import type { FollowerStore, FollowerSubscriptions } from "../follower-ports.ts";
import { keptLogs } from "../reorg.ts";
import { logsFor } from "./block-logs.ts";
import { boundedNotification, hexNumber } from "./notifications.ts";
import type { Outbox } from "./outbox.ts";
import { type Followed, standing, wasSent } from "./subscribers.ts";

/**
 * What a reorg owes the subscribers (docs/behaviour.md "Subscriptions over WebSocket", the
 * follower): every log of a replaced block a subscription was sent goes to it again with
 * `removed: true`, oldest block first, before the new branch; a subscription being caught up
 * that was sent replaced blocks goes back to the fork point.
 */

export interface RemovalDeps {
  readonly network: string;
  readonly store: FollowerStore;
  readonly subscriptions: FollowerSubscriptions;
  readonly telemetry: Telemetry;
  readonly outbox: () => Outbox;
}

export interface RemovalCounts {
  /** Removed logs sent (a log sent to two subscriptions counts twice). */
  readonly removed_logs: number;
  /** Replaced blocks whose sent logs were not kept (so none could be sent again as removed). */
  readonly removed_unavailable: number;
}

/** Sends the replaced blocks' logs again as removed; `cursorNext`: the cursor before the reorg. */
export async function sendRemovals(
  deps: RemovalDeps,
  replaced: readonly RecentBlock[],
  subs: readonly Followed[],
  cursorNext: number,
): Promise<RemovalCounts> {
  const { network, store, telemetry } = deps;
  const outbox = deps.outbox();
  let removed = 0;
  let unavailable = 0;
  for (const block of replaced) {
    const takers = subs.filter(
      (sub) =>
        sub.kind === "logs" &&
        outbox.open(sub.connection) &&
        wasSent(sub, block.number, cursorNext),
    );
    if (takers.length === 0) continue;
    const texts = await store.readLogs(network, block).catch((error: unknown) => {
      telemetry.log("warn", "the logs kept of a replaced block could not be read", {
        network,
        block: block.number,
        error: error instanceof Error ? error.message : String(error),
      });
      unavailable++;
      return null;
    });
    if (texts === null) continue;
    const logs = keptLogs(texts);
    for (const sub of takers) {
      for (const log of logsFor(logs, sub.filter)) {
        const what = `the removed log ${hexNumber(log.index)} of block ${hexNumber(block.number)}`;
        outbox.add(sub.connection, "logs", boundedNotification(sub.id, removedLogText(log), what));
        removed++;
      }
    }
  }
  await outbox.flush();
  await rewindBehind(deps, subs, replaced[0]?.number ?? cursorNext, cursorNext);
  return { removed_logs: removed, removed_unavailable: unavailable };
}

/** Subscriptions being caught up past the fork go back to it (they are caught up on the new branch). */
async function rewindBehind(
  deps: RemovalDeps,
  subs: readonly Followed[],
  firstReplaced: number,
  cursorNext: number,
): Promise<void> {
  for (const sub of subs) {
    if (standing(sub, cursorNext) !== "behind" || sub.nextBlock <= firstReplaced) continue;
    const back = Math.max(firstReplaced, sub.firstBlock ?? firstReplaced);
    await deps.subscriptions.advance(deps.network, sub.id, sub.nextBlock, back).catch(() => false);
  }
}
