import { Duration } from "aws-cdk-lib";
import type { IHttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  Alarm,
  ComparisonOperator,
  type Dashboard,
  type IMetric,
  MathExpression,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { Construct } from "constructs";
import { addGatewayDashboard } from "./dashboard.ts";
import type { EnvironmentSettings } from "./environments.ts";
import { GatewayMetrics, MINUTE } from "./metric-contract.ts";

export { dashboardUrl } from "./dashboard.ts";
export {
  METRIC_DIMENSIONS,
  METRICS_NAMESPACE,
  type MetricName,
  serviceNameOf,
} from "./metric-contract.ts";

export interface MonitoringProps {
  readonly settings: EnvironmentSettings;
  readonly serviceName: string;
  readonly networks: readonly string[];
  readonly api: IHttpApi;
  readonly proxy: IFunction;
  readonly monitor: IFunction;
}

/**
 * The follower alarms' bounds: a lag a whole step's catching up does not explain (it delivers up
 * to 32 blocks a step), for long enough to rule out a run's hand-over; and failures above the
 * background of clients whose sockets die without a `$disconnect`.
 */
const FOLLOWER_LAG_BLOCKS = 10;
const FOLLOWER_LAG_MINUTES = 3;
const DELIVERY_FAILURES = 10;

/** Alarm topic, alarms (docs/behaviour.md §7) and one dashboard for an environment. */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  readonly metrics: GatewayMetrics;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.metrics = new GatewayMetrics(props.serviceName);
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
      metric: this.metrics.metric("monitor_ticks", {}, "Sum", MINUTE),
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
      metric: this.metrics.metric(
        "config_rejected",
        { reason: "invalid" },
        "Sum",
        Duration.minutes(5),
      ),
      comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      periods: 1,
      missing: TreatMissingData.NOT_BREACHING,
    });
    this.alarm("ConfigUnreachable", {
      name: `${prefix}-config-unreachable`,
      description: `The Lambdas could not read the S3 config object for ${limits.configUnreachableMinutes} min: config changes do not take effect.`,
      metric: this.metrics.metric("config_rejected", { reason: "unreachable" }, "Sum", MINUTE),
      comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      periods: limits.configUnreachableMinutes,
      missing: TreatMissingData.NOT_BREACHING,
    });
    this.alarm("ProvidersLeftOut", {
      name: `${prefix}-providers-left-out`,
      description:
        "A provider is left out because a secret of its URL did not resolve (missing or unreadable parameter); see the status route's providers_left_out.",
      metric: this.metrics.metric("providers_left_out", {}, "Maximum", Duration.minutes(5)),
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
        metric: this.metrics.metric("quorum_size", { network }, "Maximum", MINUTE),
        comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold: 1,
        periods: limits.noQuorumMinutes,
        missing: TreatMissingData.BREACHING,
      });
      this.alarm(`PrimariesDown-${network}`, {
        name: `${prefix}-all-primaries-down-${network}`,
        description: `${network}: no primary provider available, or none judged, for ${limits.primariesDownMinutes} min (backups or emergency use only).`,
        metric: this.metrics.metric("primaries_available", { network }, "Maximum", MINUTE),
        comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold: 1,
        periods: limits.primariesDownMinutes,
        missing: TreatMissingData.BREACHING,
      });
      this.alarm(`MonitorErrors-${network}`, {
        name: `${prefix}-monitor-errors-${network}`,
        description: `${network}: the monitor's tick failed (state store or config) in each of ${limits.monitorErrorMinutes} min.`,
        metric: this.metrics.metric("monitor_errors", { network }, "Sum", MINUTE),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        periods: limits.monitorErrorMinutes,
        missing: TreatMissingData.NOT_BREACHING,
      });
      this.alarm(`BackupInUse-${network}`, {
        name: `${prefix}-backup-in-use-${network}`,
        description: `${network}: traffic has gone to a backup provider for more than ${limits.backupInUseMinutes} min.`,
        metric: this.metrics.metric("backup_in_use", { network }, "Minimum", MINUTE),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        periods: limits.backupInUseMinutes,
        missing: TreatMissingData.NOT_BREACHING,
      });
    }

    // Per network, the WebSocket side (docs/behaviour.md "Subscriptions over WebSocket"): the
    // registry, and the head follower's delivery failures and lag. A network without
    // subscriptions emits no follower metric: missing data is fine.
    for (const network of networks) {
      this.alarm(`FollowerLag-${network}`, {
        name: `${prefix}-follower-lag-${network}`,
        description: `${network}: the head follower was ${FOLLOWER_LAG_BLOCKS} or more blocks behind the served head in each of ${FOLLOWER_LAG_MINUTES} min: subscribers get their blocks late (DynamoDB, the pushes or the follower's runs are failing).`,
        metric: this.metrics.metric("follower_lag_blocks", { network }, "Minimum", MINUTE),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: FOLLOWER_LAG_BLOCKS,
        periods: FOLLOWER_LAG_MINUTES,
        missing: TreatMissingData.NOT_BREACHING,
      });
      this.alarm(`DeliveryFailures-${network}`, {
        name: `${prefix}-subscription-delivery-failures-${network}`,
        description: `${network}: ${DELIVERY_FAILURES} or more notifications did not reach their subscribers in 5 min (failed pushes, logs no provider served within the bound, interrupted runs); those subscribers got an error notification and a closed socket.`,
        metric: this.metrics.metric(
          "subscription_delivery_failures",
          { network },
          "Sum",
          Duration.minutes(5),
        ),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: DELIVERY_FAILURES,
        periods: 1,
        missing: TreatMissingData.NOT_BREACHING,
      });
      this.alarm(`SocketRegistryDown-${network}`, {
        name: `${prefix}-socket-connects-refused-${network}`,
        description: `${network}: WebSocket connections were refused because the connection registry (DynamoDB) failed, in the last 5 min.`,
        metric: this.metrics.metric(
          "socket_connections_refused",
          { network, reason: "unavailable" },
          "Sum",
          Duration.minutes(5),
        ),
        comparison: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        periods: 1,
        missing: TreatMissingData.NOT_BREACHING,
      });
    }

    this.dashboard = addGatewayDashboard(this, "Dashboard", {
      name: prefix,
      serviceName: props.serviceName,
      networks,
      api,
      proxy: props.proxy,
      monitor: props.monitor,
      alarms: this.alarms,
      metrics: this.metrics,
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
