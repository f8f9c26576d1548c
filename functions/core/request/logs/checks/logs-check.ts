import type { AttemptSlot } from "../../../routing/selection.ts";
import type { RequestScope } from "../../vocabulary.ts";
import type { LogChecks } from "./logs-check-state.ts";
import type { Shown } from "./logs-companions.ts";

/**
 * A log answer's check (docs/behaviour.md §12.12): what it is given (`AnswerCheck`), what its
 * own upstream calls come to (`CheckCall`) and what it finds (`AnswerVerdict`). The words the
 * check's modules share, so none of them imports another for a type.
 */

export type AnswerVerdict =
  /** Used; `shown`: the block the provider showed to be at (its reach), if one was asked. */
  | { readonly kind: "use"; readonly shown: number | null }
  /** The provider did not show the block the answer needs (`toBlock`, or the hash). */
  | { readonly kind: "behind"; readonly block: number | null; readonly detail: string }
  /** The answer lacks data its block's header commits to. */
  | {
      readonly kind: "missing";
      readonly block: number;
      readonly reason: "missing_data" | "stale_log";
      readonly detail: string;
    }
  /** No call or time was left to check it: dropped, never used unchecked. */
  | { readonly kind: "unchecked"; readonly detail: string };

/** What a check's own upstream call came to. */
export type CheckCall =
  | { readonly kind: "answer"; readonly member: unknown }
  | { readonly kind: "failed" }
  | { readonly kind: "no_room"; readonly why: string };

export interface AnswerCheck {
  readonly scope: RequestScope;
  readonly checks: LogChecks;
  readonly slot: AttemptSlot;
  /** What the provider showed beside its answer (one batch), or null when nothing came back. */
  readonly shown: Shown | null;
  /** Where the provider was last seen: spares a final range's answer its reach check. */
  readonly confirmedHead: number | null;
  /** The next provider of the call's order, for a tie-break its own provider cannot give. */
  readonly other: AttemptSlot | null;
  /** One call of the check's own, within the request's calls and deadline. */
  readonly call: (slot: AttemptSlot, body: string) => Promise<CheckCall>;
}
