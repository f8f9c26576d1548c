import middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { EarlyTimeouts } from "./early-timeout.ts";
import { flushBesideRequest, jsonRpcErrorBoundary } from "./middlewares.ts";
import type { ProxyRuntime } from "./runtime.ts";

export type ProxyHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * The proxy as Lambda runs it: the runtime behind middy, with the JSON-RPC error boundary, the
 * end-of-request flush and the early timeout. The Lambda entry point and the local stack both
 * serve this.
 */
export function createProxyHandler(runtime: ProxyRuntime): ProxyHandler {
  const timeouts = new EarlyTimeouts();
  // middy's own early timeout is off: EarlyTimeouts does the same with one timer for all.
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>({
    timeoutEarlyInMillis: 0,
  })
    .use(jsonRpcErrorBoundary(runtime.telemetry, () => runtime.corsOrigins()))
    .use(flushBesideRequest(() => runtime.flushIfDue()))
    .handler((event, context) => {
      const remainingMs = context.getRemainingTimeInMillis();
      return timeouts.race(runtime.handle(event, remainingMs), remainingMs);
    });
}
