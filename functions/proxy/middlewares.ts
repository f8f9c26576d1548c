import type middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import type { Telemetry } from "../core/ports.ts";
import { internalErrorResult } from "./api.ts";

type ProxyMiddleware = middy.MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  Context
>;

/**
 * The last line of defence: whatever fails inside the gateway (a bug, the platform's early
 * timeout) is answered with a JSON-RPC error, HTTP 503, carrying the caller's id when the body
 * is one call whose id can be read, with the CORS headers, and never a stack trace.
 */
export function jsonRpcErrorBoundary(
  telemetry: Telemetry,
  corsOrigins: () => readonly string[],
): ProxyMiddleware {
  return {
    onError(request) {
      telemetry.log("error", "request failed inside the gateway", {
        error: request.error instanceof Error ? request.error.message : String(request.error),
      });
      request.response = internalErrorResult(request.event, corsOrigins());
    },
  };
}

/**
 * Request stats and metrics are written when due (every few seconds, never per request), and
 * never in the way of an answer: a due flush starts with a request and runs beside its
 * upstream call; the answer does not wait for it. What a frozen container has not flushed
 * goes with its next request.
 */
export function flushBesideRequest(flushIfDue: () => Promise<void>): ProxyMiddleware {
  return {
    before: () => {
      // Flushing never rejects; a failure is logged by the flusher and the counts dropped.
      flushIfDue().catch(() => undefined);
    },
  };
}
