/**
 * What `npm run mutation` mutates: the modules that carry the guarantees of docs/behaviour.md, in groups,
 * each with the unit tests that protect it (a mutant runs only the tests that cover it, and
 * no e2e test, so a group runs in minutes on two shared cores). Results: test/mutation/RESULTS.md.
 */
export interface MutationGroup {
  readonly name: string;
  /** What it protects, for the summary. */
  readonly promise: string;
  readonly mutate: readonly string[];
  readonly tests: readonly string[];
}

export const GROUPS: readonly MutationGroup[] = [
  {
    name: "health",
    promise: "one strike per incident, cooldowns, probe-gated recovery, failing often",
    mutate: [
      "functions/core/health/health.ts",
      "functions/core/health/failing-often.ts",
      "functions/core/request/attempts/health-recorder.ts",
    ],
    tests: [
      "test/unit/health/health.test.ts",
      "test/unit/health/health-recording.test.ts",
      "test/unit/health/capability-blacklists.test.ts",
      "test/unit/health/force-rotate.test.ts",
      "test/unit/chain/quorum.test.ts",
      "test/unit/classify/retry-after.test.ts",
      "test/unit/request/request-pipeline.test.ts",
      "test/unit/routing/routing.test.ts",
      "test/unit/request/hedge/hedged-reads.test.ts",
      "test/unit/request/attempts/callers-words.test.ts",
      "test/unit/request/head/blocks-not-reached.test.ts",
      "test/unit/request/filters/provider-filters.test.ts",
      "test/unit/request/attempts/call-ids.test.ts",
      "test/unit/request/logs/log-query-errors.test.ts",
    ],
  },
  {
    name: "selection",
    promise: "primaries before backups, priority, weighted draw, emergency use, log ranges",
    mutate: ["functions/core/routing/selection.ts"],
    tests: [
      "test/unit/routing/selection.test.ts",
      "test/unit/routing/routing.test.ts",
      "test/unit/request/request-pipeline.test.ts",
      "test/unit/request/head/reachable-blocks.test.ts",
    ],
  },
  {
    name: "classification",
    promise: "every upstream answer judged: the caller's error, the provider's fault, retry",
    mutate: [
      "functions/core/classify/classify.ts",
      "functions/core/jsonrpc/envelope.ts",
      "functions/core/classify/classify-error.ts",
      "functions/core/classify/classify-patterns.ts",
      "functions/core/classify/classify-result.ts",
      "functions/core/classify/verdict.ts",
      "functions/core/classify/retry-after.ts",
    ],
    tests: [
      "test/unit/classify/classify.test.ts",
      "test/unit/classify/classify-phrases.test.ts",
      "test/unit/classify/classify-proxy-errors.test.ts",
      "test/unit/classify/classify-results.test.ts",
      "test/unit/classify/classify-http.test.ts",
      "test/unit/classify/retry-after.test.ts",
      "test/unit/request/attempts/callers-words.test.ts",
      "test/unit/request/head/blocks-not-reached.test.ts",
      "test/unit/request/filters/provider-filters.test.ts",
      "test/unit/request/attempts/call-ids.test.ts",
      "test/unit/request/logs/log-query-errors.test.ts",
      "test/unit/request/request-pipeline.test.ts",
    ],
  },
  {
    name: "redaction",
    promise: "no secret in a log line, a metric, the status route or an error",
    mutate: ["functions/core/config/redact.ts", "functions/adapters/telemetry.ts"],
    tests: [
      "test/unit/config/redaction.test.ts",
      "test/unit/config/config-model.test.ts",
      "test/unit/config/answer-masking.test.ts",
      "test/unit/adapters/telemetry.test.ts",
      "test/unit/status/events.test.ts",
      "test/unit/adapters/store/event-recording.test.ts",
      "test/unit/request/request-pipeline.test.ts",
    ],
  },
  {
    name: "send-ledger",
    promise: "a transaction sent once per provider, its outcome kept, never sent twice",
    mutate: [
      "functions/core/request/send/transactions.ts",
      "functions/core/request/send/sent-transactions.ts",
      "functions/core/request/send/broadcast.ts",
    ],
    tests: [
      "test/unit/request/send/transactions.test.ts",
      "test/unit/request/send/sent-transactions.test.ts",
      "test/unit/request/request-pipeline.test.ts",
      "test/unit/request/cache/answer-cache-pipeline.test.ts",
    ],
  },
  {
    name: "logs-range",
    promise: "eth_getLogs over any range: cut to each provider's range, merged in order",
    mutate: [
      "functions/core/request/logs/logs-range.ts",
      "functions/core/request/logs/logs-merge.ts",
    ],
    tests: [
      "test/unit/request/logs/logs-range.test.ts",
      "test/unit/request/logs/logs-cutting.test.ts",
      "test/unit/request/logs/logs-lying-providers.test.ts",
      "test/unit/request/logs/logs-pipeline.test.ts",
    ],
  },
  {
    name: "served-head",
    promise: "chain position forward-only, the served head never back, tags pinned",
    mutate: [
      "functions/core/chain/chain-head.ts",
      "functions/core/request/head/served-head.ts",
      "functions/core/request/head/observed-head.ts",
      "functions/core/request/head/pin-tags.ts",
    ],
    tests: [
      "test/unit/chain/chain-head.test.ts",
      "test/unit/request/head/block-number-answers.test.ts",
      "test/unit/request/head/blocks-not-reached.test.ts",
      "test/unit/request/head/lone-block-number.test.ts",
      "test/unit/request/head/observed-head.test.ts",
      "test/unit/request/head/pin-tags.test.ts",
      "test/unit/request/head/providers-behind.test.ts",
      "test/unit/request/head/reachable-blocks.test.ts",
      "test/unit/request/head/served-head-freshness.test.ts",
      "test/unit/request/head/unpinned-retry.test.ts",
      "test/unit/request/request-pipeline.test.ts",
      "test/unit/request/cache/answer-cache-pipeline.test.ts",
      "test/unit/request/logs/logs-tags.test.ts",
      "test/unit/request/logs/logs-pipeline.test.ts",
      "test/unit/request/logs/logs-missing-data.test.ts",
      "test/unit/request/filters/filter-progress.test.ts",
      "test/unit/request/filters/filter-reorgs.test.ts",
      "test/unit/request/filters/filters-pipeline.test.ts",
      "test/unit/routing/state-cache.test.ts",
      "test/unit/status/status.test.ts",
    ],
  },
  {
    name: "answer-cache",
    promise: "what may be kept and for how long: `latest` never immutable, reorgs forgotten",
    mutate: [
      "functions/core/request/cache/cache-class.ts",
      "functions/core/request/cache/answer-cache.ts",
      "functions/core/request/cache/answer-memory.ts",
    ],
    tests: [
      "test/unit/request/cache/cache-class.test.ts",
      "test/unit/request/cache/answer-cache-pipeline.test.ts",
      "test/unit/request/cache/answer-cache-bounds.test.ts",
      "test/unit/request/cache/callers-answer.test.ts",
      "test/unit/config/answer-masking.test.ts",
      "test/unit/request/head/served-head-freshness.test.ts",
      "test/unit/request/logs/logs-pipeline.test.ts",
      "test/unit/request/request-pipeline.test.ts",
      "test/unit/status/status.test.ts",
    ],
  },
];
