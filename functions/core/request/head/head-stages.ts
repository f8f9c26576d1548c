import { unpinnedOrder } from "../admit.ts";
import { loopFor } from "../attempts/attempt-stages.ts";
import { runAttempts } from "../attempts/attempts.ts";
import type { InFlight, Stage } from "../in-flight.ts";
import { holdBackAboveServedHead, uncachedWhenHeld } from "./held-back.ts";
import { answerLoneCall, loneServedHeadCall } from "./lone-block-number.ts";
import { answerFromServedHead } from "./served-head.ts";
import { mayRetryUnpinned, settleUnpinnedRetries, unpinnedRetries } from "./unpinned-retry.ts";

/**
 * Where the served head plugs into a request (docs/behaviour.md §10): the short path of a lone
 * `eth_blockNumber`, the served head's answers, the resend of a call pinned above every
 * provider, the head published after the answers, and answers above the served head held back.
 */

/**
 * A lone `eth_blockNumber` the served head answers goes no further (`lone-block-number.ts`):
 * answered with no provider ranked and no attempt, and the head kept moving.
 */
export const loneBlockNumber: Stage = {
  name: "lone block number",
  phase: "intake",
  run(flight) {
    const { network, state, started, container } = flight;
    const alone = loneServedHeadCall(flight.request, network, state, started);
    if (alone === null) return;
    container.heads.afterRequest(network, state, flight.model.checkIntervalSeconds);
    flight.answerEarly(answerLoneCall({ network, alone, state, started }, container.deps));
  },
};

/** `eth_blockNumber` calls answered from the served head when it was published recently. */
export const servedHead: Stage = {
  name: "served head",
  phase: "before attempts",
  run(flight) {
    flight.fromHead = answerFromServedHead(flight.open, flight.scope.servedHead);
  },
};

/**
 * A call pinned to the served head that every provider answered from behind goes once more as
 * the caller wrote it (docs/behaviour.md §10.4), never hedged.
 */
export const unpinnedRetry: Stage = {
  name: "unpinned retries",
  phase: "attempts",
  run(flight) {
    if (!mayRetryUnpinned(flight.routed)) return;
    return resend(flight);
  },
};

async function resend(flight: InFlight): Promise<void> {
  const { ranked, context } = flight.scope;
  const retries = unpinnedRetries(flight.routed, (call) => unpinnedOrder(call, ranked, context));
  if (retries.length === 0) return;
  flight.upstreamCalls += await runAttempts(
    loopFor(
      flight,
      retries.map(({ retry }) => retry),
      false,
    ),
  );
  settleUnpinnedRetries(retries);
}

/**
 * After the answers: the request's `eth_blockNumber` calls answered with the served head, and
 * the highest head this container saw published, off the request path (`head-publication.ts`).
 */
export const publishHead: Stage = {
  name: "publish head",
  phase: "settle",
  run(flight) {
    flight.container.heads.settleRequest(
      flight.network,
      flight.state,
      flight.model.checkIntervalSeconds,
      { open: flight.open, view: flight.scope.servedHead },
      flight.fromHead,
    );
  },
};

/** Answers showing a block above the served head are `null` until it gets there (`held-back.ts`). */
export const holdBack: Stage = {
  name: "hold back",
  phase: "settle",
  run(flight) {
    flight.held = holdBackAboveServedHead(
      flight.open,
      flight.network,
      flight.scope.pin,
      flight.container.deps.telemetry,
    );
  },
};

/** A response with an answer held back is never cached by a CDN (GET mode). */
export const heldUncached: Stage = {
  name: "held back uncached",
  phase: "answer",
  run(flight) {
    if (flight.response === null) return;
    flight.response = uncachedWhenHeld(flight.response, flight.held);
  },
};
