import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import {
  CfnIntegration,
  type CfnStage,
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
} from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import {
  CORS_ALLOW_HEADERS,
  CORS_ALLOW_METHODS,
  CORS_EXPOSE_HEADERS,
  CORS_MAX_AGE_SECONDS,
} from "../functions/core/http/cors.ts";
import {
  API_ROUTES,
  INTEGRATION_TIMEOUT_SECONDS,
  routeKeyOf,
} from "../functions/core/http/http-api.ts";
import { acknowledge } from "./nag.ts";

export interface Throttle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

export interface GatewayHttpApiProps {
  readonly env: string;
  readonly proxy: IFunction;
  /** Browser origins allowed by CORS (the config's `cors_origins`). */
  readonly corsOrigins: readonly string[];
  /** The stage's throttle, which every JSON-RPC route gets. */
  readonly throttle: Throttle;
  /** The status routes' own, tighter throttle. */
  readonly statusThrottle: Throttle;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export interface GatewayHttpApi {
  readonly api: HttpApi;
  readonly stage: HttpStage;
}

const CORS_METHOD: Record<(typeof CORS_ALLOW_METHODS)[number], CorsHttpMethod> = {
  GET: CorsHttpMethod.GET,
  POST: CorsHttpMethod.POST,
  OPTIONS: CorsHttpMethod.OPTIONS,
};

/**
 * The HTTP API in front of the proxy: payload 2.0 on the shared route table, CORS preflights
 * answered by API Gateway from the shared CORS policy, the `$default` stage throttled (status
 * routes far tighter) and access logs in their own group. Its constructs keep the ids they
 * had directly in the stack, so the API (and its URL) is never replaced by this module.
 */
export function addGatewayHttpApi(scope: Construct, props: GatewayHttpApiProps): GatewayHttpApi {
  const api = new HttpApi(scope, "HttpApi", {
    apiName: `rpc-gateway-${props.env}`,
    description: `RPC gateway ${props.env}: one JSON-RPC endpoint per EVM network`,
    createDefaultStage: false,
    corsPreflight: {
      allowOrigins: [...props.corsOrigins],
      allowMethods: CORS_ALLOW_METHODS.map((method) => CORS_METHOD[method]),
      allowHeaders: [...CORS_ALLOW_HEADERS],
      exposeHeaders: [...CORS_EXPOSE_HEADERS],
      maxAge: Duration.seconds(CORS_MAX_AGE_SECONDS),
    },
  });
  const integration = new HttpLambdaIntegration("ProxyIntegration", props.proxy, {
    payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
  });
  const statusRoutes = API_ROUTES.filter((route) => route.throttle === "status");
  const routes = API_ROUTES.flatMap((route) =>
    api.addRoutes({ path: route.path, methods: [HttpMethod[route.method]], integration }),
  );
  // 30 s, above the function's 29 s, so a function that runs out of time is Lambda's 500 and
  // not API Gateway's 503 for giving up first. HTTP APIs allow 30 s; CDK's timeout option
  // stops at REST's 29 s, hence the override.
  for (const child of api.node.findAll()) {
    if (child instanceof CfnIntegration) {
      child.addPropertyOverride("TimeoutInMillis", INTEGRATION_TIMEOUT_SECONDS * 1000);
    }
  }

  const accessLogs = new LogGroup(scope, "ApiAccessLogs", {
    retention: props.logRetention,
    removalPolicy: props.removalPolicy,
  });
  const stage = new HttpStage(scope, "DefaultStage", {
    httpApi: api,
    stageName: "$default",
    autoDeploy: true,
    throttle: props.throttle,
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      // No query string and no headers: an API key may travel in `?key=` or `x-api-key`.
      format: AccessLogFormat.custom(
        JSON.stringify({
          requestId: "$context.requestId",
          time: "$context.requestTimeEpoch",
          ip: "$context.identity.sourceIp",
          method: "$context.httpMethod",
          route: "$context.routeKey",
          path: "$context.path",
          status: "$context.status",
          bytes: "$context.responseLength",
          latencyMs: "$context.responseLatency",
          integrationMs: "$context.integrationLatency",
          integrationStatus: "$context.integrationStatus",
          integrationError: "$context.integrationErrorMessage",
          error: "$context.error.message",
          userAgent: "$context.identity.userAgent",
        }),
      ),
    },
  });
  const cfnStage = stage.node.defaultChild as CfnStage;
  cfnStage.routeSettings = Object.fromEntries(
    statusRoutes.map((route) => [
      routeKeyOf(route),
      // A JSON-typed property: CDK passes it through as is, so the keys are CloudFormation's.
      {
        ThrottlingRateLimit: props.statusThrottle.rateLimit,
        ThrottlingBurstLimit: props.statusThrottle.burstLimit,
      },
    ]),
  );
  // Route settings name routes by key: CloudFormation must create the routes first.
  for (const route of routes) stage.node.addDependency(route);

  acknowledge(
    api,
    "APIG4",
    "A public JSON-RPC endpoint like the providers it fronts: the optional API keys (x-api-key or ?key=, stored hashed) are checked in the proxy handler; an authorizer would add latency and cost to every request.",
  );
  return { api, stage };
}
