import { ErrorCode } from "../jsonrpc/jsonrpc.ts";
import type { Read } from "./subscribe-params.ts";

/**
 * Where a new subscription's stream starts (docs/behaviour.md "Subscriptions over
 * WebSocket"): at the block after the served head, as geth's streams start with the next
 * block; or, with `resumeFrom` (the last block the client saw), at the block after it, when
 * that block is within the resume window (`subscriptions.resume_window_seconds`, counted in
 * block times back from the served head). Pure arithmetic on block numbers.
 */

export interface ResumeWindow {
  /** The served head when the subscription is made. */
  readonly head: number;
  readonly windowSeconds: number;
  readonly blockTimeSeconds: number;
}

const hex = (number: number) => `0x${number.toString(16)}`;

/** The oldest block a subscription may resume from (its stream then starts at the next one). */
export function oldestResumable(window: ResumeWindow): number {
  const blocks = Math.floor(window.windowSeconds / Math.max(window.blockTimeSeconds, 0.001));
  return Math.max(0, window.head - blocks);
}

/** The first block a subscription is sent, or the error that refuses its `resumeFrom`. */
export function firstBlockOf(resumeFrom: number | null, window: ResumeWindow): Read<number> {
  if (resumeFrom === null) return { ok: true, value: window.head + 1 };
  if (resumeFrom > window.head) {
    return {
      ok: false,
      error: {
        code: ErrorCode.invalidParams,
        message: `resumeFrom ${hex(resumeFrom)} is ahead of the chain's head ${hex(window.head)}: pass the last block you saw`,
      },
    };
  }
  const oldest = oldestResumable(window);
  if (resumeFrom < oldest) {
    return {
      ok: false,
      error: {
        code: ErrorCode.invalidParams,
        message: `resumeFrom ${hex(resumeFrom)} is outside the resume window (${window.windowSeconds} s): the oldest block to resume from is ${hex(oldest)}; read older blocks and logs with eth_getBlockByNumber and eth_getLogs`,
      },
    };
  }
  return { ok: true, value: resumeFrom + 1 };
}
