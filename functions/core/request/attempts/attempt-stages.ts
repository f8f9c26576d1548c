import type { InFlight, Stage } from "../in-flight.ts";
import { asksForLogs } from "../logs/logs-range.ts";
import { runLogAttempts } from "../logs/logs-reach.ts";
import type { OpenCall } from "../vocabulary.ts";
import { type AttemptLoop, runAttempts } from "./attempts.ts";
import { settleWrites } from "./health-recorder.ts";
import { settlePenalties } from "./penalties.ts";

/**
 * The attempts and what they leave to settle (docs/behaviour.md §4, §6): the calls the loop
 * takes walked over their providers; the penalties held until the request is over; the state
 * writes the request started, waited for a little.
 */

/** The attempt loop over `open` for this request; `hedged`: its first attempts may be hedged. */
export function loopFor(flight: InFlight, open: readonly OpenCall[], hedged: boolean): AttemptLoop {
  const { container, network } = flight;
  const { deps } = container;
  return {
    upstream: deps.upstream,
    clock: deps.clock,
    deadline: flight.deadline,
    settings: flight.limits,
    configuredMaxUpstreamCalls: network.settings.max_upstream_calls,
    single: flight.scope.single,
    body: flight.body,
    open,
    judge: flight,
    callsMade: flight.callsMade,
    hedging: hedged ? container.hedging.forRequest(network) : undefined,
  };
}

/**
 * Rounds of attempts until every call the loop takes is settled (`attempts.ts`). Log answers
 * are judged against their blocks (`logs-reach.ts`) only in a request that asks for logs.
 */
export const attempts: Stage = {
  name: "attempts",
  phase: "attempts",
  run: attempt,
};

async function attempt(flight: InFlight): Promise<void> {
  flight.upstreamCalls += await attemptCalls(flight, flight.routed, true);
}

/**
 * Rounds of attempts over `open` for this request (a stage's own calls: consensus's extra
 * participants); returns the upstream calls made, which the caller adds to the request's.
 */
export function attemptCalls(
  flight: InFlight,
  open: readonly OpenCall[],
  hedged: boolean,
): Promise<number> {
  const loop = loopFor(flight, open, hedged);
  return asksForLogs(open)
    ? runLogAttempts(loop, flight.scope, flight.container.reach, flight.options)
    : runAttempts(loop);
}

/** The penalties the request's failures earned, now that its calls are settled (`penalties.ts`). */
export const penalties: Stage = {
  name: "penalties",
  phase: "settle",
  run(flight) {
    const { scope, network } = flight;
    if (scope.held.length === 0) return;
    const { health, deps } = flight.container;
    settlePenalties(scope.held, scope.context, {
      telemetry: deps.telemetry,
      lastSuccessAt: (provider) => health.lastSuccessAt(network, provider),
      penalise: (attempt, verdict, methods) => health.penalise(attempt, verdict, methods),
    });
  },
};

/** The state writes the request started: the answer waits for them a little (`health-recorder.ts`). */
export const stateWrites: Stage = {
  name: "state writes",
  phase: "settle",
  run(flight) {
    const { writes } = flight.scope;
    if (writes.length === 0) return;
    return settleWrites(writes, flight.container.deps.wait);
  },
};
