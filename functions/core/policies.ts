/**
 * The fixed numbers that shape the gateway's behaviour and are not config keys, in one place,
 * each with the reason for its value. Config keys (docs/behaviour.md §1) cover everything an
 * operator tunes; these are the mechanics around them.
 */

/**
 * The slow rule (docs/behaviour.md §6) blacklists a provider for a slow success only while at
 * least this many providers could take a plain read: with fewer, rotating one out leaves too
 * little to compare against and too little to serve.
 */
export const SLOW_RULE_MIN_CANDIDATES = 3;

/**
 * A request waits at most this long for its own health writes before it answers (a frozen
 * Lambda may never finish them later), so a slow or throttled DynamoDB never holds an answer.
 */
export const HEALTH_WRITE_WAIT_MS = 200;

/**
 * Rounds of the compare-and-set loop on a provider's health item: each lost race re-judges
 * the incident against the stored item. Three rounds settle any realistic contention (one
 * blip seen by many containers is one strike after the first round).
 */
export const HEALTH_WRITE_ROUNDS = 3;

/**
 * The request deadline ends this long before the platform's cut-off (Lambda's remaining
 * time), leaving room to assemble and return the answer.
 */
export const DEADLINE_MARGIN_MS = 1000;

/**
 * The monitor's quorum snapshot is in force for this many check intervals; older, the proxy
 * treats every provider as in quorum (fail open on a stalled monitor).
 */
export const QUORUM_STALE_INTERVALS = 3;

/**
 * A provider "serves other traffic" when it answered this container within this window (or is
 * a member of a fresh quorum): only then can a call that failed on every provider the same
 * way be blamed on the call (docs/behaviour.md §4.9).
 */
export const SUSPECT_TRAFFIC_WINDOW_MS = 60_000;

/**
 * Methods outside the catalogue that providers answered, remembered per network and
 * container: they may become capability blacklists. A bound, though only real methods get
 * answers.
 */
export const SERVED_METHODS_REMEMBERED = 256;

/**
 * How long a publication of the served head may take to land after it was made (its write's
 * round trip within a region, and the containers' clock skew): containers read the head item
 * strongly consistent, so a publication is in every copy read this long after it was made.
 * The write is given up after this long rather than left to land later.
 */
export const SERVED_HEAD_WRITE_MARGIN_MS = 250;

/**
 * A quorum head more than this many blocks below the recorded `latest`, with a live block (no
 * older than `quorum.max_lag_seconds`), is another chain under the same chain id (a devnet or
 * testnet restarted): no reorg of a live chain is this deep without breaking finality, and a
 * provider merely behind shows an old block.
 */
export const CHAIN_RESTART_BLOCKS = 32;

/**
 * Checks in a row that must see such a quorum head before the chain position resets to it,
 * so a brief glitch of the monitor or of the providers does not move the cache's keys on.
 */
export const CHAIN_RESTART_CHECKS = 3;

/**
 * A transaction goes to the other providers this long after the first attempt left: long enough
 * for a quick acceptance to be the answer, short enough that the copies are on their way before
 * a slow one times out.
 */
export const BROADCAST_DELAY_MS = 50;

/**
 * The sends of one request claimed in the transaction ledger (docs/behaviour.md §4.12), two
 * writes each (the claim, the outcome): any hex string is a transaction to claim, so a batch
 * of 100 wrote 200 items. Sends past it go out as without a ledger.
 */
export const LEDGER_CLAIMS_PER_REQUEST = 16;

/**
 * The most a request waits, after its answer is settled, for the copies of its transactions
 * still on their way (a Lambda is frozen once it answers).
 */
export const BROADCAST_WAIT_MS = 1000;

/** The window of the request stats shown on the status route (`stats.window_seconds`). */
export const STATS_WINDOW_SECONDS = 300;

/** Request stats are added up in buckets of this length; every writer of a network agrees. */
export const STATS_BUCKET_SECONDS = 10;

/**
 * A container flushes its request stats at most this often while they hold a failure, so
 * "failing often" sees failures within this of a monitor check.
 */
export const STATS_FLUSH_INTERVAL_MS = 5000;

/**
 * With no failure to report, once a bucket: one write per provider and bucket is the least the
 * buckets allow, and the successes reach the window at most one bucket late.
 */
export const STATS_QUIET_FLUSH_INTERVAL_MS = STATS_BUCKET_SECONDS * 1000;

/**
 * Failures whose cooldown would end within this of a provider's current expiry are the same
 * incident seen again by another request: no write, no strike.
 */
export const SAME_INCIDENT_MS = 1000;

/**
 * Past this age (at least this many state_cache_ms, and never under the floor) a container's
 * copy of the shared state is too old to serve while it refreshes: the request waits.
 */
export const STATE_MAX_STALE_FACTOR = 10;
export const STATE_MAX_STALE_FLOOR_MS = 10_000;

/**
 * Hedged reads learn each provider's latency per method from this container's own answers
 * over this window: long enough to hold a steady sample at a few requests a second, short
 * enough to follow a provider that slows down or recovers within a minute.
 */
export const HEDGE_LATENCY_WINDOW_SECONDS = 60;

/**
 * A p90 from fewer answers than this is noise (five answers above it would move it): below
 * it, the provider's p90 over all its hedgeable reads stands in, and below that `hedge.max_ms`.
 */
export const HEDGE_MIN_SAMPLES = 50;

/** `hedge.max_ratio` counts a container's requests and hedges over this sliding window. */
export const HEDGE_BUDGET_WINDOW_SECONDS = 60;

/**
 * Filters the gateway holds (docs/behaviour.md §14). A poll of a block filter reports at most
 * this many blocks (the rest at the next poll): their hashes come from one batch of headers,
 * which must also fit `max_batch`.
 */
export const FILTER_BLOCKS_PER_POLL = 100;

/**
 * The most blocks one poll of a log filter covers when no provider in use has a known log
 * range (a filter from block 0, one not polled for minutes on a fast chain): a span most
 * providers take; a refusal lowers it for that filter.
 */
export const FILTER_POLL_MAX_BLOCKS = 10_000;

/** A poll retries its range this many times smaller after refusals, then reports nothing. */
export const FILTER_POLL_REFUSALS = 4;

/**
 * Blocks a filter remembers (number, hash, logs reported) to notice a reorg and report the
 * logs it replaced: those above the finalized block, at most this many. A reorg deeper than
 * that is reported from the oldest block remembered.
 */
export const FILTER_SEEN_BLOCKS = 64;

/**
 * A poll that reports nothing new rewrites the filter only to extend its expiry, and only
 * once this much of the idle time has passed: a filter polled every second is not rewritten
 * every second.
 */
export const FILTER_EXTEND_AFTER_FRACTION = 0.2;

/**
 * The filter calls (installs, polls, reads, uninstalls) one request may have the gateway serve
 * from its filter store, each a read and at most a write there: a batch of 100 polls wrote 100
 * items. Clients poll a filter a request (viem, ethers); a dashboard polling many batches them
 * by sixteen.
 */
export const FILTER_CALLS_PER_REQUEST = 16;

/**
 * Every node keeps the state of at least this many recent blocks (Avalanche's pruning nodes
 * keep 32, geth 128, reth and Erigon far more): a pruned-history answer about a block this
 * close to the known head, or about a tag that moves, is the provider failing, not history it
 * dropped, and is retried as a bad answer (docs/behaviour.md §16.4).
 */
export const PRUNED_CLAIM_RECENT_BLOCKS = 32;

/**
 * A container writes a provider's tightened bound for one resource to the shared state at most
 * once in this long (the first one it learns at once): a caller walking old blocks upward past a
 * pruned provider's window would otherwise cost a write per call (docs/behaviour.md §16.3).
 */
export const HISTORY_WRITE_SPACING_MS = 30_000;

/**
 * After a provider refused state without naming its oldest block, the monitor probes it at its
 * next tick to find where its state starts, but at most this often (docs/behaviour.md §16.3).
 */
export const HISTORY_PROBE_AFTER_LESSON_MS = 60_000;

/** An `eth_capabilities` that a provider answered as unknown is asked again after this long. */
export const CAPABILITIES_REASK_MS = 3_600_000;

/** Block hashes with their numbers this container remembers from answers (EIP-1898 by hash). */
export const BLOCK_NUMBERS_BY_HASH_KEPT = 4096;
