import type { Vote } from "./votes.ts";

/**
 * The agreement rule (docs/behaviour.md §17.3), pure: the votes of a call's participants in,
 * what to do out. Each provider votes once (a second vote of the same provider, from a hedge or
 * a retry, is not counted). Answers that agree form a group; the largest group wins when it
 * holds `agreement` votes and more than any other. A revert without its data joins the largest
 * group of reverts. `absent` (not found yet) never votes against a value.
 */

export interface Cast {
  readonly provider: string;
  readonly vote: Vote;
}

export interface AgreementRule {
  readonly agreement: number;
  readonly onDispute: "ask_more" | "error";
}

export type Decision =
  /** `voters` (indexes into the casts, first the one whose answer is handed back) agree. */
  | {
      readonly kind: "agreed";
      readonly voters: readonly number[];
      /** Casts that voted for another answer. */
      readonly minority: readonly number[];
    }
  /** Ask `count` more providers, then decide for good. */
  | { readonly kind: "more"; readonly count: number; readonly why: "dispute" | "short" }
  /** Answers differ and none has a majority. */
  | { readonly kind: "disputed"; readonly groups: readonly (readonly number[])[] }
  /** No answer was given by enough providers, and none contradicts it. */
  | { readonly kind: "short"; readonly answered: number }
  /** Nobody contradicts an answer too few gave, but some have not got it yet: theirs (`absent`). */
  | { readonly kind: "unconfirmed"; readonly absent: number }
  /** No answer to compare at all (every participant failed, or gave no comparable answer). */
  | { readonly kind: "no_votes" };

/**
 * Decides on `casts`. `final`: no more providers will be asked (the extra round was had, or
 * there is nobody left).
 */
export function decide(casts: readonly Cast[], rule: AgreementRule, final: boolean): Decision {
  const counted = oneVoteEach(casts);
  const absent = counted.filter((index) => casts[index]?.vote.kind === "absent");
  const groups = groupsOf(casts, counted);
  const [top, second] = groups;
  if (top !== undefined && top.length >= rule.agreement && top.length > (second?.length ?? 0)) {
    return { kind: "agreed", voters: top, minority: groups.slice(1).flat() };
  }
  if (top === undefined && absent.length >= rule.agreement) {
    return { kind: "agreed", voters: absent, minority: [] };
  }
  const conflict = groups.length > 1;
  if (!final) {
    if (conflict) {
      return rule.onDispute === "ask_more"
        ? { kind: "more", count: 1, why: "dispute" }
        : { kind: "disputed", groups };
    }
    const have = top?.length ?? absent.length;
    return { kind: "more", count: rule.agreement - have, why: "short" };
  }
  if (conflict) return { kind: "disputed", groups };
  const [firstAbsent] = absent;
  if (firstAbsent !== undefined) return { kind: "unconfirmed", absent: firstAbsent };
  if (top !== undefined) return { kind: "short", answered: top.length };
  return { kind: "no_votes" };
}

/** The casts that count: one per provider (its first), and only real votes or `absent`. */
function oneVoteEach(casts: readonly Cast[]): number[] {
  const seen = new Set<string>();
  const counted: number[] = [];
  casts.forEach((cast, index) => {
    if (cast.vote.kind === "none" || seen.has(cast.provider)) return;
    seen.add(cast.provider);
    counted.push(index);
  });
  return counted;
}

/**
 * The groups of agreeing votes, largest first (ties: the one voted first). A revert without its
 * data goes to the largest group of reverts with data, or to a group of its own kind.
 */
function groupsOf(casts: readonly Cast[], counted: readonly number[]): number[][] {
  const byKey = new Map<string, number[]>();
  const bareReverts: number[] = [];
  for (const index of counted) {
    const vote = casts[index]?.vote;
    if (vote === undefined || vote.kind === "absent" || vote.kind === "none") continue;
    if (vote.kind === "revert" && !vote.data) {
      bareReverts.push(index);
      continue;
    }
    const group = byKey.get(vote.key);
    if (group === undefined) byKey.set(vote.key, [index]);
    else group.push(index);
  }
  const bySize = (groups: number[][]) =>
    groups.sort((a, b) => b.length - a.length || (a[0] ?? 0) - (b[0] ?? 0));
  if (bareReverts.length > 0) {
    const [revertGroup] = bySize(
      [...byKey.entries()].filter(([key]) => key.startsWith("revert:")).map(([, group]) => group),
    );
    if (revertGroup === undefined) byKey.set("revert", bareReverts);
    else revertGroup.push(...bareReverts);
  }
  // Each group is in the order of the casts (a revert with its data before one without).
  return bySize([...byKey.values()]);
}
