import type { Telemetry } from "../../ports.ts";
import type { FollowerCursor } from "../cursor.ts";
import { errorNotification, hexNumber } from "./notifications.ts";
import type { Outbox } from "./outbox.ts";
import { type Followed, wasSent } from "./subscribers.ts";

/**
 * Subscribers whose stream cannot go on as it was (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower): each gets an error notification saying why and what to do, and
 * its socket is closed with the reason, so the client reconnects; nothing is ever a silent gap.
 */

/** The chain restarted below every block remembered: every subscriber starts afresh. */
export async function farewellRestart(
  outbox: Outbox,
  subs: readonly Followed[],
  head: number,
  telemetry: Telemetry,
  network: string,
): Promise<void> {
  for (const sub of subs) {
    const message = `the chain was replaced below every block this subscription was sent (it restarted at block ${hexNumber(head)}): subscribe again`;
    outbox.fail(
      sub.connection,
      sub.kind,
      errorNotification(sub.id, message),
      "the chain restarted",
    );
  }
  await outbox.flush();
  telemetry.log("error", "the follower saw the chain restart below what it remembers", {
    network,
    head,
  });
}

/**
 * A reorg replaced every block remembered, so it may reach below them: a subscription sent a
 * block below the oldest remembered cannot be told which of those were replaced.
 */
export async function farewellDeepReorg(
  outbox: Outbox,
  subs: readonly Followed[],
  cursor: Pick<FollowerCursor, "recent" | "next">,
  telemetry: Telemetry,
  network: string,
): Promise<void> {
  const oldest = cursor.recent[0]?.number ?? cursor.next;
  const beyond = subs.filter((sub) => wasSent(sub, oldest - 1, cursor.next));
  if (beyond.length === 0) return;
  for (const sub of beyond) {
    const message = `the chain was reorganised deeper than the blocks the gateway remembers (from ${hexNumber(oldest)}): headers and logs this subscription was sent before that block may have been replaced; subscribe again, and read the blocks before ${hexNumber(oldest)} again`;
    outbox.fail(sub.connection, sub.kind, errorNotification(sub.id, message), "deep reorg");
  }
  await outbox.flush();
  telemetry.count("subscription_delivery_failures", { network }, beyond.length);
  telemetry.log("error", "the follower saw a reorg deeper than the blocks it remembers", {
    network,
    oldest_remembered: oldest,
    subscriptions: beyond.length,
  });
}

/**
 * A run stopped while delivering `block` (or catching up `catching`): what its subscribers
 * were sent of it is unknown.
 */
export async function farewellInterrupted(
  outbox: Outbox,
  subs: readonly Followed[],
  block: number | null,
  catching: readonly string[],
  telemetry: Telemetry,
  network: string,
): Promise<void> {
  let told = 0;
  for (const sub of subs) {
    const inBlock =
      block !== null && sub.live === true && (sub.firstBlock ?? sub.nextBlock) <= block;
    if (!inBlock && !catching.includes(sub.id)) continue;
    const from = block === null ? sub.nextBlock - 1 : block - 1;
    const message = `the gateway stopped while delivering to this subscription, so some notifications may be missing: subscribe again with resumeFrom ${hexNumber(from)} (or the last block you saw)`;
    outbox.fail(
      sub.connection,
      sub.kind,
      errorNotification(sub.id, message),
      "delivery interrupted",
    );
    told++;
  }
  await outbox.flush();
  telemetry.count("subscription_delivery_failures", { network }, told);
  telemetry.log("error", "the follower found a delivery interrupted by a run that stopped", {
    network,
    block,
    subscriptions: told,
  });
}
