import type { Network, Provider } from "../config/network-model.ts";
import { historyNeedOf } from "../history/resources.ts";
import type { Telemetry } from "../ports.ts";
import { explainRouting, type SelectionContext } from "../routing/selection.ts";
import type { OpenCall } from "./vocabulary.ts";

export interface RequestReport {
  readonly network: Network;
  /** Calls in the request, answered at once or not. */
  readonly calls: number;
  readonly open: readonly OpenCall[];
  /** The request's routing, explained on the debug line; null when no provider was in question. */
  readonly routing: {
    readonly ranked: readonly Provider[];
    readonly context: SelectionContext;
  } | null;
  readonly used: readonly string[];
  readonly attempts: number;
  readonly status: number;
  readonly elapsedMs: number;
}

/**
 * A request's metrics (`requests`, `latency_ms`, `attempts`), and at debug level one line with
 * the routing explanation of its first call: why each provider did or did not get it. The
 * explanation is built only when debug lines are written.
 */
export function reportRequest(telemetry: Telemetry, report: RequestReport): void {
  const dimensions = { network: report.network.name };
  telemetry.measure("latency_ms", dimensions, report.elapsedMs, "Milliseconds");
  telemetry.measure("attempts", dimensions, report.attempts, "Count");
  telemetry.count("requests", dimensions);
  if (telemetry.enabled?.("debug") === false) return;
  const first = report.open[0];
  telemetry.log("debug", "request served", {
    network: report.network.name,
    calls: report.calls,
    method: first?.info.method,
    providers: report.used,
    attempts: report.attempts,
    status: report.status,
    ms: report.elapsedMs,
    routing:
      first && report.routing
        ? explainRouting(
            report.routing.ranked,
            first.info.method,
            report.routing.context,
            first.call.raw,
            null,
            null,
            historyNeedOf(
              first.info.method,
              first.info.params,
              report.routing.context.numberOfHash,
            ),
          ).map(({ provider, slot, reason }) => ({ provider: provider.name, slot, reason }))
        : [],
  });
}
