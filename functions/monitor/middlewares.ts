import type middy from "@middy/core";
import type { Context, ScheduledEvent } from "aws-lambda";
import type { FlushableTelemetry } from "../adapters/telemetry.ts";
import type { MonitorLoopResult } from "../core/monitor/loop.ts";

/**
 * A run that fails outside a tick (the config cannot load, the lease store is down) is logged
 * scrubbed, with the metrics gathered so far, before Lambda records the failure (missing ticks
 * then raise the monitor alarm); the error still fails the invocation.
 */
export function reportFailedRun<Result = MonitorLoopResult>(
  telemetry: FlushableTelemetry,
  message = "monitor run failed",
): middy.MiddlewareObj<ScheduledEvent, Result, Error, Context> {
  return {
    onError(request) {
      telemetry.log("error", message, {
        error: request.error instanceof Error ? request.error.message : String(request.error),
      });
      telemetry.flush();
    },
  };
}
