import { upstreamCallBudget } from "../attempts/call-budget.ts";
import type { InFlight, Stage } from "../in-flight.ts";
import { logQueriesOf, serveLogQueries } from "./logs-queries.ts";
import { asksForLogs } from "./logs-range.ts";

/**
 * Where eth_getLogs over numbered blocks plugs into a request (docs/behaviour.md §12): set
 * apart from the attempt loop, then served whole or in pieces, each an internal call of this
 * request through the same stages (`logs-queries.ts`). Only the caller's request does this: an
 * internal call is never cut again.
 */

/** The log queries set apart; the other calls go to the attempt loop. */
export const logQueriesApart: Stage = {
  name: "log queries apart",
  phase: "before attempts",
  run(flight) {
    if (!asksForLogs(flight.open)) return;
    const logQueries = logQueriesOf(flight.open);
    if (logQueries.length === 0) return;
    flight.logQueries = logQueries;
    flight.routed = flight.open.filter((entry) => !logQueries.includes(entry));
  },
};

/** Each log query served within what is left of the request's upstream calls. */
export const logQueries: Stage = {
  name: "log queries",
  phase: "attempts",
  run(flight) {
    if (flight.logQueries.length === 0) return;
    return serve(flight);
  },
};

async function serve(flight: InFlight): Promise<void> {
  const { scope } = flight;
  flight.upstreamCalls += await serveLogQueries(flight.logQueries, {
    ...scope,
    knownHead: scope.quorumHead,
    budget: upstreamCallBudget(flight.network.settings, flight.callsMade),
    deadline: flight.deadline,
    deps: flight.container.deps,
    handle: (text, internal) => flight.handleInternally(text, internal),
  });
}
