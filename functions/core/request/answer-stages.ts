import { callsOf } from "../jsonrpc/jsonrpc.ts";
import type { Stage } from "./in-flight.ts";
import { reportRequest } from "./report.ts";
import { assembleResponse } from "./respond.ts";

/**
 * The answer (docs/behaviour.md §2): assembled from every call's outcome, then reported as a
 * request of its own, or handed back to the request an internal call is part of.
 */

/** Each call's answer with the caller's id, in the caller's order, and the diagnostic headers. */
export const respond: Stage = {
  name: "respond",
  phase: "answer",
  run(flight) {
    const { scope } = flight;
    flight.response = assembleResponse(
      {
        network: flight.network,
        request: flight.request,
        open: flight.open,
        immediate: flight.immediate,
        used: scope.used,
        attempts: flight.upstreamCalls,
        // Attested when `latest` was pinned to it or it answered itself: a provider's own
        // `latest` may show a block above it (docs/behaviour.md §2.4).
        servedHead:
          scope.pin?.latest ?? (flight.fromHead.size > 0 ? scope.servedHead.answer : null),
      },
      flight.container.deps,
    );
  },
};

/** The request's metrics, and at debug level its routing explained (`report.ts`). */
export const report: Stage = {
  name: "report",
  phase: "answer",
  run(flight) {
    const { scope, container } = flight;
    reportRequest(container.deps.telemetry, {
      network: flight.network,
      calls: callsOf(flight.request).length,
      open: flight.open,
      routing: { ranked: scope.ranked, context: scope.context },
      used: scope.used,
      attempts: flight.upstreamCalls,
      status: flight.response?.status ?? 0,
      elapsedMs: container.deps.clock() - flight.started,
    });
  },
};

/** An internal call's outcome, for the request it is part of (`InternalCall.served`). */
export const handBack: Stage = {
  name: "hand back",
  phase: "answer",
  run(flight) {
    if (flight.internal === undefined) return;
    flight.internal.served = {
      entry: flight.open[0],
      upstreamCalls: flight.upstreamCalls,
      used: flight.scope.used,
    };
  },
};
