import { publicationDelayMs } from "../chain/chain-head.ts";
import type { Network } from "../config/network-model.ts";

/**
 * The follower's settings for one network (from its config), and the fixed policies of its
 * steps (docs/behaviour.md "Subscriptions over WebSocket", the follower).
 */
export interface FollowerSettings {
  readonly blockTimeMs: number;
  /** How long after its delivery a block can still be resumed from (`resume_window_seconds`). */
  readonly resumeWindowMs: number;
  /**
   * How long a block's logs are asked for, from provider to provider, before its `logs`
   * subscribers are told they could not be delivered (`delivery_timeout_seconds`).
   */
  readonly deliveryTimeoutMs: number;
  /** The most calls one request to the pipeline may hold (`max_batch`). */
  readonly maxBatch: number;
  /** How old a container's copy of the chain position may be (`head_cache_ms`). */
  readonly headCacheMs: number;
  /** How long after its publication a block is the served head (`head_cache_ms` and the write margin). */
  readonly publicationDelayMs: number;
}

/** A network's follower settings from its config. */
export function followerSettingsOf(network: Network): FollowerSettings {
  const { settings } = network;
  return {
    blockTimeMs: settings.block_time_seconds * 1000,
    resumeWindowMs: settings.subscriptions.resume_window_seconds * 1000,
    deliveryTimeoutMs: settings.subscriptions.delivery_timeout_seconds * 1000,
    maxBatch: settings.max_batch,
    headCacheMs: settings.head_cache_ms,
    publicationDelayMs: publicationDelayMs(settings.head_cache_ms),
  };
}

/** The most blocks one step delivers (a follower behind takes several steps, one after another). */
export const BLOCKS_PER_STEP = 32;
/** The blocks one step delivers from `from`: up to the served head, at most `BLOCKS_PER_STEP`. */
export function stepRange(from: number, head: number): number[] {
  const to = Math.min(head, from + BLOCKS_PER_STEP - 1);
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, index) => from + index);
}
/** Subscriptions behind the cursor caught up per step, and blocks each. */
export const CATCH_UP_SUBSCRIPTIONS = 16;
export const CATCH_UP_BLOCKS = 64;
/** Connections pushed to at once. */
export const PUSH_CONCURRENCY = 64;
/** A run stops stepping this long before its end, so every read of its last step has time (ms). */
export const READ_MARGIN_MS = 2_000;
/** How long the cursor is kept without a write (a network without subscribers for a day starts afresh). */
export const CURSOR_TTL_MS = 86_400_000;

/** How long to wait before asking again for a block's logs that no provider served. */
export function logsRetryMs(settings: FollowerSettings): number {
  return Math.min(2_000, Math.max(250, settings.blockTimeMs / 4));
}

/**
 * How often the follower looks at the served head when no block is awaited sooner
 * (`HeadWatch`): an eighth of a block time, between 100 ms and 1 s. A look is the served
 * head's answer to `eth_blockNumber` (no provider call; a consistent read of the chain
 * position at most every `head_cache_ms`).
 */
export function pollMs(settings: FollowerSettings): number {
  return Math.max(100, Math.min(1_000, settings.blockTimeMs / 8));
}

/**
 * How long the logs sent of a block are kept for a reorg to send them again as removed: while
 * the block is among the remembered ones, and the resume window.
 */
export function keptLogsMs(settings: FollowerSettings, rememberedBlocks: number): number {
  return Math.max(settings.resumeWindowMs, rememberedBlocks * settings.blockTimeMs) + 600_000;
}
