import middy from "@middy/core";
import type { Context } from "aws-lambda";
import { ErrorCode, errorResponse } from "../core/jsonrpc/jsonrpc.ts";
import type { SocketRuntime } from "./runtime.ts";
import type { WebSocketEvent, WebSocketResult } from "./socket-event.ts";

export type SocketHandler = (event: WebSocketEvent, context: Context) => Promise<WebSocketResult>;

/**
 * The socket as Lambda runs it: the runtime behind middy, with the end-of-request flush and a
 * last line of defence: whatever fails inside (a bug, the platform's early timeout) refuses a
 * `$connect` with 500 and answers a message with a JSON-RPC error, never a stack trace. The
 * Lambda entry point and the local stack both serve this.
 */
export function createSocketHandler(runtime: SocketRuntime): SocketHandler {
  const telemetry = runtime.proxy.telemetry;
  return (
    middy<WebSocketEvent, WebSocketResult, Error, Context>()
      .use({
        onError(request) {
          telemetry.log("error", "socket event failed inside the gateway", {
            route: request.event?.requestContext?.routeKey,
            error: request.error instanceof Error ? request.error.message : String(request.error),
          });
          const body = errorResponse("null", ErrorCode.internal, "internal gateway error");
          request.response =
            request.event?.requestContext?.eventType === "MESSAGE"
              ? { statusCode: 200, body }
              : { statusCode: 500, body };
        },
      })
      // Stats and metrics as the proxy flushes them: when due, beside the event, never in its way.
      .use({
        before: () => {
          runtime.proxy.flushIfDue().catch(() => undefined);
        },
      })
      .handler((event, context) => runtime.handle(event, context.getRemainingTimeInMillis()))
  );
}
