import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { CfnElement } from "aws-cdk-lib";
import { flattenCfnReference } from "cdk-nag/lib/utils/flatten-cfn-reference.js";
import type { IConstruct } from "constructs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENVIRONMENTS, type EnvironmentSettings } from "../../infra/environments.ts";
import { PROJECT_ROOT, readGatewayConfig } from "../../infra/gateway-config.ts";
import {
  PROXY_FILTER_ACCESS,
  PROXY_TABLE_ACCESS,
  SUBSCRIPTION_TABLE_ACCESS,
} from "../../infra/gateway-stack.ts";
import { serviceNameOf } from "../../infra/monitoring.ts";
import { type Synthesized, synthGateway } from "./synth.ts";

/**
 * The WebSocket side of the stack (docs/behaviour.md "Subscriptions over WebSocket",
 * docs/architecture.md): one WebSocket API with `$connect`, `$disconnect` and a two-way
 * `$default` on the socket function, a stage per network, throttled and access-logged like
 * the HTTP API; the socket function built and run as the proxy is, with the proxy's grants
 * plus exactly the subscription store's commands on `WSCONN#`/`WSSUB#`; the right to push
 * only for the function that pushes, on this API's `@connections`; an alarm per network.
 */

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}
interface Statement {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Json;
}

const CASES: Array<{ settings: EnvironmentSettings; defaultEnv: Json }> = [
  { settings: ENVIRONMENTS.dev, defaultEnv: {} },
  { settings: ENVIRONMENTS.prod, defaultEnv: { account: "111122223333", region: "eu-west-1" } },
];

/** The DynamoDB commands an adapter's source sends (`new XxxCommand(`). */
function dynamoCommands(file: string): string[] {
  const source = readFileSync(join(PROJECT_ROOT, file), "utf8");
  return [...source.matchAll(/new (\w+)Command\(/g)].map((match) => match[1] ?? "");
}

describe.each(CASES)("the WebSocket side of $settings.name", ({ settings, defaultEnv }) => {
  const env = settings.name;
  const config = readGatewayConfig(env);
  let synth: Synthesized;
  let resources: Record<string, Resource>;
  let stack: Synthesized["stack"];
  const idOf = (construct: IConstruct) =>
    stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const resource = (construct: IConstruct) => resources[idOf(construct)] as Resource;
  const statementsOf = (role: IConstruct): Statement[] =>
    ofType("AWS::IAM::Policy")
      .filter(([, policy]) =>
        (policy.Properties.Roles as Json[]).some((ref) => ref.Ref === idOf(role)),
      )
      .flatMap(
        ([, policy]) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
      );
  const apiRef = () => ({ Ref: idOf(stack.webSocket.api) });

  beforeAll(() => {
    synth = synthGateway(env, { defaultEnv });
    stack = synth.stack;
    resources = synth.template.toJSON().Resources as Record<string, Resource>;
  });
  afterAll(() => rmSync(synth.outdir, { recursive: true, force: true }));

  it("is one WebSocket API whose three routes reach the socket function, $default answering as its route response", () => {
    const apis = ofType("AWS::ApiGatewayV2::Api").filter(
      ([, api]) => api.Properties.ProtocolType === "WEBSOCKET",
    );
    expect(apis).toHaveLength(1);
    expect(apis[0]?.[1].Properties).toMatchObject({
      Name: `rpc-gateway-${env}-ws`,
      RouteSelectionExpression: "$request.body.action",
    });
    const routes = ofType("AWS::ApiGatewayV2::Route").filter(
      ([, route]) => (route.Properties.ApiId as Json).Ref === apiRef().Ref,
    );
    expect(routes.map(([, route]) => route.Properties.RouteKey).sort()).toEqual([
      "$connect",
      "$default",
      "$disconnect",
    ]);
    const defaultRoute = routes.find(([, route]) => route.Properties.RouteKey === "$default");
    expect(defaultRoute?.[1].Properties.RouteResponseSelectionExpression).toBe("$default");
    const responses = ofType("AWS::ApiGatewayV2::RouteResponse");
    expect(responses.map(([, r]) => r.Properties)).toEqual([
      expect.objectContaining({
        RouteId: { Ref: defaultRoute?.[0] },
        RouteResponseKey: "$default",
      }),
    ]);
    const integrations = ofType("AWS::ApiGatewayV2::Integration").filter(
      ([, i]) => (i.Properties.ApiId as Json).Ref === apiRef().Ref,
    );
    expect(integrations.length).toBeGreaterThanOrEqual(1);
    for (const [, integration] of integrations) {
      expect(integration.Properties).toMatchObject({
        IntegrationType: "AWS_PROXY",
        TimeoutInMillis: 29_000,
      });
      expect(JSON.stringify(integration.Properties.IntegrationUri)).toContain(
        idOf(stack.socket.function),
      );
    }
    // API Gateway may invoke the socket function for this API only.
    const permissions = ofType("AWS::Lambda::Permission").filter(([, p]) =>
      JSON.stringify(p.Properties.FunctionName).includes(idOf(stack.socket.function)),
    );
    expect(permissions.length).toBeGreaterThanOrEqual(1);
    for (const [, permission] of permissions) {
      expect(permission.Properties.Principal).toBe("apigateway.amazonaws.com");
      expect(JSON.stringify(permission.Properties.SourceArn)).toContain(apiRef().Ref);
    }
  });

  it("has a stage per network named as the network, throttled, with access logs that carry no query string or header", () => {
    const stages = ofType("AWS::ApiGatewayV2::Stage").filter(
      ([, s]) => (s.Properties.ApiId as Json).Ref === apiRef().Ref,
    );
    expect(stages.map(([, s]) => s.Properties.StageName).sort()).toEqual(
      [...config.networks].sort(),
    );
    for (const [, stage] of stages) {
      expect(stage.Properties).toMatchObject({
        AutoDeploy: true,
        DefaultRouteSettings: {
          ThrottlingRateLimit: settings.socket.throttle.rateLimit,
          ThrottlingBurstLimit: settings.socket.throttle.burstLimit,
        },
      });
      const logs = stage.Properties.AccessLogSettings as {
        DestinationArn: { "Fn::GetAtt": string[] };
        Format: string;
      };
      expect(
        resources[logs.DestinationArn["Fn::GetAtt"][0] ?? ""]?.Properties.RetentionInDays,
      ).toBe(settings.logRetention);
      expect(JSON.parse(logs.Format)).toMatchObject({
        connectionId: "$context.connectionId",
        eventType: "$context.eventType",
        status: "$context.status",
      });
      expect(logs.Format).not.toMatch(/querystring|header|\$request/i);
    }
  });

  it("runs the socket function as the proxy runs: Node 24 on arm64, under the 29 s integration timeout, concurrency reserved, the same environment and secrets layer", () => {
    const socket = resource(stack.socket.function).Properties;
    const proxy = resource(stack.proxy.function).Properties;
    expect(socket).toMatchObject({
      Runtime: "nodejs24.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 28,
      MemorySize: settings.socket.memoryMb,
      ReservedConcurrentExecutions: settings.socket.reservedConcurrency,
      LoggingConfig: { LogFormat: "JSON", LogGroup: { Ref: idOf(stack.socket.logGroup) } },
    });
    expect(socket.Environment).toEqual(proxy.Environment);
    expect(socket.Layers).toEqual(proxy.Layers);
    expect(resource(stack.socket.role).Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("grants the socket the proxy's table access plus exactly the subscription store's commands on WSCONN# and WSSUB#, and no push", () => {
    const bySid = Object.fromEntries(
      statementsOf(stack.socket.role).map((s) => [s.Sid ?? "logs", s]),
    );
    expect(Object.keys(bySid).sort()).toEqual([
      "ConfigObject",
      "Filters",
      "SecretsParameters",
      "StateTable",
      "Subscriptions",
      "logs",
    ]);
    const table = { "Fn::GetAtt": [idOf(stack.table), "Arn"] };
    const leading = (partitions: readonly string[]) => ({
      "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [...partitions] },
    });
    const actions = (list: readonly string[]) => list.map((action) => `dynamodb:${action}`);
    expect(bySid.StateTable).toMatchObject({
      Action: actions(PROXY_TABLE_ACCESS.actions),
      Resource: table,
      Condition: leading(PROXY_TABLE_ACCESS.partitions),
    });
    expect(bySid.Filters).toMatchObject({
      Action: actions(PROXY_FILTER_ACCESS.actions),
      Condition: leading(PROXY_FILTER_ACCESS.partitions),
    });
    expect(bySid.Subscriptions).toMatchObject({
      Action: actions(SUBSCRIPTION_TABLE_ACCESS.actions),
      Resource: table,
      Condition: leading(["WSCONN#*", "WSSUB#*"]),
    });
    expect(
      [...new Set(dynamoCommands("functions/adapters/subscriptions/subscription-table.ts"))].sort(),
    ).toEqual([...SUBSCRIPTION_TABLE_ACCESS.actions].sort());
    expect(JSON.stringify(statementsOf(stack.socket.role))).not.toContain("execute-api");
  });

  it("lets only the function that pushes (the head follower's) manage connections, on this API's @connections, and tells it where", () => {
    const pushers = ofType("AWS::IAM::Policy").filter(([, policy]) =>
      JSON.stringify(policy.Properties).includes("execute-api:ManageConnections"),
    );
    expect(pushers).toHaveLength(1);
    const push = statementsOf(stack.follower.role).find((s) => s.Sid === "PushToConnections");
    expect(push?.Action).toBe("execute-api:ManageConnections");
    expect(flattenCfnReference(push?.Resource)).toMatch(
      /^arn:.*:execute-api:.*:.*:<WebSocketApi[0-9A-F]+>\/\*\/\*\/@connections\/\*$/,
    );
    const subscriptions = statementsOf(stack.follower.role).find((s) => s.Sid === "Subscriptions");
    expect(subscriptions?.Condition).toEqual({
      "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["WSCONN#*", "WSSUB#*"] },
    });
    const url = (resource(stack.follower.function).Properties.Environment as { Variables: Json })
      .Variables.WEBSOCKET_MANAGEMENT_URL;
    expect(flattenCfnReference(url)).toMatch(
      /^https:\/\/<WebSocketApi[0-9A-F]+>\.execute-api\..+\..+$/,
    );
    for (const fn of [stack.proxy, stack.monitor, stack.socket]) {
      expect(
        JSON.stringify((resource(fn.function).Properties.Environment as Json) ?? {}),
      ).not.toContain("WEBSOCKET_MANAGEMENT_URL");
    }
  });

  it("alarms per network on the head follower's lag and on notifications that did not reach their subscribers", () => {
    const alarms = ofType("AWS::CloudWatch::Alarm").map(([, a]) => a.Properties);
    for (const network of config.networks) {
      const metricOf = (name: string) =>
        (
          (alarms.find((a) => a.AlarmName === name)?.Metrics ?? []) as Array<{ MetricStat: Json }>
        )[0]?.MetricStat;
      const lag = `RpcGateway-${env}-follower-lag-${network}`;
      expect(alarms.find((a) => a.AlarmName === lag)).toMatchObject({
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        Threshold: 10,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: "notBreaching",
      });
      expect(metricOf(lag)).toMatchObject({
        Metric: {
          MetricName: "follower_lag_blocks",
          Dimensions: expect.arrayContaining([{ Name: "network", Value: network }]),
        },
        Stat: "Minimum",
        Period: 60,
      });
      const failures = `RpcGateway-${env}-subscription-delivery-failures-${network}`;
      expect(alarms.find((a) => a.AlarmName === failures)).toMatchObject({
        Threshold: 10,
        EvaluationPeriods: 1,
        TreatMissingData: "notBreaching",
      });
      expect(metricOf(failures)).toMatchObject({
        Metric: { MetricName: "subscription_delivery_failures" },
        Stat: "Sum",
        Period: 300,
      });
    }
  });

  it("alarms per network when connects are refused because the registry failed, and outputs the WebSocket URL", () => {
    const alarms = ofType("AWS::CloudWatch::Alarm").map(([, a]) => a.Properties);
    for (const network of config.networks) {
      const alarm = alarms.find(
        (a) => a.AlarmName === `RpcGateway-${env}-socket-connects-refused-${network}`,
      );
      expect(alarm).toMatchObject({
        Threshold: 1,
        EvaluationPeriods: 1,
        TreatMissingData: "notBreaching",
      });
      expect(((alarm?.Metrics ?? []) as Array<{ MetricStat: Json }>)[0]?.MetricStat).toMatchObject({
        Metric: {
          MetricName: "socket_connections_refused",
          Dimensions: expect.arrayContaining([
            { Name: "service", Value: serviceNameOf(env) },
            { Name: "network", Value: network },
            { Name: "reason", Value: "unavailable" },
          ]),
        },
        Stat: "Sum",
        Period: 300,
      });
    }
    const outputs = synth.template.toJSON().Outputs as Record<string, { Value: unknown }>;
    // wss://<api>.execute-api.<region>.<suffix>: a network's socket is this and /<network>.
    expect(outputs.WebSocketUrl?.Value).toEqual({ "Fn::GetAtt": [apiRef().Ref, "ApiEndpoint"] });
  });
});
