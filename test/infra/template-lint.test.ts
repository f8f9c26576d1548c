import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cfnLintVersion,
  createTemplateLinter,
  type Finding,
  failing,
  runCfnLint,
  type TemplateLinter,
} from "../../infra/template-lint.ts";
import { synthGateway } from "./synth.ts";

const HTTP_API = {
  Type: "AWS::ApiGatewayV2::Api",
  Properties: { Name: "a", ProtocolType: "HTTP" },
};

/**
 * Templates with one known fault each, and the rule each linter reports for it (null: it does
 * not see the fault). Measured with @aws/cloudformation-validate 1.14.0 (aws-cdk-lib 2.276)
 * and cfn-lint 1.51.0.
 */
const FAULTS: Array<{
  name: string;
  resources: Record<string, unknown>;
  validate: string | null;
  cfnLint: string | null;
}> = [
  {
    name: "Tags on a resource type without tags",
    resources: {
      P: {
        Type: "AWS::Lambda::Permission",
        Properties: {
          Action: "lambda:InvokeFunction",
          FunctionName: "f",
          Principal: "apigateway.amazonaws.com",
          Tags: [{ Key: "project", Value: "rpc-gateway" }],
        },
      },
    },
    validate: "E3002",
    cfnLint: "E3002",
  },
  {
    // CloudFormation added Tags to dashboards in 2026: cfn-lint 1.51's schema predates it.
    name: "Tags on AWS::CloudWatch::Dashboard",
    resources: {
      D: {
        Type: "AWS::CloudWatch::Dashboard",
        Properties: { DashboardBody: "{}", Tags: [{ Key: "project", Value: "rpc-gateway" }] },
      },
    },
    validate: null,
    cfnLint: "E3002",
  },
  {
    name: "a property of the wrong type",
    resources: { Q: { Type: "AWS::SQS::Queue", Properties: { DelaySeconds: "soon" } } },
    validate: "E3012",
    cfnLint: "E3012",
  },
  {
    name: "a missing required property",
    resources: {
      A: HTTP_API,
      R: { Type: "AWS::ApiGatewayV2::Route", Properties: { ApiId: { Ref: "A" } } },
    },
    validate: "E3003",
    cfnLint: "E3003",
  },
  {
    name: "a Ref to nothing",
    resources: {
      R: {
        Type: "AWS::ApiGatewayV2::Route",
        Properties: { ApiId: { Ref: "Nope" }, RouteKey: "GET /" },
      },
    },
    validate: "E1020",
    cfnLint: "E1020",
  },
  {
    name: "a DependsOn on nothing",
    resources: { Q: { Type: "AWS::SQS::Queue", DependsOn: ["Nope"], Properties: {} } },
    validate: "E3005",
    cfnLint: "E3005",
  },
  {
    name: "an unknown resource type",
    resources: { X: { Type: "AWS::Nope::Thing", Properties: {} } },
    validate: "E3006",
    cfnLint: "E3006",
  },
];

const templateOf = (resources: Record<string, unknown>) =>
  JSON.stringify({ AWSTemplateFormatVersion: "2010-09-09", Resources: resources });

describe("the template linter", () => {
  let linter: TemplateLinter;
  let dir: string;
  /** The synthesized templates, by environment. */
  const synthesized = new Map<string, string>();
  /** The Python cfn-lint's findings on every file here, from one run (it starts slowly). */
  let cfnLintFindings: Finding[] = [];
  const pythonCfnLint = cfnLintVersion();
  const fileOf = (name: string) => join(dir, `${name.replaceAll(/\W+/g, "-")}.json`);

  beforeAll(() => {
    linter = createTemplateLinter();
    dir = mkdtempSync(join(tmpdir(), "template-lint-"));
    for (const { name, resources } of FAULTS) writeFileSync(fileOf(name), templateOf(resources));
    for (const env of ["dev", "prod"]) {
      const synth = synthGateway(env);
      synthesized.set(env, JSON.stringify(synth.template.toJSON()));
      rmSync(synth.outdir, { recursive: true, force: true });
      writeFileSync(fileOf(env), synthesized.get(env) as string);
    }
    if (pythonCfnLint !== null) {
      cfnLintFindings = runCfnLint([...FAULTS.map(({ name }) => name), "dev", "prod"].map(fileOf));
    }
  }, 120_000);
  afterAll(() => {
    linter?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cfnLintRules = (name: string) =>
    failing(cfnLintFindings.filter((finding) => finding.template === fileOf(name))).map(
      (finding) => finding.rule,
    );

  it.each(FAULTS)("reports $name as $validate", ({ name, resources, validate }) => {
    const rules = failing(linter.lint(name, templateOf(resources))).map((finding) => finding.rule);
    expect(rules).toEqual(validate === null ? [] : [validate]);
  });

  it.skipIf(pythonCfnLint === null).each(FAULTS)(
    "cfn-lint reports $name as $cfnLint",
    ({ name, cfnLint }) => {
      expect(cfnLintRules(name)).toEqual(cfnLint === null ? [] : [cfnLint]);
    },
  );

  it.each(["dev", "prod"])(
    "finds no error and no unexplained warning in the %s template",
    (env) => {
      expect(failing(linter.lint(env, synthesized.get(env) as string))).toEqual([]);
      if (pythonCfnLint !== null) expect(cfnLintRules(env)).toEqual([]);
    },
  );

  it("tags every taggable resource but the dashboard", () => {
    const resources = (
      JSON.parse(synthesized.get("prod") as string) as {
        Resources: Record<string, { Type: string; Properties?: { Tags?: unknown } }>;
      }
    ).Resources;
    const byType = (type: string) => Object.values(resources).filter((r) => r.Type === type);
    expect(byType("AWS::CloudWatch::Dashboard")[0]?.Properties?.Tags).toBeUndefined();
    for (const type of ["AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::SNS::Topic"]) {
      expect(byType(type)[0]?.Properties?.Tags).toEqual(
        expect.arrayContaining([{ Key: "project", Value: "rpc-gateway" }]),
      );
    }
  });
});
