/**
 * What `npm run mutation` mutates: the modules that carry the README's guarantees, in groups,
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

const core = (path: string) => `functions/core/${path}.ts`;
const unit = (name: string) => `test/unit/${name}.test.ts`;

export const GROUPS: readonly MutationGroup[] = [
  {
    name: "health",
    promise: "one strike per incident, cooldowns, probe-gated recovery, failing often",
    mutate: [core("health"), core("failing-often"), core("request/health-recorder")],
    tests: [
      unit("health"),
      unit("health-recording"),
      unit("capability-blacklists"),
      unit("force-rotate"),
      unit("quorum"),
      unit("retry-after"),
      unit("request-pipeline"),
      unit("routing"),
      unit("hedged-reads"),
      unit("attacks-14"),
    ],
  },
  {
    name: "selection",
    promise: "primaries before backups, priority, weighted draw, emergency use, log ranges",
    mutate: [core("selection")],
    tests: [
      unit("selection"),
      unit("routing"),
      unit("request-pipeline"),
      unit("reachable-attacks"),
    ],
  },
  {
    name: "classification",
    promise: "every upstream answer judged: the caller's error, the provider's fault, retry",
    mutate: [
      core("classify"),
      core("classify-envelope"),
      core("classify-error"),
      core("classify-patterns"),
      core("classify-result"),
      core("verdict"),
      core("retry-after"),
    ],
    tests: [
      unit("classify"),
      unit("classify-phrases"),
      unit("classify-proxy-errors"),
      unit("classify-results"),
      unit("classify-http"),
      unit("retry-after"),
      unit("attacks-13a"),
      unit("attacks-14"),
      unit("request-pipeline"),
    ],
  },
  {
    name: "redaction",
    promise: "no secret in a log line, a metric, the status route or an error",
    mutate: [core("redact"), "functions/adapters/telemetry.ts"],
    tests: [
      unit("redaction"),
      unit("config-model"),
      unit("answer-masking"),
      unit("telemetry"),
      unit("events"),
      unit("event-recording"),
      unit("request-pipeline"),
    ],
  },
  {
    name: "send-ledger",
    promise: "a transaction sent once per provider, its outcome kept, never sent twice",
    mutate: [core("transactions"), core("request/sent-transactions"), core("request/broadcast")],
    tests: [
      unit("transactions"),
      unit("sent-transactions"),
      unit("request-pipeline"),
      unit("answer-cache-pipeline"),
    ],
  },
  {
    name: "logs-range",
    promise: "eth_getLogs over any range: cut to each provider's range, merged in order",
    mutate: [core("request/logs-range"), core("request/logs-merge")],
    tests: [
      unit("logs-range"),
      unit("logs-cutting"),
      unit("logs-lying-providers"),
      unit("logs-pipeline"),
    ],
  },
  {
    name: "served-head",
    promise: "chain position forward-only, the served head never back, tags pinned",
    mutate: [
      core("chain-head"),
      core("request/served-head"),
      core("request/observed-head"),
      core("request/pin-tags"),
    ],
    tests: [
      unit("chain-head"),
      unit("observed-head"),
      unit("pin-tags"),
      unit("lone-block-number-attacks"),
      unit("reachable-attacks"),
      unit("request-pipeline"),
    ],
  },
  {
    name: "answer-cache",
    promise: "what may be kept and for how long: `latest` never immutable, reorgs forgotten",
    mutate: [
      core("request/cache-class"),
      core("request/answer-cache"),
      core("request/answer-memory"),
    ],
    tests: [unit("cache-class"), unit("answer-cache-pipeline"), unit("answer-masking")],
  },
];
