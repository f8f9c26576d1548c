import { Annotations, Duration, type RemovalPolicy, Stack } from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import { LogGroupLogDestination, WebSocketApi, WebSocketStage } from "aws-cdk-lib/aws-apigatewayv2";
import { WebSocketLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS } from "../functions/core/subscriptions/websocket-quotas.ts";
import type { GatewayFunction } from "./constructs/node-function.ts";
import type { Throttle } from "./http-api.ts";
import { acknowledge, acknowledgeWildcardResources } from "./nag.ts";

/**
 * The WebSocket API in front of the socket function (docs/behaviour.md "Subscriptions over
 * WebSocket"): `$connect`, `$disconnect` and a two-way `$default` (its reply is the route's
 * response) on one Lambda proxy integration, one stage per network (the stage name is the
 * network: `wss://<api>/<network>`), each throttled and access-logged like the HTTP API's
 * stage, and the management API (`@connections`) for whoever pushes.
 */

export interface GatewayWebSocketApiProps {
  readonly env: string;
  readonly socket: IFunction;
  /** The config's networks: a stage each. */
  readonly networks: readonly string[];
  /** Every stage's throttle (messages and connects per second, burst). */
  readonly throttle: Throttle;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export interface GatewayWebSocketApi {
  readonly api: WebSocketApi;
  readonly stages: ReadonlyMap<string, WebSocketStage>;
  /** The management API's base URL (`https://<api>.execute-api.<region>.<suffix>`), without a stage. */
  readonly managementUrl: string;
  /**
   * Lets a function push to and close connections of every stage (`execute-api:ManageConnections`
   * on this API's `@connections`), and tells it where (`WEBSOCKET_MANAGEMENT_URL`).
   */
  grantPush(pusher: GatewayFunction): void;
}

/** Where a pushing function finds the management API (`connection-push.ts`'s `baseUrl`). */
export const WEBSOCKET_MANAGEMENT_URL = "WEBSOCKET_MANAGEMENT_URL";

/** API Gateway's default quota of stages per API (it can be raised). */
const DEFAULT_STAGES_QUOTA = 10;

export function addGatewayWebSocketApi(
  scope: Construct,
  props: GatewayWebSocketApiProps,
): GatewayWebSocketApi {
  const integration = new WebSocketLambdaIntegration("SocketIntegration", props.socket, {
    // The most a WebSocket API waits; the function's own timeout is under it.
    timeout: Duration.seconds(WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS),
  });
  const api = new WebSocketApi(scope, "WebSocketApi", {
    apiName: `rpc-gateway-${props.env}-ws`,
    description: `RPC gateway ${props.env}: JSON-RPC and eth_subscribe over WebSocket, a stage per EVM network`,
    connectRouteOptions: { integration },
    disconnectRouteOptions: { integration },
    defaultRouteOptions: { integration, returnResponse: true },
  });
  if (props.networks.length > DEFAULT_STAGES_QUOTA) {
    Annotations.of(api).addWarningV2(
      "rpc-gateway:websocket-stages",
      `${props.networks.length} networks need as many WebSocket stages; API Gateway allows ${DEFAULT_STAGES_QUOTA} per API unless its quota is raised`,
    );
  }
  const accessLogs = new LogGroup(scope, "WebSocketAccessLogs", {
    retention: props.logRetention,
    removalPolicy: props.removalPolicy,
  });
  const stages = new Map<string, WebSocketStage>();
  for (const network of props.networks) {
    stages.set(
      network,
      new WebSocketStage(scope, `WebSocketStage-${network}`, {
        webSocketApi: api,
        stageName: network,
        autoDeploy: true,
        throttle: props.throttle,
        accessLogSettings: {
          destination: new LogGroupLogDestination(accessLogs),
          // No query string and no headers: the API key travels in `?key=` or `x-api-key`.
          format: AccessLogFormat.custom(
            JSON.stringify({
              requestId: "$context.requestId",
              time: "$context.requestTimeEpoch",
              ip: "$context.identity.sourceIp",
              connectionId: "$context.connectionId",
              eventType: "$context.eventType",
              route: "$context.routeKey",
              messageId: "$context.messageId",
              status: "$context.status",
              integrationMs: "$context.integrationLatency",
              error: "$context.error.message",
              disconnectCode: "$context.disconnectStatusCode",
              userAgent: "$context.identity.userAgent",
            }),
          ),
        },
      }),
    );
  }
  acknowledge(
    api,
    "APIG4",
    "A public JSON-RPC endpoint like the providers it fronts: the optional API keys (x-api-key or ?key=, stored hashed) are checked by the socket function on $connect, as the proxy checks them; an authorizer would add an invocation to every connect.",
  );
  const stack = Stack.of(scope);
  const managementUrl = `https://${api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`;
  return {
    api,
    stages,
    managementUrl,
    grantPush(pusher) {
      const connections = `${stack.formatArn({ service: "execute-api", resource: api.apiId })}/*/*/@connections/*`;
      pusher.role.addToPolicy(
        new PolicyStatement({
          sid: "PushToConnections",
          actions: ["execute-api:ManageConnections"],
          resources: [connections],
        }),
      );
      pusher.function.addEnvironment(WEBSOCKET_MANAGEMENT_URL, managementUrl);
      acknowledgeWildcardResources(
        pusher.role,
        [connections],
        "Pushes go to connections API Gateway names at run time, on any of the API's stages (one per network): granted on this API's @connections and nothing wider.",
      );
    },
  };
}
