import { parseJsonOrUndefined } from "../../jsonrpc/json-raw.ts";
import type { Call } from "../../jsonrpc/jsonrpc.ts";
import { blockRefOf } from "../../methods/block-ref.ts";
import { methodSpec } from "../../methods/catalogue.ts";
import type { AttemptSlot } from "../../routing/selection.ts";
import { openCall } from "../open-call.ts";
import type { OpenCall } from "../vocabulary.ts";
import type { Cast } from "./agreement.ts";
import { type Vote, voteOf } from "./votes.ts";

/**
 * The participants of a consensus call (docs/behaviour.md §17.3): each a ballot, an open call
 * of its own walking providers no other ballot of the call walks, so neither a retry nor a
 * hedge can make one provider vote twice; and what each ballot's answer votes.
 */

/**
 * Whether a call names the block it is about, so honest providers answer it alike: a number
 * (a tag pinned to the served head is one), `earliest`, a block hash, a log range between
 * numbers, or a lookup by a transaction's hash.
 */
export function pinnedToABlock(call: Call): boolean {
  const ref = blockRefOf(call.method, call.params);
  if (ref === null) return methodSpec(call.method).hashKeyed !== null;
  switch (ref.kind) {
    case "number":
    case "hash":
      return true;
    case "tag":
      return ref.tag === "earliest";
    case "range":
      return ref.from.kind === "number" && ref.to.kind === "number";
  }
}

/**
 * Deals `slots` among `count` ballots of `call`, one by one in order, so each ballot's first
 * provider is one of the call's best and its retries and hedges stay within its own share.
 */
export function dealBallots(call: Call, slots: readonly AttemptSlot[], count: number): OpenCall[] {
  const orders: AttemptSlot[][] = Array.from({ length: Math.min(count, slots.length) }, () => []);
  slots.forEach((slot, index) => {
    orders[index % orders.length]?.push(slot);
  });
  return orders.map((order) => openCall(call, order));
}

/** The slots of `order` no ballot has tried yet: where the extra participants come from. */
export function untried(
  order: readonly AttemptSlot[],
  ballots: readonly OpenCall[],
): AttemptSlot[] {
  const tried = new Set(
    ballots.flatMap((ballot) =>
      ballot.order.slice(0, ballot.next).map((slot) => slot.provider.name),
    ),
  );
  return order.filter((slot) => !tried.has(slot.provider.name));
}

/** A ballot's vote, with what it answered. */
export interface BallotCast extends Cast {
  readonly ballot: OpenCall;
  /** The answer member, parsed; undefined without an answer. */
  readonly member: unknown;
}

const NO_ANSWER: Vote = { kind: "none", why: "no answer" };

/**
 * What each ballot votes. Only a provider's answer votes: a ballot that failed everywhere, or
 * was answered by the gateway itself (over the request's upstream calls), casts none.
 */
export function castsOf(
  ballots: readonly OpenCall[],
  ignored: readonly (readonly string[])[],
): BallotCast[] {
  return ballots.map((ballot) => {
    const slot = ballot.answeredBy;
    if (ballot.answer === null || slot === null) {
      return { provider: "", vote: NO_ANSWER, ballot, member: undefined };
    }
    const member = parseJsonOrUndefined(ballot.answer);
    return {
      provider: slot.provider.name,
      vote: voteOf(member, ballot.info.method, ignored),
      ballot,
      member,
    };
  });
}

/** How events and errors name a vote: a short digest, or its class. */
export function shownVote(vote: Vote): string {
  switch (vote.kind) {
    case "value":
      return vote.key.slice("value:".length, "value:".length + 12);
    case "revert":
      return vote.data
        ? `revert ${vote.key.slice("revert:".length, "revert:".length + 12)}`
        : "revert";
    case "failed":
      return "execution failed";
    case "absent":
      return "not found";
    case "none":
      return vote.why;
  }
}

/** Where a call is about, for events and errors: its block, blocks or hash. */
export function whereOf(call: Call): string {
  const ref = blockRefOf(call.method, call.params);
  if (ref === null) {
    const [hash] = Array.isArray(call.params) ? call.params : [];
    return typeof hash === "string" ? `transaction ${hash.slice(0, 18)}` : "its hash";
  }
  switch (ref.kind) {
    case "number":
      return `block ${ref.number}`;
    case "hash":
      return `block ${ref.hash.slice(0, 18)}`;
    case "tag":
      return `block ${ref.tag}`;
    case "range":
      return `blocks ${ref.from.kind === "number" ? ref.from.number : ref.from.tag}-${ref.to.kind === "number" ? ref.to.number : ref.to.tag}`;
  }
}
