import type { AttemptSlot } from "../../routing/selection.ts";
import type { OpenCall } from "../vocabulary.ts";

/**
 * A request's consensus calls (docs/behaviour.md §17): each call that needs agreement with the
 * calls that ask its participants, and how each fared, for `x-gateway-consensus`. The request's
 * internal calls (a log query's pieces, a filter's reads) report theirs to it.
 */

/** How one call fared. */
export type ConsensusOutcome =
  | { readonly kind: "agreed"; readonly by: number }
  | { readonly kind: "unconfirmed" | "disputed" | "short" | "no_votes" | "unpinned" };

/** A call that needs agreement: the caller's, and one ballot per participant asked. */
export interface ConsensusCall {
  readonly original: OpenCall;
  /** The call's order less the providers sitting out of consensus routing. */
  readonly slots: readonly AttemptSlot[];
  /** Each a walk of its own over providers no other ballot of the call walks. */
  readonly ballots: OpenCall[];
}

export class ConsensusRequest {
  readonly calls: ConsensusCall[] = [];
  readonly outcomes = new Map<OpenCall, ConsensusOutcome>();
  /** Outcomes of the internal calls made for this request's calls (a log query's pieces). */
  readonly pieces: ConsensusOutcome[] = [];
  /** The request this one is an internal call of, which hears of its outcomes. */
  readonly parent: ConsensusRequest | undefined;
  /**
   * Providers this request found in the minority, each with its first minority's slot and
   * detail: one incident each, however many of its calls (a batch's lies are one incident).
   */
  readonly minority = new Map<string, { readonly slot: AttemptSlot; readonly detail: string }>();

  constructor(parent: ConsensusRequest | undefined) {
    this.parent = parent;
  }

  settled(entry: OpenCall, outcome: ConsensusOutcome): void {
    this.outcomes.set(entry, outcome);
    this.parent?.pieces.push(outcome);
  }
}

/** Worst first: a piece's failure is the whole answer's. */
const RANK: Readonly<Record<ConsensusOutcome["kind"], number>> = {
  disputed: 0,
  short: 1,
  no_votes: 2,
  unconfirmed: 3,
  unpinned: 4,
  agreed: 5,
};

/** What an answer made of pieces shows: its worst piece's outcome (the fewest who agreed). */
export function worstOf(pieces: readonly ConsensusOutcome[]): ConsensusOutcome | null {
  let worst: ConsensusOutcome | null = null;
  for (const piece of pieces) {
    if (
      worst === null ||
      RANK[piece.kind] < RANK[worst.kind] ||
      (piece.kind === "agreed" && worst.kind === "agreed" && piece.by < worst.by)
    ) {
      worst = piece;
    }
  }
  return worst;
}

/** The outcome as `x-gateway-consensus` names it. */
export function outcomeText(outcome: ConsensusOutcome): string {
  return outcome.kind === "agreed" ? `agreed-${outcome.by}` : outcome.kind.replace("_", "-");
}
