import { callsOf, errorResponse, parseRequest } from "../jsonrpc/jsonrpc.ts";
import { DEADLINE_MARGIN_MS } from "../policies.ts";
import type { NetworkState } from "../routing/network-state.ts";
import { admitCalls } from "./admit.ts";
import { needsFreshHead } from "./head/served-head.ts";
import type { InFlight, Stage } from "./in-flight.ts";
import { JSON_HEADERS, unknownNetwork } from "./respond.ts";
import { requestScope } from "./scope.ts";

/**
 * The intake (docs/behaviour.md §2): the network named, the body parsed, the network's state
 * read, what the request knows drawn once, and each call admitted or answered at once.
 */

/** The network the path names, from the config in force; an unknown one is answered 404. */
export const resolveNetwork: Stage = {
  name: "network",
  phase: "intake",
  run(flight) {
    const model = flight.container.deps.model();
    const network = model.networks.get(flight.networkName);
    if (network === undefined) {
      flight.answerEarly(unknownNetwork(flight.networkName, [...model.networks.keys()]));
      return;
    }
    flight.model = model;
    flight.network = network;
  },
};

/** The body as JSON-RPC within the network's limits; a body that is not is answered here. */
export const parse: Stage = {
  name: "parse",
  phase: "intake",
  run(flight) {
    const { settings } = flight.network;
    const request = parseRequest(flight.body, {
      maxBodyBytes: settings.max_body_bytes,
      maxBatch: settings.max_batch,
      maxDepth: settings.max_json_depth,
    });
    if (request.kind === "error") {
      flight.answerEarly({
        status: request.status,
        headers: { ...JSON_HEADERS },
        body: errorResponse(request.rawId, request.code, request.message),
      });
      return;
    }
    flight.request = request;
  },
};

/**
 * When the request started and must be answered by, and the network's state: the served head
 * needs a copy of the chain position no older than `head_cache_ms` (docs/behaviour.md §10.2).
 */
export const readState: Stage = {
  name: "state",
  phase: "intake",
  run(flight) {
    const { settings } = flight.network;
    const { options } = flight;
    flight.started = options.startedAt ?? flight.container.deps.clock();
    flight.deadline =
      flight.started +
      Math.min(
        settings.request_deadline_ms,
        (options.remainingMs ?? Infinity) - DEADLINE_MARGIN_MS,
      );
    const budget = flight.internal?.budget;
    flight.limits = budget === undefined ? settings : { ...settings, max_upstream_calls: budget };
    const freshHead = needsFreshHead(callsOf(flight.request));
    const state = flight.container.deps.cache.current(flight.network.name, { freshHead });
    if (!(state instanceof Promise)) {
      flight.state = state;
      return;
    }
    return read(flight, state);
  },
};

async function read(flight: InFlight, reading: Promise<NetworkState>): Promise<void> {
  flight.state = await reading;
}

/** What the request knows before its first attempt, drawn once so a batch agrees (`scope.ts`). */
export const drawScope: Stage = {
  name: "scope",
  phase: "intake",
  run(flight) {
    const { container } = flight;
    flight.scope = requestScope(
      flight.model,
      flight.network,
      flight.request,
      flight.body,
      flight.state,
      flight.started,
      container.scopeDeps,
    );
  },
};

/** Each call admitted with its attempt order, or answered at once (`admit.ts`). */
export const admit: Stage = {
  name: "admit",
  phase: "intake",
  run(flight) {
    const { open, immediate } = admitCalls(
      flight.request,
      flight.network,
      flight.scope,
      flight.container.deps.guards,
    );
    flight.open = open;
    flight.immediate = immediate;
    // Every admitted call goes to the attempt loop unless a later stage serves it apart.
    flight.routed = open;
  },
};
