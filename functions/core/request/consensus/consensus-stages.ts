import type { ConsensusConfig } from "../../config/consensus-schema.ts";
import { sitsOut } from "../../health/minority.ts";
import { callsOf, isCall } from "../../jsonrpc/jsonrpc.ts";
import { healthOf } from "../../routing/network-state.ts";
import { attemptCalls } from "../attempts/attempt-stages.ts";
import type { InFlight, Stage } from "../in-flight.ts";
import type { OpenCall } from "../vocabulary.ts";
import { type AgreementRule, decide } from "./agreement.ts";
import { type BallotCast, castsOf, dealBallots, pinnedToABlock, untried } from "./ballots.ts";
import { ignoredPaths } from "./canonical.ts";
import { type ConsensusCall, ConsensusRequest, outcomeText, worstOf } from "./consensus-calls.ts";
import { settleConsensusCall } from "./consensus-settle.ts";

/**
 * Where read consensus plugs into a request (docs/behaviour.md §17): the calls that need
 * agreement set apart before the attempts, each replaced in the attempt loop by one ballot per
 * participant (so the participants are asked in parallel, with the request's other calls, in
 * the same batches); after the attempts the votes are counted, one more provider is asked
 * where the rule says so, and each call gets the agreed answer or a clear error; the answer
 * says how each call fared (`x-gateway-consensus`).
 */

/** The consensus calls set apart, their ballots in the attempt loop instead. */
export const consensusApart: Stage = {
  name: "consensus apart",
  phase: "before attempts",
  run(flight) {
    const settings = flight.network.consensus;
    if (settings === null) return;
    const request = new ConsensusRequest(flight.options.parentConsensus);
    flight.consensus = request;
    const { state, now } = flight.scope.context;
    const taken = new Set<OpenCall>();
    const ballots: OpenCall[] = [];
    for (const entry of flight.routed) {
      if (entry.answer !== null || !settings.methods.includes(entry.info.method)) continue;
      // A notification gets no answer: nothing to agree on, and nothing to pay twice for.
      if (entry.call.rawId === null) continue;
      if (!pinnedToABlock(entry.call)) {
        request.settled(entry, { kind: "unpinned" });
        continue;
      }
      const slots = entry.order.filter(
        (slot) => !sitsOut(healthOf(state, slot.provider.name).consensus, now),
      );
      const call: ConsensusCall = {
        original: entry,
        slots,
        ballots: dealBallots(entry.call, slots, settings.agreement),
      };
      request.calls.push(call);
      taken.add(entry);
      ballots.push(...call.ballots);
    }
    if (taken.size === 0) return;
    flight.routed = [...flight.routed.filter((entry) => !taken.has(entry)), ...ballots];
  },
};

/** The votes counted, one more round where the rule asks for it, each call settled. */
export const consensus: Stage = {
  name: "consensus",
  phase: "attempts",
  run(flight) {
    const settings = flight.network.consensus;
    if (settings === null || flight.consensus === null || flight.consensus.calls.length === 0) {
      return;
    }
    return agree(flight, flight.consensus, settings);
  },
};

async function agree(
  flight: InFlight,
  request: ConsensusRequest,
  settings: ConsensusConfig,
): Promise<void> {
  const rule: AgreementRule = { agreement: settings.agreement, onDispute: settings.on_dispute };
  const pathsOf = (call: ConsensusCall) =>
    ignoredPaths(call.original.info.method, settings.ignore_fields);
  const casts = new Map<ConsensusCall, BallotCast[]>();
  const extras: OpenCall[] = [];
  for (const call of request.calls) {
    const cast = castsOf(call.ballots, pathsOf(call));
    casts.set(call, cast);
    const first = decide(cast, rule, false);
    if (first.kind !== "more") {
      settleConsensusCall(flight, settings, call, first, cast);
      continue;
    }
    const more = dealBallots(call.original.call, untried(call.slots, call.ballots), first.count);
    call.ballots.push(...more);
    extras.push(...more);
  }
  // Every call's extra participants at once, within what is left of the budget and deadline.
  if (extras.length > 0) flight.upstreamCalls += await attemptCalls(flight, extras, true);
  for (const call of request.calls) {
    if (request.outcomes.has(call.original)) continue;
    const before = casts.get(call) ?? [];
    const cast = [...before, ...castsOf(call.ballots.slice(before.length), pathsOf(call))];
    settleConsensusCall(flight, settings, call, decide(cast, rule, true), cast);
  }
  // A call no participant answered goes on as any call would: the unpinned resend (§10.4).
  const unanswered = request.calls
    .map((call) => call.original)
    .filter((entry) => entry.answer === null);
  if (unanswered.length > 0) flight.routed = [...flight.routed, ...unanswered];
  for (const { slot, detail } of request.minority.values()) {
    flight.container.consensus.inconsistent(
      flight.network,
      settings,
      slot,
      detail,
      flight.scope.writes,
    );
  }
}

/**
 * `x-gateway-consensus`, one value per call in the caller's order (under `diagnostic_headers`,
 * and only on a network with consensus, for a request with a consensus method in it).
 */
export const consensusOutcome: Stage = {
  name: "consensus outcome",
  phase: "answer",
  run(flight) {
    const { consensus: request, response } = flight;
    const settings = flight.network.consensus;
    if (request === null || settings === null || response === null) return;
    if (!flight.network.settings.diagnostic_headers) return;
    const members = callsOf(flight.request);
    const asks = (member: (typeof members)[number]) =>
      isCall(member) && settings.methods.includes(member.method);
    if (!members.some(asks)) return;
    const open = new Map(flight.open.map((entry) => [entry.call.position, entry]));
    const values = members.map((member) => {
      const entry = asks(member) ? open.get(member.position) : undefined;
      if (entry === undefined) return "none";
      if (entry.sentUnpinned) return "unpinned";
      const outcome =
        request.outcomes.get(entry) ??
        (flight.logQueries.includes(entry) ? worstOf(request.pieces) : null);
      if (outcome !== null) return outcomeText(outcome);
      return entry.answer !== null && entry.answeredBy === null ? "cached" : "none";
    });
    flight.response = {
      ...response,
      headers: { ...response.headers, "x-gateway-consensus": values.join(",") },
    };
  },
};
