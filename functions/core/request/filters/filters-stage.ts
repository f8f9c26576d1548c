import { upstreamCallBudget } from "../attempts/call-budget.ts";
import type { InFlight, Stage } from "../in-flight.ts";
import { servedHere } from "./filter-id.ts";
import { serveFilterCalls } from "./filters.ts";

/**
 * Filters the gateway holds (docs/behaviour.md §14), answered before the attempt loop from its
 * own reads of the chain, each an internal call of this request. A request with no such call,
 * or a gateway without a filter store, skips the step.
 */
export const filters: Stage = {
  name: "filters",
  phase: "before attempts",
  run(flight) {
    if (flight.container.deps.filters === undefined || !flight.open.some(servedHere)) return;
    return serve(flight);
  },
};

async function serve(flight: InFlight): Promise<void> {
  const { deps } = flight.container;
  flight.upstreamCalls += await serveFilterCalls(flight.open, {
    ...flight.scope,
    caller: flight.options.caller,
    deadline: flight.deadline,
    budget: upstreamCallBudget(flight.network.settings, flight.sends.copies),
    deps,
    handle: (text, internal) => flight.handleInternally(text, internal),
  });
}
