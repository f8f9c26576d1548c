import { readFileSync } from "node:fs";

import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { createGatewayApp, type GatewayApp } from "../../infra/gateway-app.ts";
import { PROJECT_ROOT } from "../../infra/gateway-config.ts";
import { scratchOutdir } from "../support/scratch-outdir.ts";

/** The context `cdk` passes from cdk.json (feature flags), so tests synth what deploys do. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, "cdk.json"), "utf8")) as {
    context: Record<string, unknown>;
  }
).context;

export interface Synthesized extends GatewayApp {
  readonly template: Template;
  readonly outdir: string;
}

export interface SynthOptions {
  /**
   * Run esbuild for real and CDK's CloudFormation schema validation (both slow, ~3 s each);
   * by default bundling is skipped for every stack and the schema check left to the bundle
   * test and `npm run synth`.
   */
  readonly bundle?: boolean;
  readonly defaultEnv?: { readonly account?: string; readonly region?: string };
}

/** One synth of the environment's app into a fresh temp dir. */
export function synthGateway(env: string, options: SynthOptions = {}): Synthesized {
  const outdir = scratchOutdir(`rpc-gateway-cdk-${env}-`);
  const context: Record<string, unknown> = { ...CDK_JSON_CONTEXT, env };
  if (!options.bundle) context["aws:cdk:bundling-stacks"] = [];
  const gateway = createGatewayApp({
    appProps: { context, outdir, builtinCloudFormationValidation: options.bundle === true },
    defaultEnv: options.defaultEnv ?? {},
  });
  return { ...gateway, template: Template.fromStack(gateway.stack), outdir };
}
