import { ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import { AttributeType, BillingMode, Table } from "aws-cdk-lib/aws-dynamodb";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import {
  ParamsAndSecretsLayerVersion,
  ParamsAndSecretsLogLevel,
  ParamsAndSecretsVersions,
} from "aws-cdk-lib/aws-lambda";
import { LogGroup } from "aws-cdk-lib/aws-logs";
import { BlockPublicAccess, Bucket, BucketEncryption } from "aws-cdk-lib/aws-s3";
import { BucketDeployment, Source } from "aws-cdk-lib/aws-s3-deployment";
import { Schedule, ScheduleExpression } from "aws-cdk-lib/aws-scheduler";
import { LambdaInvoke } from "aws-cdk-lib/aws-scheduler-targets";
import type { Construct } from "constructs";
import { EXTENSION_CONNECTIONS } from "../functions/adapters/config/secrets-extension.ts";
import { PROXY_FUNCTION_TIMEOUT_SECONDS } from "../functions/core/http/http-api.ts";
import { SOCKET_FUNCTION_TIMEOUT_SECONDS } from "../functions/core/subscriptions/websocket-quotas.ts";
import { GatewayFunction } from "./constructs/node-function.ts";
import { type EnvironmentSettings, secretsPrefixOf } from "./environments.ts";
import {
  FOLLOWER_CONCURRENCY,
  FOLLOWER_TABLE_ACCESS,
  FOLLOWER_TIMEOUT,
  scheduleFollower,
} from "./follower.ts";
import type { GatewayConfigFile } from "./gateway-config.ts";
import { addGatewayHttpApi } from "./http-api.ts";
import { dashboardUrl, METRICS_NAMESPACE, Monitoring, serviceNameOf } from "./monitoring.ts";
import { acknowledge, acknowledgeCdkManaged, acknowledgeWildcardResources } from "./nag.ts";
import { addGatewayWebSocketApi, type GatewayWebSocketApi } from "./websocket-api.ts";

export interface GatewayStackProps extends StackProps {
  readonly settings: EnvironmentSettings;
  readonly config: GatewayConfigFile;
  /** Repository root (handler entries and config files are relative to it). */
  readonly projectRoot: string;
}

/**
 * What each function does to the state table (the adapters' commands), and on which
 * partitions: the proxy reads a network's state, stats and events, updates health,
 * capability, stats, event and API-key usage items, and never puts; the monitor also puts the
 * quorum, its memory and its lease.
 */
export const PROXY_TABLE_ACCESS = {
  actions: ["BatchGetItem", "GetItem", "Query", "UpdateItem"],
  partitions: ["NET#*", "STATS#*", "EVENTS#*", "USAGE#*", "TX#*", "CACHE#*"],
} as const;
/**
 * The filters the gateway serves (functions/adapters/store/filter-store.ts): the proxy reads, lists
 * and updates its own filter items, and nothing else, under a statement of their own; the
 * monitor never touches them.
 */
export const PROXY_FILTER_ACCESS = {
  actions: ["GetItem", "Query", "UpdateItem"],
  partitions: ["FILTER#*"],
} as const;
/**
 * WebSocket connections and subscriptions (functions/adapters/subscriptions/subscription-store.ts): the
 * socket function registers them, the head follower reads and moves them; no one else.
 */
export const SUBSCRIPTION_TABLE_ACCESS = {
  actions: ["DeleteItem", "GetItem", "Query", "UpdateItem"],
  partitions: ["WSCONN#*", "WSSUB#*"],
} as const;
export const MONITOR_TABLE_ACCESS = {
  actions: ["GetItem", "Query", "PutItem", "UpdateItem"],
  partitions: ["NET#*", "STATS#*", "EVENTS#*", "MONITOR#*", "LEASE#monitor"],
} as const;

/** Under API Gateway's 30 s integration timeout, so a timed-out call is Lambda's 500. */
const PROXY_TIMEOUT = Duration.seconds(PROXY_FUNCTION_TIMEOUT_SECONDS);
/** Under the WebSocket API's 29 s integration timeout, so a timed-out call is the function's. */
const SOCKET_TIMEOUT = Duration.seconds(SOCKET_FUNCTION_TIMEOUT_SECONDS);
/** The monitor loops for about one schedule interval (60 s) and needs a margin to finish. */
const MONITOR_TIMEOUT = Duration.seconds(90);

/**
 * The Parameters and Secrets Lambda Extension, through which both functions read their
 * secrets (functions/adapters/config/secrets-extension.ts) with their own role. Its calls to AWS get a
 * time limit under the function's 3 s per read, so a slow SSM or Secrets Manager comes back as
 * the extension's error rather than as silence; as many connections to AWS as the function
 * opens to it. Its cache (at most 5 minutes) matters little: the gateway keeps every value it
 * has read for the container's life and asks again only for names that failed.
 */
const PARAMS_AND_SECRETS = ParamsAndSecretsLayerVersion.fromVersion(
  ParamsAndSecretsVersions.V1_0_103,
  {
    maxConnections: EXTENSION_CONNECTIONS,
    parameterStoreTimeout: Duration.millis(2_500),
    secretsManagerTimeout: Duration.millis(2_500),
    logLevel: ParamsAndSecretsLogLevel.WARN,
  },
);

/** One environment of the gateway: API, proxy, monitor, state table, config bucket, alarms. */
export class GatewayStack extends Stack {
  readonly table: Table;
  readonly bucket: Bucket;
  readonly proxy: GatewayFunction;
  readonly monitor: GatewayFunction;
  readonly api: HttpApi;
  readonly socket: GatewayFunction;
  readonly follower: GatewayFunction;
  readonly webSocket: GatewayWebSocketApi;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: GatewayStackProps) {
    super(scope, id, props);
    const { settings, config, projectRoot } = props;
    const env = settings.name;
    const secretsPrefix = secretsPrefixOf(env);
    const serviceName = serviceNameOf(env);

    // State: provider health, quorum, leases (docs/architecture.md, "State in DynamoDB").
    const table = new Table(this, "StateTable", {
      partitionKey: { name: "pk", type: AttributeType.STRING },
      sortKey: { name: "sk", type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: "ttl",
      deletionProtection: settings.deletionProtection,
      removalPolicy: settings.removalPolicy,
    });

    // Config-as-code: config/<env>.json, uploaded unchanged; versions are the rollback history.
    const destroy = settings.removalPolicy === RemovalPolicy.DESTROY;
    const bucket = new Bucket(this, "ConfigBucket", {
      versioned: true,
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      removalPolicy: settings.removalPolicy,
      autoDeleteObjects: destroy,
    });
    acknowledge(
      bucket,
      "S1",
      "Holds one small config object written only by CloudFormation deploys (audited by CloudTrail) and read by the gateway's own roles; every version is kept, so server access logs would add a bucket and cost without telling anything new.",
    );
    const configDeployment = new BucketDeployment(this, "ConfigDeployment", {
      destinationBucket: bucket,
      sources: [Source.data(config.key, config.text)],
      prune: false,
      extract: true,
      retainOnDelete: !destroy,
      logGroup: new LogGroup(this, "ConfigDeploymentLogs", {
        retention: settings.logRetention,
        removalPolicy: settings.removalPolicy,
      }),
    });

    const environment = {
      TABLE_NAME: table.tableName,
      CONFIG_BUCKET: bucket.bucketName,
      // The bucket's regional endpoint, right in every partition (the functions read the object
      // with a signed GET of their own, which has no endpoint rules of the S3 client).
      CONFIG_BUCKET_DOMAIN: bucket.bucketRegionalDomainName,
      CONFIG_KEY: config.key,
      GATEWAY_ENV: env,
      SECRETS_SOURCE: settings.secretsSource,
      SECRETS_PREFIX: secretsPrefix,
      POWERTOOLS_SERVICE_NAME: serviceName,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: settings.logLevel,
    };
    const common = {
      projectRoot,
      paramsAndSecrets: PARAMS_AND_SECRETS,
      configFile: config.key,
      environment,
      logLevel: settings.logLevel,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    };

    const proxy = new GatewayFunction(this, "Proxy", {
      ...common,
      description: `RPC gateway ${env}: JSON-RPC proxy behind the HTTP API`,
      entry: "functions/proxy/handler.ts",
      memoryMb: settings.proxy.memoryMb,
      timeout: PROXY_TIMEOUT,
      reservedConcurrency: settings.proxy.reservedConcurrency,
    });
    const monitor = new GatewayFunction(this, "Monitor", {
      ...common,
      description: `RPC gateway ${env}: quorum checks and recovery probes, one loop per minute`,
      entry: "functions/monitor/handler.ts",
      memoryMb: settings.monitor.memoryMb,
      timeout: MONITOR_TIMEOUT,
      reservedConcurrency: 1,
    });
    const socket = new GatewayFunction(this, "Socket", {
      ...common,
      description: `RPC gateway ${env}: JSON-RPC and subscriptions behind the WebSocket API`,
      entry: "functions/socket/handler.ts",
      memoryMb: settings.socket.memoryMb,
      timeout: SOCKET_TIMEOUT,
      reservedConcurrency: settings.socket.reservedConcurrency,
    });
    const follower = new GatewayFunction(this, "Follower", {
      ...common,
      description: `RPC gateway ${env}: the head follower, subscriptions' notifications, a run each minute`,
      entry: "functions/follower/handler.ts",
      memoryMb: settings.follower.memoryMb,
      timeout: FOLLOWER_TIMEOUT,
      reservedConcurrency: FOLLOWER_CONCURRENCY,
    });
    // A throttled start (the previous loop still finishing) is dropped, not queued for hours:
    // the next schedule comes within a minute.
    monitor.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });

    // Least privilege: each function gets the DynamoDB actions it uses, on the partitions it
    // uses (dynamodb:LeadingKeys), the env's config object, and its secrets from the one
    // service they live in, with the one action the extension calls for them (GetParameter,
    // one name at a time; GetSecretValue). SecureStrings under the AWS managed key aws/ssm
    // need no kms grant (its key policy allows use through SSM by principals of the account).
    const secretArn =
      settings.secretsSource === "ssm"
        ? this.formatArn({
            service: "ssm",
            resource: "parameter",
            resourceName: `${secretsPrefix.slice(1)}*`,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          })
        : this.formatArn({
            service: "secretsmanager",
            resource: "secret",
            resourceName: `${secretsPrefix}*`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          });
    const grants = [
      { fn: proxy, tables: { StateTable: PROXY_TABLE_ACCESS, Filters: PROXY_FILTER_ACCESS } },
      {
        fn: socket,
        tables: {
          StateTable: PROXY_TABLE_ACCESS,
          Filters: PROXY_FILTER_ACCESS,
          Subscriptions: SUBSCRIPTION_TABLE_ACCESS,
        },
      },
      { fn: monitor, tables: { StateTable: MONITOR_TABLE_ACCESS } },
      // The head follower reads through the pipeline (the proxy's items), reads and moves the
      // subscriptions, and keeps its own cursor.
      {
        fn: follower,
        tables: {
          StateTable: PROXY_TABLE_ACCESS,
          Subscriptions: SUBSCRIPTION_TABLE_ACCESS,
          Follower: FOLLOWER_TABLE_ACCESS,
        },
      },
    ];
    for (const { fn, tables } of grants) {
      for (const [sid, access] of Object.entries(tables)) {
        fn.role.addToPolicy(
          new PolicyStatement({
            sid,
            actions: access.actions.map((action: string) => `dynamodb:${action}`),
            resources: [table.tableArn],
            conditions: {
              "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [...access.partitions] },
            },
          }),
        );
      }
      fn.role.addToPolicy(
        new PolicyStatement({
          sid: "ConfigObject",
          actions: ["s3:GetObject"],
          resources: [bucket.arnForObjects(config.key)],
        }),
      );
      fn.role.addToPolicy(
        settings.secretsSource === "ssm"
          ? new PolicyStatement({
              sid: "SecretsParameters",
              actions: ["ssm:GetParameter"],
              resources: [secretArn],
            })
          : new PolicyStatement({
              sid: "SecretsManagerSecrets",
              actions: ["secretsmanager:GetSecretValue"],
              resources: [secretArn],
            }),
      );
      acknowledgeWildcardResources(
        fn.role,
        [secretArn],
        `Secrets are one parameter (or secret) per provider key, so they are granted by this environment's prefix ${secretsPrefix} and nothing wider.`,
      );
    }

    // Schedule: the monitor loops inside each invocation (EventBridge cannot go below 1 min).
    const scheduleRole = new Role(this, "MonitorScheduleRole", {
      assumedBy: new ServicePrincipal("scheduler.amazonaws.com", {
        conditions: { StringEquals: { "aws:SourceAccount": this.account } },
      }),
      description: `RPC gateway ${env}: lets EventBridge Scheduler start the monitor`,
    });
    new Schedule(this, "MonitorSchedule", {
      description: `RPC gateway ${env}: start the monitor loop every minute`,
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      target: new LambdaInvoke(monitor.function, {
        role: scheduleRole,
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    });
    acknowledgeWildcardResources(
      scheduleRole,
      [`${monitor.function.functionArn}:*`],
      "CDK's grantInvoke adds the function's qualified ARNs (versions, aliases) next to the function itself; the role can invoke the monitor function and nothing else.",
    );

    const { api, stage } = addGatewayHttpApi(this, {
      env,
      proxy: proxy.function,
      corsOrigins: config.corsOrigins,
      throttle: settings.api.throttle,
      statusThrottle: settings.api.statusThrottle,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    });

    const webSocket = addGatewayWebSocketApi(this, {
      env,
      socket: socket.function,
      networks: config.networks,
      throttle: settings.socket.throttle,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    });
    // The follower pushes notifications and closes the connections it cannot serve.
    webSocket.grantPush(follower);
    scheduleFollower(this, { env, account: this.account }, follower);

    const monitoring = new Monitoring(this, "Monitoring", {
      settings,
      serviceName,
      networks: config.networks,
      api,
      proxy: proxy.function,
      monitor: monitor.function,
    });

    new CfnOutput(this, "ApiUrl", {
      value: stage.url,
      description: "Base URL: POST <url><network> for JSON-RPC",
    });
    new CfnOutput(this, "WebSocketUrl", {
      value: webSocket.api.apiEndpoint,
      description: "WebSocket base URL: <url>/<network> for JSON-RPC and eth_subscribe",
    });
    new CfnOutput(this, "TableName", { value: table.tableName });
    new CfnOutput(this, "ConfigBucketName", { value: bucket.bucketName });
    new CfnOutput(this, "ConfigObjectKey", { value: config.key });
    new CfnOutput(this, "DashboardName", { value: monitoring.dashboard.dashboardName });
    new CfnOutput(this, "DashboardUrl", {
      value: dashboardUrl(monitoring.dashboard.dashboardName),
    });
    new CfnOutput(this, "AlarmTopicArn", { value: monitoring.topic.topicArn });
    new CfnOutput(this, "SecretParameters", {
      description: "SecureString parameters the config's ${NAME} placeholders need",
      value:
        config.secretNames.map((name) => `${secretsPrefix}${name}`).join(", ") || "(none needed)",
    });

    this.table = table;
    this.bucket = bucket;
    this.proxy = proxy;
    this.monitor = monitor;
    this.api = api;
    this.socket = socket;
    this.follower = follower;
    this.webSocket = webSocket;
    this.monitoring = monitoring;

    // BucketDeployment's singleton handler (aws-cdk-lib's own Lambda, runtime and policy).
    const deploymentHandler = configDeployment.handlerRole.node.scope;
    if (deploymentHandler !== undefined) {
      acknowledgeCdkManaged(
        deploymentHandler,
        ["L1"],
        "aws-cdk-lib's BucketDeployment handler: its runtime, AWSLambdaBasicExecutionRole and s3 grants on the asset and config buckets are set by the library, and it runs only during deploys.",
      );
    }
  }
}
