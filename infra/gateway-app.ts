import { App, type AppProps, Tags, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { environmentSettings } from "./environments.ts";
import { PROJECT_ROOT, readGatewayConfig } from "./gateway-config.ts";
import { GatewayStack } from "./gateway-stack.ts";

export interface GatewayAppOptions {
  readonly appProps?: AppProps;
  /** Repository root holding functions/ and config/ (default: this checkout). */
  readonly projectRoot?: string;
  /** Account and region used when the environment's settings leave them out. */
  readonly defaultEnv?: { readonly account?: string; readonly region?: string };
}

export interface GatewayApp {
  readonly app: App;
  readonly stack: GatewayStack;
}

/**
 * The CDK app of one environment, chosen by the `env` context (`-c env=dev`): one stack,
 * `RpcGateway-<env>`, checked by cdk-nag's AWS Solutions pack (any unacknowledged finding
 * fails the synth).
 */
export function createGatewayApp(options: GatewayAppOptions = {}): GatewayApp {
  const app = new App(options.appProps);
  const settings = environmentSettings(app.node.tryGetContext("env"));
  const projectRoot = options.projectRoot ?? PROJECT_ROOT;
  const defaults = options.defaultEnv ?? {
    account: process.env.CDK_DEFAULT_ACCOUNT,
    region: process.env.CDK_DEFAULT_REGION,
  };
  const account = settings.account ?? defaults.account;
  const region = settings.region ?? defaults.region;
  const stack = new GatewayStack(app, `RpcGateway-${settings.name}`, {
    settings,
    config: readGatewayConfig(settings.name, projectRoot),
    projectRoot,
    description: `RPC gateway (${settings.name}): resilient JSON-RPC endpoints for EVM networks`,
    terminationProtection: settings.deletionProtection,
    ...(account === undefined && region === undefined ? {} : { env: { account, region } }),
  });
  // CloudFormation only took Tags on AWS::CloudWatch::Dashboard in mid-2026; cfn-lint 1.51 and
  // any region or partition on an older resource schema reject the property (E3002), so the
  // dashboard stays untagged.
  const tagged = { excludeResourceTypes: ["AWS::CloudWatch::Dashboard"] };
  Tags.of(stack).add("project", "rpc-gateway", tagged);
  Tags.of(stack).add("environment", settings.name, tagged);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
