import type { FollowerCursor } from "./cursor.ts";
import { hexNumber } from "./notifications.ts";

/**
 * Resuming a subscription (docs/behaviour.md "Subscriptions over WebSocket"): a client that
 * lost its socket subscribes again with `resumeFrom`, the last block it saw, and is sent every
 * block after it, in order, when those blocks were delivered within the resume window. The
 * socket's `eth_subscribe` asks this with the network's cursor; the follower then catches the
 * subscription up from `nextBlock`.
 */

export type ResumeStart =
  | { readonly ok: true; readonly nextBlock: number }
  | { readonly ok: false; readonly message: string };

/**
 * The oldest block a subscription may resume at: the first block claimed in the oldest slot
 * still inside the window (a block claimed in a slot that began before it may be older than
 * the window, so it is not offered). Null when the window holds no delivered block.
 */
export function oldestResumable(
  cursor: FollowerCursor,
  now: number,
  windowMs: number,
): number | null {
  const inside = cursor.marks.find((mark) => mark.at >= now - windowMs);
  return inside === undefined ? null : inside.block;
}

/** Where a subscription resuming after `resumeFrom` starts, or why it cannot. */
export function resumeStart(
  cursor: FollowerCursor | null,
  resumeFrom: number,
  now: number,
  windowMs: number,
): ResumeStart {
  const window = `${Math.round(windowMs / 1000)} s`;
  const oldest = cursor === null ? null : oldestResumable(cursor, now, windowMs);
  if (cursor === null || oldest === null) {
    return {
      ok: false,
      message: `resumeFrom ${hexNumber(resumeFrom)} cannot be resumed: no block was delivered on this network in the last ${window}; subscribe without resumeFrom`,
    };
  }
  if (resumeFrom + 1 < oldest) {
    return {
      ok: false,
      message: `resumeFrom ${hexNumber(resumeFrom)} is older than the resume window (${window}): the oldest resumeFrom accepted now is ${hexNumber(oldest - 1)}; read the blocks before it with eth_getLogs or eth_getBlockByNumber`,
    };
  }
  if (resumeFrom >= cursor.next) {
    return {
      ok: false,
      message: `resumeFrom ${hexNumber(resumeFrom)} is past the newest block delivered on this network (${hexNumber(cursor.next - 1)})`,
    };
  }
  return { ok: true, nextBlock: resumeFrom + 1 };
}
