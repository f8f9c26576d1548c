import { readFileSync } from "node:fs";
import { join } from "node:path";
import { App, type CfnElement } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { ENVIRONMENTS, type EnvironmentSettings } from "../../infra/environments.ts";
import { PROJECT_ROOT, readGatewayConfig } from "../../infra/gateway-config.ts";
import {
  GatewayStack,
  MONITOR_TABLE_ACCESS,
  PROXY_FILTER_ACCESS,
  PROXY_TABLE_ACCESS,
} from "../../infra/gateway-stack.ts";
import { scratchOutdir } from "../support/scratch-outdir.ts";
import { CDK_JSON_CONTEXT } from "./synth.ts";

/**
 * Each Lambda role gets only what its code uses: the DynamoDB commands its adapters send, on
 * the partitions it touches, and the one secrets service the environment reads from. The
 * proxy's concurrency is capped per environment.
 */

interface Statement {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, string[]>>;
}

function stackWith(settings: EnvironmentSettings): { stack: GatewayStack; template: Template } {
  const app = new App({
    context: { ...CDK_JSON_CONTEXT, "aws:cdk:bundling-stacks": [] },
    outdir: scratchOutdir("rpc-gateway-least-privilege-"),
  });
  const stack = new GatewayStack(app, `LeastPrivilege-${settings.name}`, {
    settings,
    config: readGatewayConfig(settings.name),
    projectRoot: PROJECT_ROOT,
  });
  return { stack, template: Template.fromStack(stack) };
}

function statementsOf(template: Template, stack: GatewayStack, role: "proxy" | "monitor") {
  const roleId = stack.getLogicalId(stack[role].role.node.defaultChild as CfnElement);
  const policies = Object.values(template.findResources("AWS::IAM::Policy")) as Array<{
    Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: Statement[] } };
  }>;
  return policies
    .filter((policy) => policy.Properties.Roles.some((ref) => ref.Ref === roleId))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}

const actionsOf = (statements: Statement[]): string[] =>
  statements.flatMap((statement) =>
    Array.isArray(statement.Action) ? statement.Action : [statement.Action],
  );

/** A resource as one string: `Fn::Join` pieces joined, `Ref`s written `${Name}`. */
function flattenArn(resource: unknown): string {
  if (typeof resource === "string") return resource;
  const join = (resource as { "Fn::Join"?: [string, unknown[]] })["Fn::Join"];
  if (join === undefined) return JSON.stringify(resource);
  return join[1]
    .map((part) =>
      typeof part === "string"
        ? part
        : `\${${(part as { Ref?: string }).Ref ?? JSON.stringify(part)}}`,
    )
    .join(join[0]);
}

/** The DynamoDB commands an adapter's source sends (`new XxxCommand(`). */
function dynamoCommands(file: string): string[] {
  const source = readFileSync(join(PROJECT_ROOT, file), "utf8");
  return [...source.matchAll(/new (\w+)Command\(/g)]
    .map((match) => match[1] ?? "")
    .filter((command) =>
      [
        "GetItem",
        "Query",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Scan",
        "BatchWriteItem",
        "BatchGetItem",
        "TransactWriteItems",
      ].includes(command),
    );
}

describe("least privilege", () => {
  const { stack, template } = stackWith(ENVIRONMENTS.prod);

  it("regression: the proxy role could PutItem though the proxy never puts; now it has exactly the commands its adapters send", () => {
    const proxyActions = actionsOf(statementsOf(template, stack, "proxy")).filter((action) =>
      action.startsWith("dynamodb:"),
    );
    expect(proxyActions).not.toContain("dynamodb:PutItem");
    const used = new Set(
      [
        "functions/adapters/store/state-store.ts",
        "functions/adapters/store/history-items.ts",
        "functions/adapters/store/head-item.ts",
        "functions/adapters/store/stats-store.ts",
        "functions/adapters/store/event-store.ts",
        "functions/adapters/store/usage-store.ts",
        "functions/adapters/store/answer-store.ts",
      ].flatMap(dynamoCommands),
    );
    expect([...used].sort()).toEqual([...PROXY_TABLE_ACCESS.actions].sort());
    const table = statementsOf(template, stack, "proxy").find((s) => s.Sid === "StateTable");
    expect(actionsOf(table ? [table] : []).sort()).toEqual(
      PROXY_TABLE_ACCESS.actions.map((a) => `dynamodb:${a}`).sort(),
    );
  });

  it("the proxy's filters get exactly the filter store's commands, on the filter items alone", () => {
    const used = new Set(dynamoCommands("functions/adapters/store/filter-store.ts"));
    expect([...used].sort()).toEqual([...PROXY_FILTER_ACCESS.actions].sort());
    const filters = statementsOf(template, stack, "proxy").find((s) => s.Sid === "Filters");
    expect(actionsOf(filters ? [filters] : []).sort()).toEqual(
      PROXY_FILTER_ACCESS.actions.map((a) => `dynamodb:${a}`).sort(),
    );
    expect(filters?.Condition).toEqual({
      "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["FILTER#*"] },
    });
    // The monitor has no business with filters.
    const monitorKeys = statementsOf(template, stack, "monitor").flatMap(
      (s) => s.Condition?.["ForAllValues:StringLike"]?.["dynamodb:LeadingKeys"] ?? [],
    );
    expect(monitorKeys.some((key) => key.startsWith("FILTER#"))).toBe(false);
  });

  it("regression: the history items (learned bounds, probes) forgot a lesson with DeleteItem, which neither role may send; every adapter module the state store uses is held to its role", () => {
    for (const file of [
      "functions/adapters/store/history-items.ts",
      "functions/adapters/store/head-item.ts",
    ]) {
      for (const command of dynamoCommands(file)) {
        expect(PROXY_TABLE_ACCESS.actions, `${file}: ${command}`).toContain(command);
        expect(MONITOR_TABLE_ACCESS.actions, `${file}: ${command}`).toContain(command);
      }
    }
  });

  it("the monitor role has the commands of its adapters, the monitor store's puts included", () => {
    const used = new Set(
      [
        "functions/adapters/store/state-store.ts",
        "functions/adapters/store/history-items.ts",
        "functions/adapters/store/head-item.ts",
        "functions/adapters/store/stats-store.ts",
        "functions/adapters/store/event-store.ts",
        "functions/adapters/store/monitor-store.ts",
      ].flatMap(dynamoCommands),
    );
    expect([...used].sort()).toEqual([...MONITOR_TABLE_ACCESS.actions].sort());
    // Its subscription grants (the head follower's) are test/infra/websocket-api.test.ts's.
    const monitorActions = actionsOf(
      statementsOf(template, stack, "monitor").filter((s) => s.Sid === "StateTable"),
    );
    expect(monitorActions.sort()).toEqual(
      MONITOR_TABLE_ACCESS.actions.map((a) => `dynamodb:${a}`).sort(),
    );
  });

  it("table access is scoped to the partitions each function uses (dynamodb:LeadingKeys)", () => {
    for (const [role, partitions] of [
      ["proxy", ["NET#*", "STATS#*", "EVENTS#*", "USAGE#*", "TX#*", "CACHE#*"]],
      ["monitor", ["NET#*", "STATS#*", "EVENTS#*", "MONITOR#*", "LEASE#monitor"]],
    ] as const) {
      const table = statementsOf(template, stack, role).find((s) => s.Sid === "StateTable");
      expect(table?.Condition).toEqual({
        "ForAllValues:StringLike": { "dynamodb:LeadingKeys": partitions },
      });
    }
  });

  it.each<{
    source: EnvironmentSettings["secretsSource"];
    granted: string;
    notGranted: string;
    resource: string;
  }>([
    {
      source: "ssm",
      granted: "ssm:GetParameter",
      notGranted: "secretsmanager:GetSecretValue",
      resource:
        "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/rpc-gateway/dev/*",
    },
    {
      source: "secretsmanager",
      granted: "secretsmanager:GetSecretValue",
      notGranted: "ssm:GetParameter",
      resource:
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:/rpc-gateway/dev/*",
    },
  ])(
    "secrets from $source: only that service is granted, and the functions are told",
    ({ source, granted, notGranted, resource }) => {
      const custom = stackWith({ ...ENVIRONMENTS.dev, secretsSource: source });
      for (const role of ["proxy", "monitor"] as const) {
        const statements = statementsOf(custom.template, custom.stack, role);
        // The one secrets statement is on this environment's prefix, nothing wider.
        const secrets = statements.filter((s) => actionsOf([s]).includes(granted));
        expect(secrets.map((s) => flattenArn(s.Resource))).toEqual([resource]);
        const actions = actionsOf(statements);
        expect(actions).toContain(granted);
        expect(actions).not.toContain(notGranted);
        // The extension reads one name per call: the batch read is not granted.
        expect(actions).not.toContain("ssm:GetParameters");
        expect(actions.filter((action) => /^(ssm|secretsmanager|kms):/.test(action))).toEqual([
          granted,
        ]);
      }
      const fn = custom.template.findResources("AWS::Lambda::Function");
      for (const resource of Object.values(fn) as Array<{
        Properties: { Environment?: { Variables?: Record<string, unknown> } };
      }>) {
        const variables = resource.Properties.Environment?.Variables ?? {};
        if ("SECRETS_SOURCE" in variables) expect(variables.SECRETS_SOURCE).toBe(source);
      }
    },
  );
});

describe("cost guards", () => {
  it.each(["dev", "prod"] as const)(
    "the %s proxy has the environment's reserved concurrency",
    (env) => {
      const settings = ENVIRONMENTS[env];
      const { stack, template } = stackWith(settings);
      const proxyId = stack.getLogicalId(stack.proxy.function.node.defaultChild as CfnElement);
      const proxy = template.toJSON().Resources[proxyId] as {
        Properties: { ReservedConcurrentExecutions?: number };
      };
      expect(proxy.Properties.ReservedConcurrentExecutions).toBe(
        settings.proxy.reservedConcurrency,
      );
      expect(settings.proxy.reservedConcurrency).toBeGreaterThan(0);
    },
  );
});
