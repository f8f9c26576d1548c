import * as z from "zod/mini";
import { ANY_ORIGIN, corsOriginProblem, DEFAULT_CORS_ORIGINS } from "../http/cors.ts";
import { DEFAULT_METHODS_DENY } from "../methods/deny-by-default.ts";
import { defineSubscriptionSchemas } from "../subscriptions/subscription-settings.ts";
import { boundIssues, PLATFORM_LIMITS } from "./config-bounds.ts";
import { consensusIssues, defineConsensusSchema } from "./consensus-schema.ts";
import { defineHistorySchemas } from "./history-schema.ts";
import { defineLogCheckSchemas } from "./log-check-schema.ts";
import { providerUrlProblems } from "./provider-url.ts";
import { withDefaults } from "./with-defaults.ts";

/**
 * Builds the config-as-code schemas (docs/behaviour.md §1). Keys keep invictus-rpc's
 * snake_case names so an invictus config loads unchanged; every tunable has a default at the
 * top level and may be overridden inside a network. Building them costs several ms of CPU, so
 * `config-schema.ts` calls this once, on first use, not when a Lambda imports its bundle.
 */
export function defineConfigSchemas() {
  const positiveInt = z.int().check(z.positive());
  const nonNegativeInt = z.int().check(z.nonnegative());
  /** Copies of a transaction beyond the first send: more buys no reach worth its calls. */
  const broadcastCopies = z.int().check(z.nonnegative(), z.maximum(10));
  const seconds = z.number().check(z.positive());
  /** Chunks of one log query in flight at once: each is an upstream call a provider may rate-limit. */
  const logsConcurrency = z.int().check(z.gte(1), z.lte(32));
  /** Filters one API key may hold per network; the ids have room for 65,536 (filter-id.ts). */
  const filtersPerKey = z.int().check(z.gte(1), z.lte(10_000));
  /** How long a filter lives unpolled: at least a few polls' worth, at most a day. */
  const filterIdleSeconds = z.number().check(z.gte(10), z.lte(86_400));
  /** A shared-tier item's compressed answer: at most what a DynamoDB item holds. */
  const sharedItemBytes = z
    .int()
    .check(
      z.positive(),
      z.lte(
        PLATFORM_LIMITS.maxSharedItemBytes,
        `at most ${PLATFORM_LIMITS.maxSharedItemBytes} (DynamoDB's 400 KB item, less its key)`,
      ),
    );
  const { logsBloom, logsCheckHeaders, logsCheckReceipts } = defineLogCheckSchemas();

  const providerUrl = z.string().check(
    z.superRefine((url, ctx) => {
      for (const message of providerUrlProblems(url)) ctx.addIssue({ code: "custom", message });
    }),
  );
  const nonEmptyString = z.string().check(z.minLength(1));
  const { providerHistory, historyBounds } = defineHistorySchemas();
  const subscriptions = defineSubscriptionSchemas();
  const methodPatterns = z.array(nonEmptyString);

  const cooldown = withDefaults(
    {
      rate_limit: seconds,
      quota: seconds,
      timeout: seconds,
      connection: seconds,
      tls: seconds,
      batch_limit: seconds,
      transient: seconds,
      slow: seconds,
      force_rotate: seconds,
      forbidden: seconds,
      redirect: seconds,
      chain_unavailable: seconds,
      wrong_chain: seconds,
      capability: seconds,
      inconsistent: seconds,
    },
    {
      rate_limit: 300,
      quota: 300,
      timeout: 180,
      connection: 120,
      tls: 120,
      batch_limit: 60,
      transient: 60,
      slow: 120,
      force_rotate: 60,
      forbidden: 86_400,
      redirect: 120,
      chain_unavailable: 86_400,
      wrong_chain: 600,
      capability: 86_400,
      inconsistent: 300,
    },
  );
  const cooldownSecondsSchema = cooldown.full;

  const probe = withDefaults(
    { timeout_ms: positiveInt, max_lag_seconds: seconds },
    { timeout_ms: 5000, max_lag_seconds: 60 },
  );

  /**
   * The event log: how long events are kept, how many per network, and when the quorum head
   * counts as stalled (block times without a new block).
   */
  const events = withDefaults(
    {
      retention_days: z.number().check(z.gt(0), z.lte(365)),
      max_kept: z.int().check(z.gte(100), z.lte(100_000)),
      head_stall_block_times: seconds,
    },
    { retention_days: 7, max_kept: 1000, head_stall_block_times: 5 },
  );

  /**
   * Hedged reads: when a read's first attempt has not answered after its provider's p90 latency
   * for the method (clamped to `min_ms`..`max_ms`), one second attempt goes to the next
   * provider; at most `max_ratio` of a container's requests a minute are hedged (0: never), and
   * never a batch of more than `max_batch` calls.
   */
  const hedge = withDefaults(
    {
      max_ratio: z.number().check(z.gte(0), z.lte(1)),
      min_ms: positiveInt,
      max_ms: positiveInt,
      max_batch: positiveInt,
    },
    { max_ratio: 0.1, min_ms: 150, max_ms: 2000, max_batch: 10 },
  );

  const failingOften = withDefaults(
    {
      window_seconds: seconds,
      min_requests: positiveInt,
      error_ratio: z.number().check(z.gt(0), z.lte(1)),
      missed_checks: positiveInt,
      missed_ratio: z.number().check(z.gt(0), z.lte(1)),
      exclude_seconds: seconds,
    },
    {
      window_seconds: 300,
      min_requests: 20,
      error_ratio: 0.5,
      missed_checks: 10,
      missed_ratio: 0.5,
      exclude_seconds: 300,
    },
  );

  const quorumFields = {
    check_timeout_ms: positiveInt,
    max_lag_seconds: seconds,
    max_ahead_blocks: positiveInt,
    failed_recently_checks: nonNegativeInt,
    chain_id_check_seconds: seconds,
    fork_check: z.boolean(),
  };
  const quorumDefaults = {
    check_timeout_ms: 7000,
    max_lag_seconds: 60,
    max_ahead_blocks: 500,
    failed_recently_checks: 2,
    chain_id_check_seconds: 600,
    // Off only where the providers are knowingly separate chains (the chaos matrix's independent nodes).
    fork_check: true,
  };
  const quorumFull = z.strictObject({
    ...withDefaults(quorumFields, quorumDefaults).shape,
    failing_often: failingOften.full,
  });
  const quorum = {
    full: z.prefault(quorumFull, {}),
    override: z.partial(z.strictObject({ ...quorumFields, failing_often: failingOften.override })),
  };

  /** Tunables with their defaults: the shape every network ends up with after merging. */
  const tunableShape = {
    max_attempts: z._default(positiveInt, 3),
    request_timeout_ms: z._default(positiveInt, 10_000),
    request_deadline_ms: z._default(positiveInt, 25_000),
    max_batch: z._default(positiveInt, 100),
    max_body_bytes: z._default(positiveInt, 1_048_576),
    max_json_depth: z._default(positiveInt, 64),
    max_response_bytes: z._default(positiveInt, 6_000_000),
    diagnostic_headers: z._default(z.boolean(), true),
    state_cache_ms: z._default(nonNegativeInt, 1000),
    head_cache_ms: z._default(nonNegativeInt, 250),
    max_blacklist_minutes: z._default(seconds, 30),
    slow_response_ms: z._default(positiveInt, 3000),
    force_rotate_errors: z._default(positiveInt, 3),
    block_time_seconds: z._default(seconds, 12),
    head_tolerance_blocks: z._default(nonNegativeInt, 2),
    pin_block_tags: z._default(z.boolean(), true),
    broadcast_to: z._default(broadcastCopies, 2),
    observed_head_max_ahead_blocks: z._default(nonNegativeInt, 3),
    max_capability_blacklists: z._default(nonNegativeInt, 64),
    learned_limit_ttl_seconds: z._default(seconds, 86_400),
    max_upstream_calls: z._default(positiveInt, 50),
    cache: z._default(z.boolean(), true),
    cache_shared_ttl_seconds: z._default(seconds, 604_800),
    cache_shared_writes_per_request: z._default(nonNegativeInt, 16),
    cache_shared_item_bytes: z._default(sharedItemBytes, 65_536),
    logs_concurrency: z._default(logsConcurrency, 4),
    max_filters_per_key: z._default(filtersPerKey, 100),
    filter_idle_seconds: z._default(filterIdleSeconds, 300),
    logs_bloom: z._default(logsBloom, "auto"),
    logs_check_headers: z._default(logsCheckHeaders, 8),
    logs_check_receipts: z._default(logsCheckReceipts, 2),
    logs_check_window_blocks: z._default(positiveInt, 128),
    cooldown_seconds: cooldown.full,
    probe: probe.full,
    quorum: quorum.full,
    events: events.full,
    hedge: hedge.full,
    history_bounds: historyBounds.full,
    subscriptions: subscriptions.full,
    methods_deny: z._default(methodPatterns, [...DEFAULT_METHODS_DENY]),
    methods_allow: z.optional(methodPatterns),
  };

  const settingsSchema = z.strictObject(tunableShape);

  /** Overrides inside a network: every tunable optional, nested objects partial. */
  const networkOverrideShape = {
    max_attempts: z.optional(positiveInt),
    request_timeout_ms: z.optional(positiveInt),
    request_deadline_ms: z.optional(positiveInt),
    max_batch: z.optional(positiveInt),
    max_body_bytes: z.optional(positiveInt),
    max_json_depth: z.optional(positiveInt),
    max_response_bytes: z.optional(positiveInt),
    diagnostic_headers: z.optional(z.boolean()),
    state_cache_ms: z.optional(nonNegativeInt),
    head_cache_ms: z.optional(nonNegativeInt),
    max_blacklist_minutes: z.optional(seconds),
    slow_response_ms: z.optional(positiveInt),
    force_rotate_errors: z.optional(positiveInt),
    block_time_seconds: z.optional(seconds),
    head_tolerance_blocks: z.optional(nonNegativeInt),
    pin_block_tags: z.optional(z.boolean()),
    broadcast_to: z.optional(broadcastCopies),
    observed_head_max_ahead_blocks: z.optional(nonNegativeInt),
    max_capability_blacklists: z.optional(nonNegativeInt),
    learned_limit_ttl_seconds: z.optional(seconds),
    max_upstream_calls: z.optional(positiveInt),
    cache: z.optional(z.boolean()),
    cache_shared_ttl_seconds: z.optional(seconds),
    cache_shared_writes_per_request: z.optional(nonNegativeInt),
    cache_shared_item_bytes: z.optional(sharedItemBytes),
    logs_concurrency: z.optional(logsConcurrency),
    max_filters_per_key: z.optional(filtersPerKey),
    filter_idle_seconds: z.optional(filterIdleSeconds),
    logs_bloom: z.optional(logsBloom),
    logs_check_headers: z.optional(logsCheckHeaders),
    logs_check_receipts: z.optional(logsCheckReceipts),
    logs_check_window_blocks: z.optional(positiveInt),
    cooldown_seconds: z.optional(cooldown.override),
    probe: z.optional(probe.override),
    quorum: z.optional(quorum.override),
    events: z.optional(events.override),
    hedge: z.optional(hedge.override),
    history_bounds: z.optional(historyBounds.override),
    subscriptions: z.optional(subscriptions.override),
    methods_deny: z.optional(methodPatterns),
    methods_allow: z.optional(methodPatterns),
  };

  const providerSchema = z.strictObject({
    url: providerUrl,
    name: z.optional(
      z
        .string()
        .check(
          z.regex(/^[A-Za-z0-9._:-]{1,64}$/, "use 1-64 letters, digits, '.', '_', ':' or '-'"),
        ),
    ),
    priority: z._default(z.int(), 1),
    tiebreak_weight: z._default(
      z.number().check(z.gt(0, "tiebreak_weight must be greater than 0")),
      1,
    ),
    priority_match: z._default(z.record(nonEmptyString, z.int()), {}),
    backup: z._default(z.boolean(), false),
    /** The largest batch this provider takes; absent: whatever it takes (learned from errors). */
    max_batch: z.optional(positiveInt),
    /**
     * The most blocks one eth_getLogs may span on this provider (to - from + 1); absent: whatever
     * it takes (learned from its range errors).
     */
    max_logs_range: z.optional(positiveInt),
    archive: z.optional(z.boolean()),
    history: z.optional(providerHistory),
    methods_deny: z.optional(methodPatterns),
    methods_allow: z.optional(methodPatterns),
  });

  const networkSchema = z
    .strictObject({
      chain_id: positiveInt,
      block_majority_divider: z._default(positiveInt, 1),
      providers: z
        .array(providerSchema)
        .check(z.minLength(1, "a network needs at least one provider")),
      consensus: z.optional(defineConsensusSchema()),
      ...networkOverrideShape,
    })
    .check(
      z.superRefine((network, ctx) => {
        for (const issue of consensusIssues(network)) ctx.addIssue({ code: "custom", ...issue });
        if (network.providers.every((provider) => provider.backup)) {
          ctx.addIssue({
            code: "custom",
            path: ["providers"],
            message: "every provider is a backup: mark at least one as a primary (backup: false)",
          });
        }
        const seen = new Map<string, number>();
        network.providers.forEach((provider, index) => {
          if (provider.name === undefined) return;
          const first = seen.get(provider.name);
          if (first !== undefined) {
            ctx.addIssue({
              code: "custom",
              path: ["providers", index, "name"],
              message: `duplicate provider name "${provider.name}" (also providers[${first}]): names must be unique in a network`,
            });
          } else {
            seen.set(provider.name, index);
          }
        });
      }),
    );

  const NETWORK_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
  const RESERVED_NETWORK_NAMES = new Set(["status", "health"]);

  const apiKeySchema = z.strictObject({
    name: nonEmptyString,
    sha256: z
      .string()
      .check(z.regex(/^[0-9a-f]{64}$/, "sha256 must be 64 lower-case hex characters")),
    /** Requests per minute this key may make, across every container; none = unlimited. */
    requests_per_minute: z.optional(positiveInt),
  });

  /** Browser origins allowed to call the API (CORS): `["*"]`, or a list of origins. */
  const corsOrigins = z.array(z.string()).check(
    z.minLength(1, 'list at least one origin, or ["*"] for any'),
    z.superRefine((origins, ctx) => {
      origins.forEach((origin, index) => {
        const problem = corsOriginProblem(origin);
        if (problem !== null) ctx.addIssue({ code: "custom", path: [index], message: problem });
      });
      if (origins.length > 1 && origins.includes(ANY_ORIGIN)) {
        ctx.addIssue({ code: "custom", message: '"*" already allows every origin: use it alone' });
      }
    }),
  );

  const configSchema = z
    .strictObject({
      cors_origins: z._default(corsOrigins, [...DEFAULT_CORS_ORIGINS]),
      check_interval_seconds: z._default(seconds, 15),
      config_refresh_seconds: z._default(seconds, 30),
      inner_errors: z._default(z.array(nonEmptyString), []),
      api_keys: z._default(z.array(apiKeySchema), []),
      /** This container's memory for cached answers, every network together (bytes). */
      cache_memory_bytes: z._default(positiveInt, 33_554_432),
      /** What one request may add to that memory, its internal calls included (bytes). */
      cache_memory_request_bytes: z._default(positiveInt, 4_194_304),
      /** Shared-tier writes one container may make in a minute, every network together. */
      cache_shared_writes_per_minute: z._default(nonNegativeInt, 6_000),
      networks: z.record(z.string(), networkSchema).check(
        z.superRefine((networks, ctx) => {
          for (const name of Object.keys(networks)) {
            if (!NETWORK_NAME.test(name) || RESERVED_NETWORK_NAMES.has(name)) {
              ctx.addIssue({
                code: "custom",
                path: [name],
                message: `network name "${name}" must be lower-case letters, digits and '-', and not "status" or "health"`,
              });
            }
          }
          if (Object.keys(networks).length === 0) {
            ctx.addIssue({ code: "custom", message: "configure at least one network" });
          }
        }),
      ),
      ...tunableShape,
    })
    .check(
      z.superRefine((config, ctx) => {
        for (const issue of boundIssues(config)) {
          ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
        }
      }),
    );

  return {
    configSchema,
    settingsSchema,
    networkSchema,
    providerSchema,
    apiKeySchema,
    cooldownSecondsSchema,
  };
}
