import { Duration } from "aws-cdk-lib";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Schedule, ScheduleExpression } from "aws-cdk-lib/aws-scheduler";
import { LambdaInvoke } from "aws-cdk-lib/aws-scheduler-targets";
import type { Construct } from "constructs";
import type { GatewayFunction } from "./constructs/node-function.ts";
import { acknowledgeWildcardResources } from "./nag.ts";

/**
 * The head follower's function in the stack (docs/behaviour.md "Subscriptions over
 * WebSocket", where the follower runs): EventBridge Scheduler starts it every minute; each run
 * lasts ~63 s (functions/core/follower/follow-run.ts), so with a reserved concurrency of 2 the next
 * run is already waiting for each network's lease when the one before gives it back. A run
 * finding no subscription anywhere ends at once.
 */

/** The follower's own memory in the state table: its cursor and the logs a reorg re-sends. */
export const FOLLOWER_TABLE_ACCESS = {
  actions: ["GetItem", "UpdateItem"],
  partitions: ["WSFOLLOW#*"],
} as const;

/** A run is ~63 s; the timeout leaves it room to finish its last step and give the lease back. */
export const FOLLOWER_TIMEOUT = Duration.seconds(90);
/** Two runs at once: the one ending and the one taking over. */
export const FOLLOWER_CONCURRENCY = 2;

export function scheduleFollower(
  scope: Construct,
  props: { readonly env: string; readonly account: string },
  follower: GatewayFunction,
): void {
  const { env, account } = props;
  // A start throttled or failed is dropped, not retried: the next minute's run comes.
  follower.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
  const role = new Role(scope, "FollowerScheduleRole", {
    assumedBy: new ServicePrincipal("scheduler.amazonaws.com", {
      conditions: { StringEquals: { "aws:SourceAccount": account } },
    }),
    description: `RPC gateway ${env}: lets EventBridge Scheduler start the head follower`,
  });
  new Schedule(scope, "FollowerSchedule", {
    description: `RPC gateway ${env}: start a head follower run every minute`,
    schedule: ScheduleExpression.rate(Duration.minutes(1)),
    target: new LambdaInvoke(follower.function, {
      role,
      retryAttempts: 0,
      maxEventAge: Duration.minutes(1),
    }),
  });
  acknowledgeWildcardResources(
    role,
    [`${follower.function.functionArn}:*`],
    "CDK's grantInvoke adds the function's qualified ARNs (versions, aliases) next to the function itself; the role can invoke the follower function and nothing else.",
  );
}
