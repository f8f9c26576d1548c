import type { SubscriptionRecord } from "../../subscriptions/subscription-records.ts";

/**
 * Where each subscription stands against the network's cursor (docs/behaviour.md
 * "Subscriptions over WebSocket", the follower). A *live* subscription has every block before
 * the cursor and is sent each block the cursor delivers, with no write of its own; a *waiting*
 * one starts at or after the cursor (a new subscription: the served head plus one) and goes
 * live with the first block it is sent; one *behind* the cursor (`resumeFrom`, or subscribed
 * while the served head trailed the follower) is caught up block by block, then goes live.
 */

/** A subscription as the follower reads it (`firstBlock` and `live` are the follower's). */
export type Followed = SubscriptionRecord;

export type Standing = "live" | "waiting" | "behind";

/** Where `subscription` stands when the cursor's next block is `next`. */
export function standing(subscription: Followed, next: number): Standing {
  if (subscription.live === true) return "live";
  return subscription.nextBlock >= next ? "waiting" : "behind";
}

/**
 * Whether the cursor's delivery of block `number` goes to `subscription`, for a cycle that
 * began with the cursor at `cycleNext`: every live one, and a waiting one from its first block
 * on (a block a reorg sends again is below every waiting subscription's first block).
 */
export function takesBlock(subscription: Followed, number: number, cycleNext: number): boolean {
  const where = standing(subscription, cycleNext);
  if (where === "live") return true;
  return where === "waiting" && subscription.nextBlock <= number;
}

/** Whether the subscription was sent block `number` (so a reorg that replaced it concerns it). */
export function wasSent(subscription: Followed, number: number, cursorNext: number): boolean {
  const first = subscription.firstBlock ?? subscription.nextBlock;
  if (number < first) return false;
  return subscription.live === true ? number < cursorNext : number < subscription.nextBlock;
}

/** `subs` with `changed` in the place of the subscription of its id. */
export function replaceIn(subs: Followed[], changed: Followed): void {
  const index = subs.findIndex((sub) => sub.id === changed.id);
  if (index >= 0) subs[index] = changed;
}

/**
 * The block the cursor may move on to without reading the ones before it: with no live
 * subscription, nobody waits for a block before the served head's next or before the first
 * block a waiting subscription wants; with one, `next` itself.
 */
export function firstWanted(subs: readonly Followed[], next: number, head: number): number {
  if (subs.some((sub) => sub.live === true)) return next;
  const waiting = subs
    .filter((sub) => standing(sub, next) === "waiting")
    .map((sub) => sub.nextBlock);
  return Math.max(next, Math.min(head + 1, ...waiting));
}
