import type { LogLevel, Telemetry } from "../../functions/core/ports.ts";

/**
 * A telemetry that keeps what it was told, for tests to read: every log line with its fields,
 * every count (`counts`, as called), and every count and measurement as a metric with its value
 * (`metrics`, in the order they came).
 */
export interface RecordingTelemetry extends Telemetry {
  readonly logs: Array<{ level: LogLevel; message: string; fields: Record<string, unknown> }>;
  readonly counts: Array<{ name: string; dimensions: Record<string, string> }>;
  readonly metrics: Array<{ name: string; dimensions: Record<string, string>; value: number }>;
}

export function recordingTelemetry(): RecordingTelemetry {
  const logs: RecordingTelemetry["logs"] = [];
  const counts: RecordingTelemetry["counts"] = [];
  const metrics: RecordingTelemetry["metrics"] = [];
  return {
    logs,
    counts,
    metrics,
    log: (level, message, fields = {}) => logs.push({ level, message, fields }),
    count: (name, dimensions, value = 1) => {
      counts.push({ name, dimensions });
      metrics.push({ name, dimensions, value });
    },
    measure: (name, dimensions, value) => metrics.push({ name, dimensions, value }),
  };
}
