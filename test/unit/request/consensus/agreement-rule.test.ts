import { describe, expect, it } from "vitest";
import {
  type AgreementRule,
  type Cast,
  type Decision,
  decide,
} from "../../../../functions/core/request/consensus/agreement.ts";
import type { Vote } from "../../../../functions/core/request/consensus/votes.ts";

/**
 * The agreement rule (docs/behaviour.md §17.3): which answer goes out, who is in the minority,
 * when one more provider is asked, and when the caller gets a clear error instead.
 */

const A: Vote = { kind: "value", key: "value:a" };
const B: Vote = { kind: "value", key: "value:b" };
const C: Vote = { kind: "value", key: "value:c" };
const ABSENT: Vote = { kind: "absent" };
const NONE: Vote = { kind: "none", why: "rate limited" };
const REVERT_X: Vote = { kind: "revert", key: "revert:0x01", data: true };
const REVERT_Y: Vote = { kind: "revert", key: "revert:0x02", data: true };
const REVERT_BARE: Vote = { kind: "revert", key: "revert", data: false };

const ASK_MORE: AgreementRule = { agreement: 2, onDispute: "ask_more" };
const ERROR: AgreementRule = { agreement: 2, onDispute: "error" };
const THREE: AgreementRule = { agreement: 3, onDispute: "ask_more" };

const casts = (...votes: Vote[]): Cast[] =>
  votes.map((vote, index) => ({ provider: `p${index}`, vote }));

describe("the agreement rule", () => {
  it.each<[string, Cast[], AgreementRule, boolean, Decision]>([
    ["two agree", casts(A, A), ASK_MORE, false, { kind: "agreed", voters: [0, 1], minority: [] }],
    [
      "two differ: one more is asked",
      casts(A, B),
      ASK_MORE,
      false,
      { kind: "more", count: 1, why: "dispute" },
    ],
    [
      "two differ, on_dispute error: a clear error at once",
      casts(A, B),
      ERROR,
      false,
      { kind: "disputed", groups: [[0], [1]] },
    ],
    [
      "the third decides by majority; the other is the minority",
      casts(A, B, B),
      ASK_MORE,
      true,
      { kind: "agreed", voters: [1, 2], minority: [0] },
    ],
    [
      "three different answers: no majority",
      casts(A, B, C),
      ASK_MORE,
      true,
      { kind: "disputed", groups: [[0], [1], [2]] },
    ],
    [
      "the extra provider failed: no majority",
      casts(A, B, NONE),
      ASK_MORE,
      true,
      { kind: "disputed", groups: [[0], [1]] },
    ],
    [
      "a rate limit or timeout is no vote: one more is asked",
      casts(A, NONE),
      ASK_MORE,
      false,
      { kind: "more", count: 1, why: "short" },
    ],
    [
      "nobody answered: as many more as agreement needs",
      casts(NONE, NONE),
      ASK_MORE,
      false,
      { kind: "more", count: 2, why: "short" },
    ],
    [
      "still one answer after the extra round: too few",
      casts(A, NONE, NONE),
      ASK_MORE,
      true,
      { kind: "short", answered: 1 },
    ],
    [
      "not found yet is no vote against a value",
      casts(A, ABSENT),
      ASK_MORE,
      false,
      { kind: "more", count: 1, why: "short" },
    ],
    [
      "another provider confirms the value: the one without it is no minority",
      casts(A, ABSENT, A),
      ASK_MORE,
      true,
      { kind: "agreed", voters: [0, 2], minority: [] },
    ],
    [
      "nobody confirms it: not found yet, as a node without it answers",
      casts(A, ABSENT, ABSENT),
      ASK_MORE,
      true,
      { kind: "unconfirmed", absent: 1 },
    ],
    [
      "every provider says not found: agreed",
      casts(ABSENT, ABSENT),
      ASK_MORE,
      false,
      { kind: "agreed", voters: [0, 1], minority: [] },
    ],
    ["no comparable answer at all", casts(NONE, NONE, NONE), ASK_MORE, true, { kind: "no_votes" }],
    [
      "reverts with the same data agree",
      casts(REVERT_X, REVERT_X),
      ASK_MORE,
      false,
      { kind: "agreed", voters: [0, 1], minority: [] },
    ],
    [
      "a revert without data agrees with one that has it, which is handed back",
      casts(REVERT_BARE, REVERT_X),
      ASK_MORE,
      false,
      { kind: "agreed", voters: [1, 0], minority: [] },
    ],
    [
      "reverts with different data differ",
      casts(REVERT_X, REVERT_Y),
      ASK_MORE,
      false,
      { kind: "more", count: 1, why: "dispute" },
    ],
    [
      "a revert against a value is a dispute",
      casts(REVERT_X, A),
      ASK_MORE,
      false,
      { kind: "more", count: 1, why: "dispute" },
    ],
    [
      "agreement 3: two of three is not enough",
      casts(A, A, B),
      THREE,
      false,
      { kind: "more", count: 1, why: "dispute" },
    ],
    [
      "agreement 3: three of four",
      casts(A, A, B, A),
      THREE,
      true,
      { kind: "agreed", voters: [0, 1, 3], minority: [2] },
    ],
    [
      "agreement 3: two against two",
      casts(A, A, B, B),
      THREE,
      true,
      {
        kind: "disputed",
        groups: [
          [0, 1],
          [2, 3],
        ],
      },
    ],
  ])("%s", (_, given, rule, final, expected) => {
    expect(decide(given, rule, final)).toEqual(expected);
  });

  it("a provider votes once: a hedge's or a retry's second answer from it is not counted", () => {
    const twice: Cast[] = [
      { provider: "liar", vote: A },
      { provider: "liar", vote: A },
      { provider: "honest", vote: B },
    ];
    expect(decide(twice, ASK_MORE, true)).toEqual({ kind: "disputed", groups: [[0], [2]] });
  });
});
