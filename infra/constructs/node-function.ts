import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Duration, RemovalPolicy } from "aws-cdk-lib";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import {
  type ApplicationLogLevel,
  Architecture,
  LoggingFormat,
  type ParamsAndSecretsLayerVersion,
  Runtime,
  SystemLogLevel,
} from "aws-cdk-lib/aws-lambda";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { BUNDLED_CONFIG_PATH, bundledConfigCommands } from "./bundled-config.ts";

/**
 * ESM output cannot `require()`; CJS dependencies bundled into it still call it, so every
 * bundle starts by defining one (the Powertools example app's banner).
 */
/**
 * Build-time switches: `esbuildDetection` tells undici it is bundled, so it keeps only the
 * llhttp parser Node itself ships and leaves out its experimental second parser (~220 KB of
 * WebAssembly), as Node's own bundling of undici does.
 */
export const BUNDLE_DEFINES: Record<string, string> = { esbuildDetection: "true" };

export const CREATE_REQUIRE_BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

export interface GatewayFunctionProps {
  /** Repository root: esbuild's working directory and where `entry` and the config live. */
  readonly projectRoot: string;
  /** Handler file relative to the project root (exports `handler`). */
  readonly entry: string;
  /**
   * Config file relative to the project root, copied into the bundle as `config.json` with the
   * config prepared from it (`bundled-config.ts`).
   */
  readonly configFile: string;
  readonly memoryMb: number;
  readonly timeout: Duration;
  readonly environment: Readonly<Record<string, string>>;
  readonly logLevel: ApplicationLogLevel;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly reservedConcurrency?: number;
  readonly description: string;
  /**
   * The Parameters and Secrets Lambda Extension layer (for the function's architecture) and its
   * settings, for a function that reads SSM parameters or Secrets Manager secrets.
   */
  readonly paramsAndSecrets?: ParamsAndSecretsLayerVersion;
}

/**
 * A gateway Lambda: Node.js 24 on arm64, one minified ESM file with the AWS SDK bundled and
 * the environment's config beside it, JSON logs into its own log group, and a role that
 * starts with nothing but writing to that log group (no AWS managed policy).
 */
export class GatewayFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: GatewayFunctionProps) {
    super(scope, id);

    this.logGroup = new LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `${props.description}: execution role`,
    });
    this.logGroup.grantWrite(this.role);

    const configFile = props.configFile;
    this.function = new NodejsFunction(this, "Function", {
      description: props.description,
      entry: join(props.projectRoot, props.entry),
      handler: "handler",
      projectRoot: props.projectRoot,
      depsLockFilePath: join(props.projectRoot, "package-lock.json"),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memoryMb,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      applicationLogLevelV2: props.logLevel,
      systemLogLevelV2: SystemLogLevel.INFO,
      environment: { ...props.environment, BUNDLED_CONFIG_PATH },
      ...(props.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrency }),
      ...(props.paramsAndSecrets === undefined ? {} : { paramsAndSecrets: props.paramsAndSecrets }),
      bundling: {
        format: OutputFormat.ESM,
        minify: true,
        // No source maps: `--enable-source-maps` slows every `Error.stack` read on the hot path.
        sourceMap: false,
        mainFields: ["module", "main"],
        bundleAwsSDK: true,
        banner: CREATE_REQUIRE_BANNER,
        define: BUNDLE_DEFINES,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          // The file is read here, on the synth's machine: the commands carry its bytes.
          afterBundling: (_inputDir: string, outputDir: string) =>
            bundledConfigCommands(
              readFileSync(join(props.projectRoot, configFile), "utf8"),
              configFile,
              outputDir,
            ),
        },
      },
    });
    // The role's policy (log writes, and the grants the stack adds) exists before the function.
    this.function.node.addDependency(this.role);
  }
}
