import { publicationDelayMs } from "../../functions/core/chain/chain-head.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";

/**
 * The gateway config of every chaos scenario: the shipped defaults with SHORT timings, so a
 * fault is noticed, cooled down, probed and recovered from in seconds of real time.
 */

export const CHAIN_ID = 31337;
export const NETWORK = "chaos";
/** Provider names, in the order of the scenario's nodes and shims. */
export const PRIMARY = "primary";
export const SECONDARY = "secondary";
export const BACKUP = "backup";
export const PROVIDERS = [PRIMARY, SECONDARY, BACKUP] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** Anvil mines a block every this many seconds (interval mining). */
export const BLOCK_TIME_SECONDS = 1;

export const TIMINGS = {
  check_interval_seconds: 1,
  request_timeout_ms: 500,
  request_deadline_ms: 3_000,
  state_cache_ms: 250,
  slow_response_ms: 250,
  max_blacklist_minutes: 0.2,
  cooldown_seconds: {
    rate_limit: 3,
    quota: 3,
    timeout: 2,
    connection: 2,
    tls: 2,
    batch_limit: 2,
    transient: 2,
    slow: 2,
    force_rotate: 2,
    wrong_chain: 2,
  },
  probe: { timeout_ms: 500, max_lag_seconds: 3 },
  quorum: {
    check_timeout_ms: 500,
    max_lag_seconds: 3,
    failed_recently_checks: 1,
    // Every tick asks eth_chainId, so a provider that moves to another chain leaves quorum
    // within a tick (the default asks every 10 min).
    chain_id_check_seconds: 0.5,
    // The three anvil nodes are separate chains that coincide only while their interval
    // mining stays in step; under load their blocks' timestamps drift apart, and the fork
    // check would (rightly) exclude two of them as wrong_fork. No chaos fault is a fork.
    fork_check: false,
    failing_often: {
      window_seconds: 10,
      min_requests: 20,
      error_ratio: 0.5,
      missed_checks: 10,
      missed_ratio: 0.5,
      exclude_seconds: 3,
    },
  },
} as const satisfies Partial<ConfigInput>;

/** The `slow` fault's added latency: above slow_response_ms, below request_timeout_ms. */
export const SLOW_FAULT_MS = 350;

/**
 * How long the design needs to notice a head that stopped, beyond `max_lag_seconds`: the
 * next monitor tick (one check interval), that tick's head check (its timeout at most), one
 * block time (lag is measured between block timestamps, which move in whole blocks) and the
 * proxy's state cache (state_cache_ms). An answer behind by more than max_lag_seconds plus
 * this is stale by any reading; one behind by less is within what the design allows.
 */
export const DETECTION_ALLOWANCE_SECONDS =
  TIMINGS.check_interval_seconds +
  TIMINGS.quorum.check_timeout_ms / 1000 +
  BLOCK_TIME_SECONDS +
  TIMINGS.state_cache_ms / 1000;

export const LAG_LIMIT_SECONDS = TIMINGS.quorum.max_lag_seconds;
export const STALE_LIMIT_SECONDS = LAG_LIMIT_SECONDS + DETECTION_ALLOWANCE_SECONDS;

/** The chain position's freshness in every container (`head_cache_ms`, its default). */
const HEAD_CACHE_MS = 250;

/**
 * How far the served head may trail the chain by design (docs/behaviour.md §10.2): a new block
 * is seen within half a block time (the poll, drawn within head_cache_ms), published, and
 * answered once a delay old (head_cache_ms + 250 ms); a block's timestamp is whole seconds, so
 * `latest`, pinned to the served head, trails the best node by up to that plus one block time
 * even with every provider healthy.
 */
export const SERVED_HEAD_TRAIL_SECONDS =
  (publicationDelayMs(HEAD_CACHE_MS) + HEAD_CACHE_MS) / 1000 + 1.5 * BLOCK_TIME_SECONDS;

/** With providers that keep up, no answer may be further behind than this. */
export const TRAIL_LIMIT_SECONDS = LAG_LIMIT_SECONDS + SERVED_HEAD_TRAIL_SECONDS;

/** The `${CHAOS_KEY}` placeholder in the primary's URL (a key in the path, as paid providers have). */
export const KEY_PLACEHOLDER = "CHAOS_KEY";

export function chaosConfig(shimUrls: readonly [string, string, string]): ConfigInput {
  const [primary, secondary, backup] = shimUrls;
  return {
    ...TIMINGS,
    // The matrix measures what providers' faults do to answers: an answer from the answer
    // cache meets no provider, so it would hide the fault (and an outage's errors).
    cache: false,
    networks: {
      [NETWORK]: {
        chain_id: CHAIN_ID,
        providers: [
          { name: PRIMARY, url: `${primary}/rpc/\${${KEY_PLACEHOLDER}}`, priority: 2 },
          { name: SECONDARY, url: secondary, priority: 1 },
          { name: BACKUP, url: backup, backup: true },
        ],
      },
    },
  };
}
