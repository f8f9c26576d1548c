import type { InFlight, Stage } from "../in-flight.ts";
import { type CacheLookup, withCacheOutcome } from "./answer-cache.ts";

/**
 * Where the answer cache plugs into a request (docs/behaviour.md §11): looked up before any
 * attempt, fed after them, and named in the response.
 */

/** Each call looked up in memory, then in the shared tier: a hit is the call's answer. */
export const cacheLookup: Stage = {
  name: "cache lookup",
  phase: "before attempts",
  run(flight) {
    const lookup = flight.container.answers.lookup(
      flight.model,
      flight.network,
      flight.request,
      flight.open,
      flight.state.head,
      flight.options,
    );
    if (!(lookup instanceof Promise)) {
      flight.cache = lookup;
      return;
    }
    return awaitShared(flight, lookup);
  },
};

async function awaitShared(flight: InFlight, lookup: Promise<CacheLookup>): Promise<void> {
  flight.cache = await lookup;
}

/** The answers providers gave to calls that missed, kept as their class and the bounds allow. */
export const cacheStore: Stage = {
  name: "cache store",
  phase: "settle",
  run(flight) {
    flight.container.answers.store(flight.model, flight.cache);
  },
};

/** `x-gateway-cache` and the lone call's class (GET mode's Cache-Control). */
export const cacheOutcome: Stage = {
  name: "cache outcome",
  phase: "answer",
  run(flight) {
    if (flight.response === null) return;
    flight.response = withCacheOutcome(flight.response, flight.cache, flight.request);
  },
};
