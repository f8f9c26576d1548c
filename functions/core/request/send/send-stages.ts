import type { InFlight, Stage } from "../in-flight.ts";
import { startSends } from "./broadcast.ts";
import { isSend, providerKnowsTransaction, settleSentTransactions } from "./sent-transactions.ts";

/**
 * Where sending a transaction plugs into a request (docs/behaviour.md §4.12, §4.13): claimed
 * and copied to other providers before the attempts, its answer settled after them, its copies
 * waited for and its outcome recorded. A request that sends none skips all three, and their
 * awaits.
 */

/** The request's transactions claimed in the ledger, their copies started (`broadcast.ts`). */
export const sends: Stage = {
  name: "sends",
  phase: "before attempts",
  run(flight) {
    if (!flight.open.some(isSend)) return;
    flight.sending = true;
    return start(flight);
  },
};

async function start(flight: InFlight): Promise<void> {
  const { deps } = flight.container;
  flight.sends = await startSends(flight.open, flight.network.name, {
    ...deps,
    settings: flight.network.settings,
  });
}

/**
 * "Already known" becomes the hash; for "nonce too low" or no answer, providers are asked
 * whether they hold the transaction (`sent-transactions.ts`).
 */
export const checkSends: Stage = {
  name: "check sends",
  phase: "settle",
  run(flight) {
    if (!flight.sending) return;
    const { upstream, clock } = flight.container.deps;
    const { settings } = flight.network;
    return settleSentTransactions(flight.open, (call, hash) =>
      providerKnowsTransaction(upstream, call, hash, {
        timeoutMs: Math.min(settings.request_timeout_ms, flight.deadline - clock()),
        maxResponseBytes: settings.max_response_bytes,
      }),
    );
  },
};

/** The copies waited for until the deadline at the latest, and every outcome recorded. */
export const settleSends: Stage = {
  name: "settle sends",
  phase: "settle",
  run(flight) {
    if (!flight.sending) return;
    return flight.sends.settle(flight.deadline);
  },
};
