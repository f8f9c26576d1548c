import type { ConfigSourceEvent } from "./config-source.ts";
import type { FlushableTelemetry } from "./telemetry.ts";

/** Logs and counts what the config source reports (rejections, outages, changes). */
export function configEventLogger(getTelemetry: () => FlushableTelemetry | undefined) {
  return (event: ConfigSourceEvent): void => {
    const telemetry = getTelemetry();
    if (!telemetry) return;
    switch (event.type) {
      case "config_changed":
        telemetry.log("info", "config source changed", { source: event.source });
        break;
      case "config_rejected":
        telemetry.log("error", "config rejected: the previous config stays in force", {
          location: event.location,
          problems: event.problems,
        });
        telemetry.count("config_rejected", { reason: "invalid" });
        break;
      case "config_source_error":
        telemetry.log("warn", "config source unreachable: the previous config stays in force", {
          location: event.location,
          error: event.error,
        });
        telemetry.count("config_rejected", { reason: "unreachable" });
        break;
    }
  };
}
