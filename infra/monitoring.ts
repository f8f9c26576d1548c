import { Aws, Duration } from "aws-cdk-lib";
import type { IHttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { Construct } from "constructs";
import type { EnvironmentSettings } from "./environments.ts";

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
} as const satisfies Record<string, readonly string[]>;

export type MetricName = keyof typeof METRIC_DIMENSIONS;

/** `service` dimension value of both Lambdas: one per environment so dev and prod never mix. */
export function serviceNameOf(env: string): string {
  return `rpc-gateway-${env}`;
}

export interface MonitoringProps {
  readonly settings: EnvironmentSettings;
  readonly serviceName: string;
  readonly networks: readonly string[];
  readonly api: IHttpApi;
  readonly proxy: IFunction;
  readonly monitor: IFunction;
}

const MINUTE = Duration.minutes(1);

/** Alarm topic, alarms (docs/behaviour.md §7) and one dashboard for an environment. */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  private readonly props: MonitoringProps;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.props = props;
    const { settings, networks, api } = props;
    const limits = settings.alarms;
    const prefix = `RpcGateway-${settings.name}`;

    this.topic = new Topic(this, "AlarmTopic", {
      displayName: `${prefix} alarms`,
      enforceSSL: true,
    });
    if (limits.email !== undefined) this.topic.addSubscription(new EmailSubscription(limits.email));

    // Global: the monitor runs (a tick is the heartbeat; no data at all is the failure).
    this.alarm("MonitorNotRunning", {
      name: `${prefix}-monitor-not-running`,
      description: `No monitor tick for ${limits.monitorMissingMinutes} min: quorum and probes are stale, the proxy fails open.`,
      metric: this.metric("monitor_ticks", {}, "Sum", MINUTE),
      comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
      threshold: 1,
      periods: limits.monitorMissingMinutes,
      missing: TreatMissingData.BREACHING,
    });

    // Global: share of 5xx answers of the HTTP API (the gateway's own 502s included).
    const period = Duration.minutes(limits.serverErrorPeriodMinutes);
    const serverErrorRate = new MathExpression({
      expression: `IF(requests >= ${limits.serverErrorMinRequests}, 100 * errors / requests, 0)`,
      usingMetrics: {
        errors: api.metricServerError({ statistic: "Sum", period }),
        requests: api.metricCount({ statistic: "Sum", period }),
      },
      label: "5xx %",
      period,
    });
    this.alarm("ServerErrorRate", {
      name: `${prefix}-api-5xx-rate`,
      description: `More than ${limits.serverErrorRatePercent}% of API responses were 5xx over ${limits.serverErrorPeriodMinutes} min (with at least ${limits.serverErrorMinRequests} requests).`,
      metric: serverErrorRate,
      comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: limits.serverErrorRatePercent,
      periods: 1,
      missing: TreatMissingData.NOT_BREACHING,
    });

    this.alarm("ConfigRejected", {
      name: `${prefix}-config-rejected`,
      description:
        "A Lambda rejected the S3 config object (invalid); the previous config stays in force until it is fixed.",
      metric: this.metric("config_rejected", { reason: "invalid" }, "Sum", Duration.minutes(5)),
      comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      periods: 1,
      missing: TreatMissingData.NOT_BREACHING,
    });
    this.alarm("ConfigUnreachable", {
      name: `${prefix}-config-unreachable`,
      description: `The Lambdas could not read the S3 config object for ${limits.configUnreachableMinutes} min: config changes do not take effect.`,
      metric: this.metric("config_rejected", { reason: "unreachable" }, "Sum", MINUTE),
      comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      periods: limits.configUnreachableMinutes,
      missing: TreatMissingData.NOT_BREACHING,
    });
    this.alarm("ProvidersLeftOut", {
      name: `${prefix}-providers-left-out`,
      description:
        "A provider is left out because a secret of its URL did not resolve (missing or unreadable parameter); see the status route's providers_left_out.",
      metric: this.metric("providers_left_out", {}, "Maximum", Duration.minutes(5)),
      comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      periods: 1,
      missing: TreatMissingData.NOT_BREACHING,
    });

    // Per network (names from config/<env>.json). The monitor emits the quorum and primaries
    // gauges on every tick that reaches the network; silence means the monitor cannot judge it
    // (the network's tick fails, or the monitor stopped), so missing data breaches.
    for (const network of networks) {
      this.alarm(`NoQuorum-${network}`, {
        name: `${prefix}-no-quorum-${network}`,
        description: `${network}: no provider in quorum, or no quorum computed, for ${limits.noQuorumMinutes} min.`,
        metric: this.metric("quorum_size", { network }, "Maximum", MINUTE),
        comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold: 1,
        periods: limits.noQuorumMinutes,
        missing: TreatMissingData.BREACHING,
      });
      this.alarm(`PrimariesDown-${network}`, {
        name: `${prefix}-all-primaries-down-${network}`,
        description: `${network}: no primary provider available, or none judged, for ${limits.primariesDownMinutes} min (backups or emergency use only).`,
        metric: this.metric("primaries_available", { network }, "Maximum", MINUTE),
        comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold: 1,
        periods: limits.primariesDownMinutes,
        missing: TreatMissingData.BREACHING,
      });
      this.alarm(`MonitorErrors-${network}`, {
        name: `${prefix}-monitor-errors-${network}`,
        description: `${network}: the monitor's tick failed (state store or config) in each of ${limits.monitorErrorMinutes} min.`,
        metric: this.metric("monitor_errors", { network }, "Sum", MINUTE),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        periods: limits.monitorErrorMinutes,
        missing: TreatMissingData.NOT_BREACHING,
      });
      this.alarm(`BackupInUse-${network}`, {
        name: `${prefix}-backup-in-use-${network}`,
        description: `${network}: traffic has gone to a backup provider for more than ${limits.backupInUseMinutes} min.`,
        metric: this.metric("backup_in_use", { network }, "Minimum", MINUTE),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        periods: limits.backupInUseMinutes,
        missing: TreatMissingData.NOT_BREACHING,
      });
    }

    this.dashboard = new Dashboard(this, "Dashboard", {
      dashboardName: prefix,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${prefix}\nNetworks: ${networks.join(", ")}. Metrics namespace \`${METRICS_NAMESPACE}\`, service \`${props.serviceName}\`.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 4 }),
    );
    this.dashboard.addWidgets(
      graph("API requests and errors", [
        api.metricCount({ statistic: "Sum", period: MINUTE, label: "requests" }),
        api.metricClientError({ statistic: "Sum", period: MINUTE, label: "4xx" }),
        api.metricServerError({ statistic: "Sum", period: MINUTE, label: "5xx" }),
      ]),
      graph("API latency (ms)", [
        api.metricLatency({ statistic: "p50", period: MINUTE, label: "p50" }),
        api.metricLatency({ statistic: "p99", period: MINUTE, label: "p99" }),
        api.metricIntegrationLatency({
          statistic: "p99",
          period: MINUTE,
          label: "integration p99",
        }),
      ]),
      graph("Proxy Lambda", [
        props.proxy.metricInvocations({ period: MINUTE }),
        props.proxy.metricErrors({ period: MINUTE }),
        props.proxy.metricThrottles({ period: MINUTE }),
      ]),
      graph("Proxy duration (ms)", [
        props.proxy.metricDuration({ statistic: "p50", period: MINUTE, label: "p50" }),
        props.proxy.metricDuration({ statistic: "p99", period: MINUTE, label: "p99" }),
      ]),
    );
    this.dashboard.addWidgets(
      graph("Monitor ticks", [this.metric("monitor_ticks", {}, "Sum", MINUTE)]),
      graph("Monitor Lambda", [
        props.monitor.metricInvocations({ period: MINUTE }),
        props.monitor.metricErrors({ period: MINUTE }),
        props.monitor.metricThrottles({ period: MINUTE }),
      ]),
      graph("Config rejected (by reason), providers left out", [
        this.searchAll("config_rejected", "Sum"),
        this.metric("providers_left_out", {}, "Maximum", MINUTE),
      ]),
    );
    for (const network of networks) {
      this.dashboard.addWidgets(
        new TextWidget({ markdown: `## ${network}`, width: 24, height: 1 }),
      );
      this.dashboard.addWidgets(
        graph(`${network}: requests, attempts`, [
          this.metric("requests", { network }, "Sum", MINUTE),
          this.metric("attempts", { network }, "Average", MINUTE),
        ]),
        graph(`${network}: latency (ms)`, [
          this.metric("latency_ms", { network }, "p50", MINUTE),
          this.metric("latency_ms", { network }, "p99", MINUTE),
        ]),
        graph(`${network}: quorum, primaries, backup`, [
          this.metric("quorum_size", { network }, "Minimum", MINUTE),
          this.metric("primaries_available", { network }, "Minimum", MINUTE),
          this.metric("backup_in_use", { network }, "Maximum", MINUTE),
        ]),
        graph(`${network}: head lag by provider (s)`, [
          this.search("head_lag_seconds", network, "Maximum"),
        ]),
      );
      this.dashboard.addWidgets(
        graph(`${network}: retried errors`, [this.search("retried_errors", network, "Sum")]),
        graph(`${network}: blacklist events`, [this.search("blacklist_events", network, "Sum")]),
        graph(`${network}: probe results`, [this.search("probe_results", network, "Sum")]),
        graph(`${network}: monitor errors`, [
          this.metric("monitor_errors", { network }, "Sum", MINUTE),
        ]),
      );
    }
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
      dimensionsMap: { service: this.props.serviceName, ...dimensions },
      statistic,
      period,
      label: `${name} ${statistic}`,
    });
  }

  /** Every series of a per-provider metric of one network (graphs only; alarms need exact ones). */
  private search(name: MetricName, network: string, statistic: string): IMetric {
    return this.searchExpression(name, `network="${network}"`, statistic);
  }

  /** Every series of a metric, whatever its dimension values (graphs only). */
  private searchAll(name: MetricName, statistic: string): IMetric {
    return this.searchExpression(name, "", statistic);
  }

  private searchExpression(name: MetricName, extraFilter: string, statistic: string): IMetric {
    const schema = [METRICS_NAMESPACE, "service", ...METRIC_DIMENSIONS[name]].join(",");
    const filter = [`MetricName="${name}"`, `service="${this.props.serviceName}"`, extraFilter]
      .filter((part) => part !== "")
      .join(" ");
    return new MathExpression({
      expression: `SEARCH('{${schema}} ${filter}', '${statistic}', 60)`,
      usingMetrics: {},
      label: "",
      period: MINUTE,
    });
  }

  private alarm(
    id: string,
    spec: {
      name: string;
      description: string;
      metric: IMetric;
      comparison: ComparisonOperator;
      threshold: number;
      periods: number;
      missing: TreatMissingData;
    },
  ): Alarm {
    const alarm = new Alarm(this, id, {
      alarmName: spec.name,
      alarmDescription: spec.description,
      metric: spec.metric,
      comparisonOperator: spec.comparison,
      threshold: spec.threshold,
      evaluationPeriods: spec.periods,
      datapointsToAlarm: spec.periods,
      treatMissingData: spec.missing,
    });
    const action = new SnsAction(this.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
    return alarm;
  }
}

function graph(title: string, left: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left, width: 6, height: 6 });
}

/** Console link of a dashboard, in the stack's region. */
export function dashboardUrl(dashboardName: string): string {
  return `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${dashboardName}`;
}
