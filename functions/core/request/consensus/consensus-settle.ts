import type { ConsensusConfig } from "../../config/consensus-schema.ts";
import { isRecord } from "../../jsonrpc/envelope.ts";
import { ErrorCode, errorResponse } from "../../jsonrpc/jsonrpc.ts";
import { methodSpec } from "../../methods/catalogue.ts";
import type { InFlight } from "../in-flight.ts";
import { answer, answerFrom, failed, keep, note } from "../open-call.ts";
import type { Decision } from "./agreement.ts";
import { type BallotCast, shownVote, whereOf } from "./ballots.ts";
import type { ConsensusCall } from "./consensus-calls.ts";

/**
 * A consensus call settled by its decision (docs/behaviour.md §17.3): the agreed answer, one
 * of its voters' own text, byte for byte; the minority's incidents; or a clear error, which
 * nothing caches. Counted, metered and recorded by the container's `ConsensusBook`.
 */
export function settleConsensusCall(
  flight: InFlight,
  settings: ConsensusConfig,
  call: ConsensusCall,
  decision: Decision,
  casts: readonly BallotCast[],
): void {
  const { original } = call;
  const { network } = flight;
  const book = flight.container.consensus;
  const request = flight.consensus;
  const method = original.info.method;
  const where = whereOf(original.call);
  const providersOf = (indexes: readonly number[]) =>
    indexes.map((index) => casts[index]?.provider ?? "");
  switch (decision.kind) {
    case "agreed": {
      const voters = decision.voters.map((index) => casts[index] as BallotCast);
      const [winner] = voters;
      if (winner === undefined) return;
      handBack(original, winner);
      book.agreed(network, providersOf(decision.voters));
      // The caller's code may read what nodes legitimately differ on (gasleft() under each
      // node's gas cap): its minority is no proof of a wrong answer (as §4.6's force-rotate).
      const penalise = !methodSpec(method).runsCallersCode;
      for (const index of decision.minority) {
        const cast = casts[index];
        const slot = cast?.ballot.answeredBy;
        if (cast === undefined || slot === null || slot === undefined) continue;
        const detail = `${method} at ${where}: answered ${shownVote(cast.vote)} where ${providersOf(decision.voters).join(", ")} agreed on ${shownVote(winner.vote)}`;
        book.minorityVote(network, slot.provider.name, detail, penalise);
        if (penalise && !request?.minority.has(slot.provider.name)) {
          request?.minority.set(slot.provider.name, { slot, detail });
        }
      }
      book.called(network, "agreed");
      request?.settled(original, { kind: "agreed", by: voters.length });
      return;
    }
    case "unconfirmed": {
      const absent = casts[decision.absent];
      if (absent !== undefined) handBack(original, absent);
      book.called(network, "unconfirmed");
      request?.settled(original, { kind: "unconfirmed" });
      return;
    }
    case "disputed": {
      const answers = decision.groups.map((group) => ({
        providers: providersOf(group),
        answer: shownVote((casts[group[0] ?? 0] as BallotCast).vote),
      }));
      const summary = answers
        .map((group) => `${group.providers.join(", ")}: ${group.answer}`)
        .join("; ");
      book.disputed(
        network,
        decision.groups.flat().map((index) => casts[index]?.provider ?? ""),
        `${method} at ${where}: ${summary}`,
      );
      answer(
        original,
        errorResponse(
          original.call.rawId ?? "null",
          ErrorCode.internal,
          `consensus: providers disagree on ${method} at ${where} and no answer has a majority of ${settings.agreement} (${summary}); none is served or cached`,
          { consensus: "disputed", answers },
        ),
      );
      book.called(network, "disputed");
      request?.settled(original, { kind: "disputed" });
      return;
    }
    case "short": {
      const failed = call.ballots.find((ballot) => ballot.answer === null)?.lastError;
      const why =
        failed === undefined ? "" : `; last error: ${flight.container.deps.scrub(failed)}`;
      answer(
        original,
        errorResponse(
          original.call.rawId ?? "null",
          ErrorCode.internal,
          `consensus: ${method} at ${where} needs ${settings.agreement} providers to agree, and only ${decision.answered} gave this answer${why}; none is served or cached`,
          { consensus: "short", agreement: settings.agreement, answered: decision.answered },
        ),
      );
      book.called(network, "short");
      request?.settled(original, { kind: "short" });
      return;
    }
    case "no_votes":
      noVotes(call, casts);
      book.called(network, "no_votes");
      request?.settled(original, { kind: "no_votes" });
  }
}

function handBack(original: ConsensusCall["original"], cast: BallotCast): void {
  const { answer: text, answeredBy: slot } = cast.ballot;
  if (text !== null && slot !== null) answerFrom(original, text, slot);
}

/**
 * No answer to compare: an error a provider answered goes back as is (it is no value anyone
 * could be misled by); a result nobody could compare is not served; with no answer at all the
 * call ends as any call whose providers all failed, its participants' failures its own, so a
 * call pinned to a served head every provider is behind goes again as written (§10.4).
 */
function noVotes(call: ConsensusCall, casts: readonly BallotCast[]): void {
  const { original } = call;
  const error = casts.find((cast) => isRecord(cast.member) && "error" in cast.member);
  if (error !== undefined) {
    handBack(original, error);
    return;
  }
  if (casts.some((cast) => cast.member !== undefined)) {
    answer(
      original,
      errorResponse(
        original.call.rawId ?? "null",
        ErrorCode.internal,
        `consensus: no answer to ${original.info.method} could be compared; none is served`,
      ),
    );
    return;
  }
  for (const ballot of call.ballots) {
    for (const failure of ballot.failures) failed(original, failure, ballot.lastError);
  }
  const kept = call.ballots.find((ballot) => ballot.fallback !== null)?.fallback ?? null;
  if (kept !== null) keep(original, kept);
  note(
    original,
    call.ballots.at(-1)?.lastError ??
      "every provider is left out of consensus routing or unavailable",
  );
}
