import { Duration } from "aws-cdk-lib";
import { type IMetric, MathExpression, Metric } from "aws-cdk-lib/aws-cloudwatch";
import type { CooldownReason, RetryKind } from "../functions/core/classify/verdict.ts";

/**
 * The metric contract between the Lambdas (Powertools EMF) and the alarms and dashboard.
 * Powertools adds the `service` dimension (= POWERTOOLS_SERVICE_NAME) to every metric, so
 * each metric's full dimension set is `service` plus the ones listed here. An alarm only sees
 * a metric whose dimension set is exactly the one it names.
 */
export const METRICS_NAMESPACE = "RpcGateway";

export const METRIC_DIMENSIONS = {
  requests: ["network"],
  latency_ms: ["network"],
  attempts: ["network"],
  retried_errors: ["network", "provider", "kind"],
  blacklist_events: ["network", "provider", "reason"],
  backup_in_use: ["network"],
  quorum_size: ["network"],
  primaries_available: ["network"],
  head_lag_seconds: ["network", "provider"],
  probe_results: ["network", "provider", "result"],
  /** `reason`: `invalid` (an object that does not validate) or `unreachable` (S3 errors). */
  config_rejected: ["reason"],
  monitor_ticks: [],
  monitor_errors: ["network"],
  providers_left_out: [],
  /** The served head's age by its block's timestamp (the monitor's head check). */
  served_head_lag_seconds: ["network"],
  /** Answers from the cache and past it, per method class. */
  cache_hits: ["network", "class"],
  cache_misses: ["network", "class"],
  /**
   * Hedged reads, by the provider whose first attempt was slow; `outcome`: `started`, `won`
   * (the second attempt answered first) or `aborted` (the attempt that lost was cut off).
   */
  hedges: ["network", "provider", "outcome"],
  /**
   * Something a guard refused (docs/behaviour.md §8.9); `guard` is the config key that bounds
   * it (`methods_deny`, `requests_per_minute`, `cache_shared_writes_per_request`, …), `network`
   * `*` for a key refused on `GET /status`.
   */
  guard_refusals: ["network", "guard"],
  /**
   * Read consensus (docs/behaviour.md §17): each consensus call by `outcome` (`agreed`,
   * `unconfirmed`, `disputed`, `short`, `no_votes`), and each provider found in the minority.
   */
  consensus_calls: ["network", "outcome"],
  consensus_minority: ["network", "provider"],
  /**
   * A WebSocket connect the socket refused (docs/behaviour.md "Subscriptions over WebSocket");
   * `reason`: `unauthorized`, `origin`, `requests_per_minute`, `over_key`, `unknown_network`
   * (`network` `*`) or `unavailable` (the registry failed: the gateway's fault).
   */
  socket_connections_refused: ["network", "reason"],
  /** An `eth_subscribe` a bound refused; `reason`: `over_connection`, `over_key`, `over_network`, `no_connection`. */
  subscription_refusals: ["network", "reason"],
  /**
   * A notification the head follower pushed; `kind`: `newHeads` or `logs`; `outcome`: `ok`,
   * `too_large` (an error notification stood for one over 128 KB), `error` (an error
   * notification), `gone` (the connection had left) or `failed` (the push failed: the
   * connection is dropped).
   */
  subscription_notifications: ["network", "kind", "outcome"],
  /**
   * Notifications that did not reach their subscriber through the gateway's fault or a
   * consumer's: failed pushes, logs no provider served within the bound, deliveries a stopped
   * run left half-done, subscriptions too far behind to catch up.
   */
  subscription_delivery_failures: ["network"],
  /** Blocks between the served head and the last block the follower delivered (each step). */
  follower_lag_blocks: ["network"],
  /** A follower step that threw (DynamoDB or the config out of reach); the next step tries again. */
  follower_errors: ["network"],
  /** Reorgs the follower sent as removed logs and a new branch. */
  follower_reorgs: ["network"],
} as const satisfies Record<string, readonly string[]>;

export type MetricName = keyof typeof METRIC_DIMENSIONS;

/** Every `kind` of `retried_errors`, one series each on the dashboard. */
export const RETRY_KINDS = [
  "rate_limit",
  "transient",
  "no_result",
  "internal",
  "timeout",
  "http",
  "connection",
  "capability",
] as const satisfies readonly RetryKind[];

/** Every `reason` of `blacklist_events`, one series each on the dashboard. */
export const BLACKLIST_REASONS = [
  "rate_limit",
  "quota",
  "timeout",
  "connection",
  "tls",
  "batch_limit",
  "transient",
  "slow",
  "force_rotate",
  "forbidden",
  "redirect",
  "chain_unavailable",
  "wrong_chain",
  "capability",
  "inconsistent",
] as const satisfies readonly CooldownReason[];

// A kind or reason added to the code but not above fails to compile here.
const allListed: [
  Exclude<RetryKind, (typeof RETRY_KINDS)[number]>,
  Exclude<CooldownReason, (typeof BLACKLIST_REASONS)[number]>,
] extends [never, never]
  ? true
  : false = true;
void allListed;

/** `service` dimension value of both Lambdas: one per environment so dev and prod never mix. */
export function serviceNameOf(env: string): string {
  return `rpc-gateway-${env}`;
}

export const MINUTE = Duration.minutes(1);

/**
 * The gateway's metrics as alarms and graphs name them: each with exactly its contract's
 * dimension set plus `service`, so what is watched is what the code emits.
 */
export class GatewayMetrics {
  readonly #serviceName: string;

  constructor(serviceName: string) {
    this.#serviceName = serviceName;
  }

  /** A gateway metric with its exact dimension set (plus `service`). */
  metric(
    name: MetricName,
    dimensions: Readonly<Record<string, string>>,
    statistic: string,
    period: Duration,
  ): Metric {
    const expected = [...METRIC_DIMENSIONS[name]].sort().join(",");
    const given = Object.keys(dimensions).sort().join(",");
    if (expected !== given) {
      throw new Error(`metric ${name} has dimensions [${expected}], not [${given}]`);
    }
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: this.#serviceName, ...dimensions },
      statistic,
      period,
      label: `${name} ${statistic}`,
    });
  }

  /** Every series of a per-provider metric of one network (graphs only; alarms need exact ones). */
  search(name: MetricName, network: string, statistic: string): IMetric {
    return expression(this.#search(name, `network="${network}"`, statistic), "");
  }

  /** Every series of a metric, whatever its dimension values (graphs only). */
  searchAll(name: MetricName, statistic: string): IMetric {
    return expression(this.#search(name, "", statistic), "");
  }

  /**
   * One series: the sum of every series of a metric of one network whose other dimensions
   * have the given values (e.g. every provider's `retried_errors` of one kind).
   */
  sumOf(
    name: MetricName,
    network: string,
    values: Readonly<Record<string, string>>,
    statistic: string,
    label: string,
  ): IMetric {
    const filter = [
      `network="${network}"`,
      ...Object.entries(values).map(([k, v]) => `${k}="${v}"`),
    ];
    return expression(`SUM(${this.#search(name, filter.join(" "), statistic)})`, label);
  }

  #search(name: MetricName, extraFilter: string, statistic: string): string {
    const schema = [METRICS_NAMESPACE, "service", ...METRIC_DIMENSIONS[name]].join(",");
    const filter = [`MetricName="${name}"`, `service="${this.#serviceName}"`, extraFilter]
      .filter((part) => part !== "")
      .join(" ");
    return `SEARCH('{${schema}} ${filter}', '${statistic}', 60)`;
  }
}

function expression(text: string, label: string): IMetric {
  return new MathExpression({ expression: text, usingMetrics: {}, label, period: MINUTE });
}
