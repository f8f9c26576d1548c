import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type CfnElement, Stack, Validations } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { flattenCfnReference } from "cdk-nag/lib/utils/flatten-cfn-reference.js";
import type { IConstruct } from "constructs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENVIRONMENTS, type EnvironmentSettings } from "../../infra/environments.ts";
import { PROJECT_ROOT, readGatewayConfig } from "../../infra/gateway-config.ts";
import { METRIC_DIMENSIONS, METRICS_NAMESPACE, serviceNameOf } from "../../infra/monitoring.ts";
import { type Synthesized, synthGateway } from "./synth.ts";

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Sid?: string;
}

const asList = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/**
 * dev synthesizes environment-agnostic (as in CI, no credentials); prod with a concrete
 * account and region, as `cdk deploy` does once CDK_DEFAULT_* come from the credentials.
 */
const CASES: Array<{ settings: EnvironmentSettings; defaultEnv: Json }> = [
  { settings: ENVIRONMENTS.dev, defaultEnv: {} },
  { settings: ENVIRONMENTS.prod, defaultEnv: { account: "111122223333", region: "eu-west-1" } },
];

describe.each(CASES)("stack of $settings.name", ({ settings, defaultEnv }) => {
  const env = settings.name;
  const config = readGatewayConfig(env);
  let synth: Synthesized;
  let resources: Record<string, Resource>;
  let stack: Synthesized["stack"];
  const idOf = (construct: IConstruct): string =>
    stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const ofType = (type: string): Array<[string, Resource]> =>
    Object.entries(resources).filter(([, resource]) => resource.Type === type);
  const resource = (construct: IConstruct): Resource => {
    const found = resources[idOf(construct)];
    if (!found) throw new Error(`no resource for ${construct.node.path}`);
    return found;
  };
  const policyOf = (roleId: string): Statement[] =>
    ofType("AWS::IAM::Policy")
      .filter(([, policy]) =>
        (policy.Properties.Roles as Json[]).some((role) => role.Ref === roleId),
      )
      .flatMap(
        ([, policy]) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
      );

  beforeAll(() => {
    synth = synthGateway(env, { defaultEnv });
    stack = synth.stack;
    resources = synth.template.toJSON().Resources as Record<string, Resource>;
  });
  afterAll(() => rmSync(synth.outdir, { recursive: true, force: true }));

  it("is one stack named RpcGateway-<env>, protected from deletion in prod", () => {
    expect(synth.app.node.children.filter((child) => child instanceof Stack)).toHaveLength(1);
    expect(stack.stackName).toBe(`RpcGateway-${env}`);
    expect(stack.terminationProtection).toBe(settings.deletionProtection);
  });

  it("runs both functions on nodejs24.x arm64 with JSON logs into their own log groups", () => {
    for (const [fn, timeout, memory] of [
      [stack.proxy, 29, settings.proxy.memoryMb],
      [stack.monitor, 90, settings.monitor.memoryMb],
    ] as const) {
      const props = resource(fn.function).Properties;
      expect(props).toMatchObject({
        Runtime: "nodejs24.x",
        Architectures: ["arm64"],
        Handler: "index.handler",
        Timeout: timeout,
        MemorySize: memory,
        LoggingConfig: {
          LogFormat: "JSON",
          ApplicationLogLevel: settings.logLevel,
          LogGroup: { Ref: idOf(fn.logGroup) },
        },
      });
      const logGroup = resource(fn.logGroup);
      expect(logGroup.Properties.RetentionInDays).toBe(settings.logRetention);
      // No AWS managed policy (AWSLambdaBasicExecutionRole): the role starts empty.
      expect(resource(fn.role).Properties.ManagedPolicyArns).toBeUndefined();
    }
    expect(resource(stack.proxy.function).Properties.ReservedConcurrentExecutions).toBe(
      settings.proxy.reservedConcurrency,
    );
    expect(resource(stack.monitor.function).Properties.ReservedConcurrentExecutions).toBe(1);
  });

  it("runs the Parameters and Secrets extension's arm64 layer beside both functions, which read their secrets through it", () => {
    const mappings = (synth.template.toJSON().Mappings ?? {}) as Record<
      string,
      Record<string, Record<string, string>>
    >;
    /** A concrete ARN, or (environment-agnostic) the ARN the region mapping gives us-east-1. */
    const arnOf = (layer: Json | string): string | undefined => {
      if (typeof layer === "string") return layer;
      const [map, , key] = layer["Fn::FindInMap"] as [string, Json, string];
      return mappings[map]?.["us-east-1"]?.[key];
    };
    const region = (defaultEnv.region as string | undefined) ?? "us-east-1";
    for (const fn of [stack.proxy, stack.monitor]) {
      const layers = resource(fn.function).Properties.Layers as Array<Json | string>;
      expect(layers).toHaveLength(1);
      expect(arnOf(layers[0] as Json | string)).toMatch(
        new RegExp(
          `^arn:aws:lambda:${region}:\\d{12}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:\\d+$`,
        ),
      );
    }
  });

  it("passes the same environment to every function, the follower also where to push", () => {
    const expected = {
      TABLE_NAME: { Ref: idOf(stack.table) },
      CONFIG_BUCKET: { Ref: idOf(stack.bucket) },
      CONFIG_BUCKET_DOMAIN: { "Fn::GetAtt": [idOf(stack.bucket), "RegionalDomainName"] },
      CONFIG_KEY: `config/${env}.json`,
      GATEWAY_ENV: env,
      SECRETS_SOURCE: "ssm",
      SECRETS_PREFIX: `/rpc-gateway/${env}/`,
      POWERTOOLS_SERVICE_NAME: serviceNameOf(env),
      POWERTOOLS_METRICS_NAMESPACE: "RpcGateway",
      POWERTOOLS_LOG_LEVEL: settings.logLevel,
      BUNDLED_CONFIG_PATH: "/var/task/config.json",
      // The Parameters and Secrets extension's settings.
      PARAMETERS_SECRETS_EXTENSION_CACHE_ENABLED: "true",
      PARAMETERS_SECRETS_EXTENSION_CACHE_SIZE: "1000",
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: "2773",
      PARAMETERS_SECRETS_EXTENSION_LOG_LEVEL: "warn",
      PARAMETERS_SECRETS_EXTENSION_MAX_CONNECTIONS: "10",
      SECRETS_MANAGER_TIMEOUT_MILLIS: "2500",
      SECRETS_MANAGER_TTL: "300",
      SSM_PARAMETER_STORE_TIMEOUT_MILLIS: "2500",
      SSM_PARAMETER_STORE_TTL: "300",
    };
    for (const fn of [stack.proxy, stack.socket, stack.monitor]) {
      expect(resource(fn.function).Properties.Environment).toEqual({ Variables: expected });
    }
    expect(resource(stack.follower.function).Properties.Environment).toEqual({
      Variables: { ...expected, WEBSOCKET_MANAGEMENT_URL: expect.anything() },
    });
  });

  it("starts the monitor and the head follower every minute and drops a start it cannot run at once", () => {
    const schedules = ofType("AWS::Scheduler::Schedule");
    expect(schedules).toHaveLength(2);
    const started = [stack.monitor, stack.follower];
    for (const [index, fn] of started.entries()) {
      expect(schedules[index]?.[1].Properties).toMatchObject({
        ScheduleExpression: "rate(1 minute)",
        State: "ENABLED",
        FlexibleTimeWindow: { Mode: "OFF" },
        Target: {
          Arn: { "Fn::GetAtt": [idOf(fn.function), "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        },
      });
    }
    expect(ofType("AWS::Lambda::EventInvokeConfig").map(([, r]) => r.Properties)).toEqual(
      started.map((fn) => ({
        FunctionName: { Ref: idOf(fn.function) },
        Qualifier: "$LATEST",
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      })),
    );
    // The monitor's runs never overlap; the follower's do, for the lease's hand-over.
    expect(resource(stack.monitor.function).Properties.ReservedConcurrentExecutions).toBe(1);
    expect(resource(stack.follower.function).Properties).toMatchObject({
      ReservedConcurrentExecutions: 2,
      Timeout: 90,
      MemorySize: settings.follower.memoryMb,
    });
  });

  it("keeps state in one on-demand table with PITR and TTL, retained in prod", () => {
    expect(ofType("AWS::DynamoDB::Table")).toHaveLength(1);
    const table = resource(stack.table);
    expect(table.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
      AttributeDefinitions: [
        { AttributeName: "pk", AttributeType: "S" },
        { AttributeName: "sk", AttributeType: "S" },
      ],
      BillingMode: "PAY_PER_REQUEST",
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
      DeletionProtectionEnabled: settings.deletionProtection,
    });
    const policy = env === "prod" ? "Retain" : "Delete";
    expect(table.DeletionPolicy).toBe(policy);
    expect(table.UpdateReplacePolicy).toBe(policy);
  });

  it("keeps the config in a versioned, encrypted, private, TLS-only bucket", () => {
    const bucket = resource(stack.bucket);
    expect(bucket.Properties).toMatchObject({
      VersioningConfiguration: { Status: "Enabled" },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          { ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } },
        ],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
    });
    expect(bucket.DeletionPolicy).toBe(env === "prod" ? "Retain" : "Delete");
    synth.template.hasResourceProperties("AWS::S3::BucketPolicy", {
      Bucket: { Ref: idOf(stack.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: "Deny",
            Action: "s3:*",
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          }),
        ]),
      },
    });
  });

  it("uploads config/<env>.json unchanged to its key, never pruning older objects", () => {
    const deployments = ofType("Custom::CDKBucketDeployment");
    expect(deployments).toHaveLength(1);
    const props = deployments[0]?.[1].Properties ?? {};
    expect(props).toMatchObject({
      DestinationBucketName: { Ref: idOf(stack.bucket) },
      Prune: false,
      Extract: true,
    });
    expect(props.DestinationBucketKeyPrefix).toBeUndefined();
    const [zip] = props.SourceObjectKeys as string[];
    const staged = join(
      synth.outdir,
      `asset.${zip?.replace(/\.zip$/, "")}`,
      "config",
      `${env}.json`,
    );
    expect(readFileSync(staged, "utf8")).toBe(readFileSync(join(PROJECT_ROOT, config.key), "utf8"));
  });

  it("throttles the default stage and writes access logs without query strings", () => {
    const stages = ofType("AWS::ApiGatewayV2::Stage").filter(
      ([, stage]) => (stage.Properties.ApiId as Json).Ref === idOf(stack.api),
    );
    expect(stages).toHaveLength(1);
    const stage = stages[0]?.[1].Properties ?? {};
    expect(stage).toMatchObject({
      StageName: "$default",
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: settings.api.throttle.rateLimit,
        ThrottlingBurstLimit: settings.api.throttle.burstLimit,
      },
    });
    const logs = stage.AccessLogSettings as {
      DestinationArn: { "Fn::GetAtt": string[] };
      Format: string;
    };
    const logGroupId = logs.DestinationArn["Fn::GetAtt"][0] ?? "";
    expect(resources[logGroupId]?.Properties.RetentionInDays).toBe(settings.logRetention);
    const format = JSON.parse(logs.Format) as Record<string, string>;
    expect(format.requestId).toBe("$context.requestId");
    expect(logs.Format).not.toMatch(/querystring|header/i);
  });

  it("grants each function exactly its table actions and partitions, its config object and its secrets prefix", () => {
    const region = (defaultEnv.region as string | undefined) ?? "<AWS::Region>";
    const account = (defaultEnv.account as string | undefined) ?? "<AWS::AccountId>";
    // With a concrete region CDK writes the partition out too.
    const partition = defaultEnv.region === undefined ? "<AWS::Partition>" : "aws";
    const arn = (service: string, rest: string) =>
      `arn:${partition}:${service}:${region}:${account}:${rest}`;
    const tableAccess = [
      [
        stack.proxy,
        ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
        ["NET#*", "STATS#*", "EVENTS#*", "USAGE#*", "TX#*", "CACHE#*"],
      ],
      [
        stack.monitor,
        ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"],
        ["NET#*", "STATS#*", "EVENTS#*", "MONITOR#*", "LEASE#monitor"],
      ],
      [
        stack.follower,
        ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
        ["NET#*", "STATS#*", "EVENTS#*", "USAGE#*", "TX#*", "CACHE#*"],
      ],
    ] as const;
    for (const [fn, actions, partitions] of tableAccess) {
      const statements = policyOf(idOf(fn.role));
      const bySid = Object.fromEntries(statements.map((s) => [s.Sid ?? "logs", s]));
      expect(Object.keys(bySid).sort()).toEqual(
        [
          "ConfigObject",
          "SecretsParameters",
          "StateTable",
          "logs",
          ...(fn === stack.proxy ? ["Filters"] : []),
          ...(fn === stack.follower ? ["Subscriptions", "Follower", "PushToConnections"] : []),
        ].sort(),
      );
      expect(bySid.logs).toMatchObject({
        Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
        Resource: { "Fn::GetAtt": [idOf(fn.logGroup), "Arn"] },
      });
      expect(bySid.StateTable).toMatchObject({
        Action: actions,
        Resource: { "Fn::GetAtt": [idOf(stack.table), "Arn"] },
        Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": partitions } },
      });
      if (fn === stack.follower) {
        expect(bySid.Follower).toMatchObject({
          Action: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
          Resource: { "Fn::GetAtt": [idOf(stack.table), "Arn"] },
          Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["WSFOLLOW#*"] } },
        });
      }
      if (fn === stack.proxy) {
        expect(bySid.Filters).toMatchObject({
          Action: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
          Resource: { "Fn::GetAtt": [idOf(stack.table), "Arn"] },
          Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["FILTER#*"] } },
        });
      }
      expect(bySid.ConfigObject).toMatchObject({
        Action: "s3:GetObject",
        Resource: {
          "Fn::Join": ["", [{ "Fn::GetAtt": [idOf(stack.bucket), "Arn"] }, `/config/${env}.json`]],
        },
      });
      expect(bySid.SecretsParameters?.Action).toBe("ssm:GetParameter");
      expect(flattenCfnReference(bySid.SecretsParameters?.Resource)).toBe(
        arn("ssm", `parameter/rpc-gateway/${env}/*`),
      );
      expect(statements.every((s) => s.Effect === "Allow")).toBe(true);
    }
  });

  it("has no policy in the stack granting dynamodb or s3 actions on Resource *", () => {
    const statements = ofType("AWS::IAM::Policy").flatMap(
      ([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
    );
    const dataActions = statements.filter((s) =>
      asList(s.Action).some((action) => /^(dynamodb|s3):/.test(action)),
    );
    expect(dataActions.length).toBeGreaterThan(0);
    for (const statement of dataActions) expect(asList(statement.Resource)).not.toContain("*");
  });

  it("alarms on quorum, primaries, backup use per network, and on monitor, 5xx, config", () => {
    const alarms = Object.fromEntries(
      ofType("AWS::CloudWatch::Alarm").map(([, a]) => [
        a.Properties.AlarmName as string,
        a.Properties,
      ]),
    );
    const prefix = `RpcGateway-${env}`;
    const perNetwork = config.networks.flatMap((network) => [
      `${prefix}-no-quorum-${network}`,
      `${prefix}-all-primaries-down-${network}`,
      `${prefix}-backup-in-use-${network}`,
      `${prefix}-socket-connects-refused-${network}`,
      `${prefix}-follower-lag-${network}`,
      `${prefix}-subscription-delivery-failures-${network}`,
    ]);
    expect(config.networks.length).toBeGreaterThan(0);
    expect(Object.keys(alarms).sort()).toEqual(
      [
        `${prefix}-monitor-not-running`,
        `${prefix}-api-5xx-rate`,
        `${prefix}-config-rejected`,
        `${prefix}-config-unreachable`,
        `${prefix}-providers-left-out`,
        ...perNetwork,
        ...config.networks.map((network) => `${prefix}-monitor-errors-${network}`),
      ].sort(),
    );
    const topic = { Ref: idOf(stack.monitoring.topic) };
    for (const alarm of Object.values(alarms)) {
      expect(alarm.AlarmActions).toEqual([topic]);
      expect(alarm.OKActions).toEqual([topic]);
    }
    const stat = (name: string) =>
      ((alarms[name]?.Metrics ?? []) as Array<{ MetricStat?: Json }>)[0]?.MetricStat;
    const limits = settings.alarms;

    expect(alarms[`${prefix}-monitor-not-running`]).toMatchObject({
      ComparisonOperator: "LessThanThreshold",
      Threshold: 1,
      EvaluationPeriods: limits.monitorMissingMinutes,
      DatapointsToAlarm: limits.monitorMissingMinutes,
      TreatMissingData: "breaching",
    });
    expect(stat(`${prefix}-monitor-not-running`)).toEqual({
      Metric: {
        Namespace: "RpcGateway",
        MetricName: "monitor_ticks",
        Dimensions: [{ Name: "service", Value: serviceNameOf(env) }],
      },
      Period: 60,
      Stat: "Sum",
    });

    const network = config.networks[0] ?? "";
    const dims = [
      { Name: "network", Value: network },
      { Name: "service", Value: serviceNameOf(env) },
    ];
    expect(limits.backupInUseMinutes).toBe(10);
    expect(alarms[`${prefix}-backup-in-use-${network}`]).toMatchObject({
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      EvaluationPeriods: 10,
      DatapointsToAlarm: 10,
      TreatMissingData: "notBreaching",
    });
    expect(stat(`${prefix}-backup-in-use-${network}`)).toMatchObject({
      Metric: { MetricName: "backup_in_use", Dimensions: dims },
      Stat: "Minimum",
    });
    for (const [name, metric] of [
      [`${prefix}-no-quorum-${network}`, "quorum_size"],
      [`${prefix}-all-primaries-down-${network}`, "primaries_available"],
    ]) {
      expect(alarms[name ?? ""]).toMatchObject({
        ComparisonOperator: "LessThanThreshold",
        Threshold: 1,
        TreatMissingData: "breaching",
      });
      expect(stat(name ?? "")).toMatchObject({
        Metric: { Namespace: "RpcGateway", MetricName: metric, Dimensions: dims },
        Stat: "Maximum",
        Period: 60,
      });
    }

    const rate = alarms[`${prefix}-api-5xx-rate`] ?? {};
    expect(rate.Threshold).toBe(limits.serverErrorRatePercent);
    const metrics = rate.Metrics as Array<Json & { MetricStat?: { Metric: Json } }>;
    expect(metrics.find((m) => m.ReturnData === true)?.Expression).toBe(
      `IF(requests >= ${limits.serverErrorMinRequests}, 100 * errors / requests, 0)`,
    );
    expect(metrics.map((m) => m.MetricStat?.Metric).filter((m) => m !== undefined)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Namespace: "AWS/ApiGateway", MetricName: "5xx" }),
        expect.objectContaining({ Namespace: "AWS/ApiGateway", MetricName: "Count" }),
      ]),
    );
  });

  it("alarms only on metrics with the dimension sets of the metric contract", () => {
    for (const [, alarm] of ofType("AWS::CloudWatch::Alarm")) {
      for (const query of alarm.Properties.Metrics as Array<{ MetricStat?: { Metric: Json } }>) {
        const metric = query.MetricStat?.Metric as
          | { Namespace: string; MetricName: keyof typeof METRIC_DIMENSIONS; Dimensions: Json[] }
          | undefined;
        if (metric === undefined || metric.Namespace !== METRICS_NAMESPACE) continue;
        const names = metric.Dimensions.map((d) => d.Name).sort();
        expect(names).toEqual(["service", ...METRIC_DIMENSIONS[metric.MetricName]].sort());
      }
    }
  });

  it("draws one dashboard with a row per network", () => {
    const dashboards = ofType("AWS::CloudWatch::Dashboard");
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0]?.[1].Properties.DashboardName).toBe(`RpcGateway-${env}`);
    const body = JSON.stringify(dashboards[0]?.[1].Properties.DashboardBody);
    for (const network of config.networks) expect(body).toContain(`## ${network}`);
    expect(body).toContain("SEARCH(");
  });

  it("outputs the API URL, table, bucket and dashboard", () => {
    const outputs = synth.template.toJSON().Outputs as Record<string, unknown>;
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining([
        "ApiUrl",
        "TableName",
        "ConfigBucketName",
        "ConfigObjectKey",
        "DashboardName",
        "DashboardUrl",
        "AlarmTopicArn",
        "SecretParameters",
      ]),
    );
  });

  it("passes cdk-nag AwsSolutions with nothing left unacknowledged", () => {
    const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(synth.app);
    const findings = report.violations.map(
      (v) =>
        `${v.severity} ${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
    );
    expect(findings).toEqual([]);
  });

  it("acknowledges nag findings only on the constructs concerned, each with a reason", () => {
    const acknowledged: Array<{ path: string; id: string; reason: string }> = [];
    for (const construct of synth.app.node.findAll()) {
      for (const entry of construct.node.metadata) {
        if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          acknowledged.push({ path: construct.node.path, id, reason });
        }
      }
    }
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const { path, reason } of acknowledged) {
      expect(path).not.toBe(stack.node.path); // never stack-wide
      expect(reason.length).toBeGreaterThan(60);
    }
    const rules = new Set(
      acknowledged.map(({ id }) => id.replace(/^annotation::/i, "").replace(/\[.*$/, "")),
    );
    expect([...rules].sort()).toEqual([
      "AwsSolutions-APIG4",
      "AwsSolutions-IAM4",
      "AwsSolutions-IAM5",
      "AwsSolutions-L1",
      "AwsSolutions-S1",
    ]);
    // Our own roles carry only the prefix wildcard of their secrets (and, for the one that
    // pushes, the API's @connections), never an action wildcard.
    for (const fn of [stack.proxy, stack.socket, stack.monitor, stack.follower]) {
      const ours = acknowledged.filter(({ path }) => path === fn.role.node.path).map((a) => a.id);
      expect(ours).toHaveLength(fn === stack.follower ? 2 : 1);
      for (const id of ours)
        expect(id).toMatch(
          /IAM5\[Resource::(arn:.*\/rpc-gateway\/[a-z]+\/\*|arn:.*:execute-api:.*\/\*\/\*\/@connections\/\*)\]$/,
        );
    }
  });
});
