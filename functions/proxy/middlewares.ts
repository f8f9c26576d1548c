import type middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { memberValueSpan } from "../core/json-raw.ts";
import { ErrorCode, errorResponse } from "../core/jsonrpc.ts";
import type { Telemetry } from "../core/ports.ts";

type ProxyMiddleware = middy.MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  Context
>;

/**
 * The last line of defence: whatever fails inside the gateway (a bug, the platform's early
 * timeout) is answered with a JSON-RPC error, HTTP 500, carrying the caller's id when the body
 * is one call whose id can be read, and never a stack trace.
 */
export function jsonRpcErrorBoundary(telemetry: Telemetry): ProxyMiddleware {
  return {
    onError(request) {
      telemetry.log("error", "request failed inside the gateway", {
        error: request.error instanceof Error ? request.error.message : String(request.error),
      });
      request.response = {
        statusCode: 500,
        headers: { "content-type": "application/json" },
        body: errorResponse(callerId(request.event), ErrorCode.internal, "internal gateway error"),
      };
    },
  };
}

const ID_TEXT = /^(?:"(?:[^"\\]|\\.){0,256}"|-?\d{1,32}(?:\.\d{1,32})?(?:[eE][+-]?\d{1,8})?|null)$/;

/** The id of a single-call body as JSON text, when it is a plain string, number or null. */
function callerId(event: APIGatewayProxyEventV2 | undefined): string {
  const raw = event?.body;
  if (raw === undefined || event?.isBase64Encoded) return "null";
  const body = raw.trimStart();
  if (!body.startsWith("{")) return "null";
  const span = memberValueSpan(body, "id");
  const id = span === null ? null : body.slice(span.start, span.end);
  return id !== null && ID_TEXT.test(id) ? id : "null";
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
