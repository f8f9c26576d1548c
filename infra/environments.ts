import { RemovalPolicy } from "aws-cdk-lib";
import { ApplicationLogLevel } from "aws-cdk-lib/aws-lambda";
import { RetentionDays } from "aws-cdk-lib/aws-logs";

/**
 * Per-environment settings of the deployed gateway: the ONE place where dev and prod differ.
 * `local` is an environment of the config files (config/local.json, `npm start`) but is never
 * deployed by CDK.
 */

/** A wrong environment name or config file: reported as one line, without a stack trace. */
export class SetupError extends Error {
  override readonly name = "SetupError";
}

export const DEPLOYED_ENVIRONMENTS = ["dev", "prod"] as const;
export type DeployedEnvironmentName = (typeof DEPLOYED_ENVIRONMENTS)[number];

export interface AlarmSettings {
  /** HTTP API 5xx responses as a percentage of all requests that raises the 5xx alarm. */
  readonly serverErrorRatePercent: number;
  /** The 5xx rate is judged over periods of this many minutes... */
  readonly serverErrorPeriodMinutes: number;
  /** ...and only when a period saw at least this many requests (no alarm on 1 of 2). */
  readonly serverErrorMinRequests: number;
  /** Minutes of a network being served by a backup (`backup_in_use` ≥ 1) before alarming. */
  readonly backupInUseMinutes: number;
  /** Consecutive minutes without quorum (`quorum_size` < 1) before alarming. */
  readonly noQuorumMinutes: number;
  /** Consecutive minutes with no primary available (`primaries_available` < 1). */
  readonly primariesDownMinutes: number;
  /** Consecutive minutes without a monitor tick (`monitor_ticks` < 1 or missing). */
  readonly monitorMissingMinutes: number;
  /** Consecutive minutes in which a network's monitor tick failed (`monitor_errors` ≥ 1). */
  readonly monitorErrorMinutes: number;
  /** Consecutive minutes in which the config object could not be read from S3. */
  readonly configUnreachableMinutes: number;
  /** Optional e-mail subscribed to the alarm topic (confirm the subscription once). */
  readonly email?: string;
}

export interface EnvironmentSettings {
  readonly name: DeployedEnvironmentName;
  /** Target account; unset → CDK_DEFAULT_ACCOUNT (the credentials in use), else env-agnostic. */
  readonly account?: string;
  /** Target region; unset → CDK_DEFAULT_REGION, else env-agnostic. */
  readonly region?: string;
  readonly proxy: {
    readonly memoryMb: number;
    /**
     * Reserved concurrency: the most proxy invocations that run at once. A flood beyond it is
     * throttled by Lambda instead of taking the account's concurrency or running the bill
     * without bound. AWS keeps 100 of the account's concurrency unreserved, so the account's
     * quota must be at least this + the socket's + 1 (the monitor) + 2 (the follower) + 100.
     */
    readonly reservedConcurrency: number;
  };
  readonly monitor: { readonly memoryMb: number };
  /** The head follower (docs/behaviour.md "Subscriptions over WebSocket"): one run a minute. */
  readonly follower: { readonly memoryMb: number };
  /**
   * The socket function behind the WebSocket API (docs/behaviour.md "Subscriptions over
   * WebSocket"): its memory, its reserved concurrency (the account's quota must cover it too),
   * and every stage's throttle (connects and messages per second, burst).
   */
  readonly socket: {
    readonly memoryMb: number;
    readonly reservedConcurrency: number;
    readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  };
  /** Lambda application log level (Powertools honours the Lambda logging config). */
  readonly logLevel: ApplicationLogLevel;
  /** Retention of the Lambda log groups and the API access log group. */
  readonly logRetention: RetentionDays;
  readonly api: {
    /** Stage-level throttling: steady requests per second and burst bucket size. */
    readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
    /**
     * The status routes' own throttle, far under the stage's: each status request reads every
     * network's state, and a page that refreshes itself needs well under one a second.
     */
    readonly statusThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  };
  readonly alarms: AlarmSettings;
  /**
   * Where `${NAME}` placeholders are read: SSM Parameter Store SecureStrings or Secrets
   * Manager secrets under `/rpc-gateway/<env>/`. Only that service is granted to the Lambdas.
   */
  readonly secretsSource: "ssm" | "secretsmanager";
  /** Removal policy of the stateful resources (table, bucket, log groups). */
  readonly removalPolicy: RemovalPolicy;
  /** DynamoDB deletion protection and CloudFormation stack termination protection. */
  readonly deletionProtection: boolean;
}

export const ENVIRONMENTS: Readonly<Record<DeployedEnvironmentName, EnvironmentSettings>> = {
  dev: {
    name: "dev",
    proxy: { memoryMb: 512, reservedConcurrency: 20 },
    monitor: { memoryMb: 256 },
    follower: { memoryMb: 256 },
    socket: {
      memoryMb: 512,
      reservedConcurrency: 10,
      throttle: { rateLimit: 50, burstLimit: 100 },
    },
    logLevel: ApplicationLogLevel.DEBUG,
    logRetention: RetentionDays.ONE_WEEK,
    api: {
      throttle: { rateLimit: 50, burstLimit: 100 },
      statusThrottle: { rateLimit: 2, burstLimit: 5 },
    },
    alarms: {
      serverErrorRatePercent: 10,
      serverErrorPeriodMinutes: 5,
      serverErrorMinRequests: 20,
      backupInUseMinutes: 10,
      noQuorumMinutes: 3,
      primariesDownMinutes: 3,
      monitorMissingMinutes: 3,
      monitorErrorMinutes: 3,
      configUnreachableMinutes: 15,
    },
    secretsSource: "ssm",
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
  },
  prod: {
    name: "prod",
    proxy: { memoryMb: 1024, reservedConcurrency: 200 },
    monitor: { memoryMb: 256 },
    follower: { memoryMb: 256 },
    socket: {
      memoryMb: 1024,
      reservedConcurrency: 100,
      throttle: { rateLimit: 500, burstLimit: 1000 },
    },
    logLevel: ApplicationLogLevel.INFO,
    logRetention: RetentionDays.THREE_MONTHS,
    api: {
      throttle: { rateLimit: 1000, burstLimit: 2000 },
      statusThrottle: { rateLimit: 5, burstLimit: 10 },
    },
    alarms: {
      serverErrorRatePercent: 2,
      serverErrorPeriodMinutes: 5,
      serverErrorMinRequests: 50,
      backupInUseMinutes: 10,
      noQuorumMinutes: 2,
      primariesDownMinutes: 2,
      monitorMissingMinutes: 3,
      monitorErrorMinutes: 3,
      configUnreachableMinutes: 15,
    },
    secretsSource: "ssm",
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
  },
};

/** Where an environment's secrets live: `/rpc-gateway/<env>/<NAME>`. */
export function secretsPrefixOf(env: string): string {
  return `/rpc-gateway/${env}/`;
}

/** The settings of `name` (the `-c env=<name>` context value), or a clear error. */
export function environmentSettings(name: unknown): EnvironmentSettings {
  const valid = DEPLOYED_ENVIRONMENTS.join(", ");
  if (name === undefined || name === null || name === "") {
    throw new SetupError(`no environment given: pass -c env=<name> with one of: ${valid}`);
  }
  if (name === "local") {
    throw new SetupError(
      `environment "local" is not deployed (it runs with \`npm start\`); deployable environments: ${valid}`,
    );
  }
  if (typeof name === "string" && Object.hasOwn(ENVIRONMENTS, name)) {
    return ENVIRONMENTS[name as DeployedEnvironmentName];
  }
  throw new SetupError(`unknown environment "${String(name)}": use one of: ${valid}`);
}
