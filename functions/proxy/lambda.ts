import middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { flushBesideRequest, jsonRpcErrorBoundary } from "./middlewares.ts";
import type { ProxyRuntime } from "./runtime.ts";

export type ProxyHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * The proxy as Lambda runs it: the runtime behind middy, with the JSON-RPC error boundary and
 * the end-of-request flush. The Lambda entry point and the local stack both serve this.
 */
export function createProxyHandler(runtime: ProxyRuntime): ProxyHandler {
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>()
    .use(jsonRpcErrorBoundary(runtime.telemetry, () => runtime.corsOrigins()))
    .use(flushBesideRequest(() => runtime.flushIfDue()))
    .handler((event, context) => runtime.handle(event, context.getRemainingTimeInMillis()));
}
