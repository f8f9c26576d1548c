import { Aws, Duration } from "aws-cdk-lib";
import type { IHttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  type Alarm,
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  TextWidget,
} from "aws-cdk-lib/aws-cloudwatch";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import type { Construct } from "constructs";
import {
  BLACKLIST_REASONS,
  type GatewayMetrics,
  METRICS_NAMESPACE,
  MINUTE,
  RETRY_KINDS,
} from "./metric-contract.ts";

export interface GatewayDashboardProps {
  readonly name: string;
  readonly serviceName: string;
  readonly networks: readonly string[];
  readonly api: IHttpApi;
  readonly proxy: IFunction;
  readonly monitor: IFunction;
  readonly alarms: readonly Alarm[];
  readonly metrics: GatewayMetrics;
}

/**
 * One dashboard for an environment: the alarms, the API and both Lambdas, then per network the
 * story the status page tells: traffic, errors by kind, blacklists by reason, quorum and heads,
 * served head lag and cache hit ratio, and the same by provider.
 */
export function addGatewayDashboard(
  scope: Construct,
  id: string,
  props: GatewayDashboardProps,
): Dashboard {
  const { metrics, networks, api } = props;
  const dashboard = new Dashboard(scope, id, {
    dashboardName: props.name,
    defaultInterval: Duration.hours(3),
  });
  dashboard.addWidgets(
    new TextWidget({
      markdown: `# ${props.name}\nNetworks: ${networks.join(", ")}. Metrics namespace \`${METRICS_NAMESPACE}\`, service \`${props.serviceName}\`.`,
      width: 24,
      height: 2,
    }),
  );
  dashboard.addWidgets(
    new AlarmStatusWidget({ title: "Alarms", alarms: [...props.alarms], width: 24, height: 4 }),
  );
  dashboard.addWidgets(
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
  dashboard.addWidgets(
    graph("Monitor ticks", [metrics.metric("monitor_ticks", {}, "Sum", MINUTE)]),
    graph("Monitor Lambda", [
      props.monitor.metricInvocations({ period: MINUTE }),
      props.monitor.metricErrors({ period: MINUTE }),
      props.monitor.metricThrottles({ period: MINUTE }),
    ]),
    graph("Config rejected (by reason), providers left out", [
      metrics.searchAll("config_rejected", "Sum"),
      metrics.metric("providers_left_out", {}, "Maximum", MINUTE),
    ]),
  );
  for (const network of networks) addNetworkRows(dashboard, metrics, network);
  return dashboard;
}

/**
 * The story of one network: its traffic and what went wrong (errors by kind, blacklists by
 * reason), its quorum and heads, and the same by provider.
 */
function addNetworkRows(dashboard: Dashboard, metrics: GatewayMetrics, network: string): void {
  dashboard.addWidgets(new TextWidget({ markdown: `## ${network}`, width: 24, height: 1 }));
  dashboard.addWidgets(
    graph(`${network}: requests, attempts`, [
      metrics.metric("requests", { network }, "Sum", MINUTE),
      metrics.metric("attempts", { network }, "Average", MINUTE),
    ]),
    graph(`${network}: latency (ms)`, [
      metrics.metric("latency_ms", { network }, "p50", MINUTE),
      metrics.metric("latency_ms", { network }, "p99", MINUTE),
    ]),
    graph(
      `${network}: retried errors by kind`,
      RETRY_KINDS.map((kind) => metrics.sumOf("retried_errors", network, { kind }, "Sum", kind)),
    ),
    graph(
      `${network}: blacklists by reason`,
      BLACKLIST_REASONS.map((reason) =>
        metrics.sumOf("blacklist_events", network, { reason }, "Sum", reason),
      ),
    ),
  );
  const heads = [
    graph(`${network}: quorum size, primaries, backup`, [
      metrics.metric("quorum_size", { network }, "Minimum", MINUTE),
      metrics.metric("primaries_available", { network }, "Minimum", MINUTE),
      metrics.metric("backup_in_use", { network }, "Maximum", MINUTE),
    ]),
    graph(`${network}: head lag by provider (s)`, [
      metrics.search("head_lag_seconds", network, "Maximum"),
    ]),
    graph(`${network}: served head lag (s)`, [
      metrics.metric("served_head_lag_seconds", { network }, "Maximum", MINUTE),
    ]),
    graph(`${network}: cache hit ratio (%)`, [
      new MathExpression({
        expression: "IF(hits + misses > 0, 100 * hits / (hits + misses), 0)",
        usingMetrics: {
          hits: metrics.sumOf("cache_hits", network, {}, "Sum", "hits"),
          misses: metrics.sumOf("cache_misses", network, {}, "Sum", "misses"),
        },
        label: "hit ratio %",
        period: MINUTE,
      }),
    ]),
  ];
  dashboard.addWidgets(...heads);
  dashboard.addWidgets(
    graph(`${network}: retried errors by provider and kind`, [
      metrics.search("retried_errors", network, "Sum"),
    ]),
    graph(`${network}: blacklists by provider and reason`, [
      metrics.search("blacklist_events", network, "Sum"),
    ]),
    graph(`${network}: probe results`, [metrics.search("probe_results", network, "Sum")]),
    graph(`${network}: hedged reads by provider and outcome`, [
      metrics.search("hedges", network, "Sum"),
    ]),
    graph(`${network}: monitor errors`, [
      metrics.metric("monitor_errors", { network }, "Sum", MINUTE),
    ]),
  );
}

function graph(title: string, left: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left, width: 6, height: 6 });
}

/** Console link of a dashboard, in the stack's region. */
export function dashboardUrl(dashboardName: string): string {
  return `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${dashboardName}`;
}
