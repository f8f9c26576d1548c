import { describe, expect, it } from "vitest";
import {
  computeQuorum,
  type HeadCheck,
  type QuorumReason,
  type QuorumSettings,
} from "../../../functions/core/chain/quorum.ts";

/**
 * One provider claiming a head far ahead of the others must not capture the quorum: not with
 * future block timestamps (excluded before grouping, so it cannot win a tie), not with a
 * current timestamp when at least two others answered (more than `max_ahead_blocks` beyond
 * their median), and not when only one other answered: two heads more than `max_ahead_blocks`
 * apart whose timestamps say they are level cannot both be honest, and the higher one is out
 * (a quorum head too low is corrected at a later check; one too high is served for good).
 */

/** The monitor's clock: block timestamps (s) are compared with it. */
const NOW_S = 1_800_000_000;
const NOW = NOW_S * 1000;

const SETTINGS: QuorumSettings = {
  max_lag_seconds: 60,
  max_ahead_blocks: 500,
  failed_recently_checks: 2,
  failing_often: {
    window_seconds: 300,
    min_requests: 20,
    error_ratio: 0.5,
    missed_checks: 10,
    missed_ratio: 0.5,
    exclude_seconds: 300,
  },
};

/** An answer at block `number` whose block timestamp is `secondsFromNow` from the clock. */
const head = (provider: string, number: number, secondsFromNow = 0): HeadCheck => ({
  provider,
  answer: { number, timestamp: NOW_S + secondsFromNow },
  chainIdOk: null,
});

interface Row {
  name: string;
  checks: HeadCheck[];
  head: number | null;
  members: string[];
  excluded?: Record<string, QuorumReason>;
  settings?: Partial<QuorumSettings>;
  divider?: number;
  recordedFinalizedHash?: string;
}

describe("quorum capture by one provider", () => {
  it.each<Row>([
    // Two providers: a tie goes to the highest group, so a liar 1,000 blocks ahead would win.
    {
      name: "2 providers: 1,000 blocks ahead with future timestamps is ahead; the honest one is the head",
      checks: [head("honest", 20_000_000, -2), head("liar", 20_001_000, 12_000)],
      head: 20_000_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "2 providers: a timestamp exactly max_lag_seconds in the future is still plausible",
      checks: [head("a", 100, 0), head("b", 101, 60)],
      head: 101,
      members: ["a", "b"],
    },
    {
      name: "2 providers: 61 s in the future is ahead",
      checks: [head("a", 100, 0), head("b", 101, 61)],
      head: 100,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "regression: 2 providers, current timestamps, one 100,000 blocks ahead won the tie and became the head; now it is ahead and the lower head is the quorum's",
      checks: [head("honest", 20_000_000, 0), head("liar", 20_100_000, 0)],
      head: 20_000_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "2 providers: the far-ahead one is out whatever the order of the checks",
      checks: [head("liar", 20_100_000, 0), head("honest", 20_000_000, -1)],
      head: 20_000_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "2 providers: exactly max_ahead_blocks apart with level timestamps, both stay in",
      checks: [head("a", 1_000, 0), head("b", 1_500, 0)],
      head: 1_500,
      members: ["a", "b"],
    },
    {
      name: "2 providers: max_ahead_blocks + 1 apart with level timestamps, the higher is ahead",
      checks: [head("a", 1_000, 0), head("b", 1_501, 0)],
      head: 1_000,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "2 providers: far apart with the higher one's timestamp exactly max_lag_seconds later, the higher is ahead",
      checks: [head("a", 1_000, -60), head("b", 2_000, 0)],
      head: 1_000,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "2 providers: far apart with the higher one's timestamp max_lag_seconds + 1 later, the lower is behind",
      checks: [head("a", 1_000, -61), head("b", 2_000, 0)],
      head: 2_000,
      members: ["b"],
      excluded: { a: "behind" },
    },
    {
      // The honest head's block is a few seconds old; the liar's timestamp is just inside the
      // future bound, so it was "more than max_lag_seconds later" than the honest one's.
      name: "regression: 2 providers, a liar 100,000 blocks ahead with a timestamp max_lag_seconds in the future was judged later than the honest head, became the quorum head and pushed the honest one out as behind; now a timestamp past the clock counts as now, and the liar is ahead",
      checks: [head("honest", 20_000_000, -6), head("liar", 20_100_000, 60)],
      head: 20_000_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "2 providers, one down and one on the wrong chain beside them: a liar with a timestamp just inside the future bound is still ahead",
      checks: [
        head("honest", 20_000_000, -11),
        { provider: "down", answer: { error: "timeout" }, chainIdOk: null },
        { ...head("other-chain", 5, -1), chainIdOk: false },
        head("liar", 20_000_501, 59),
      ],
      divider: 20,
      head: 20_000_000,
      members: ["honest"],
      excluded: { down: "no_answer", "other-chain": "wrong_chain", liar: "ahead" },
    },
    {
      name: "2 providers: a current head far above one whose timestamp is more than max_lag_seconds old is no liar: the old one is behind",
      checks: [head("stale", 20_000_000, -61), head("current", 20_100_000, 30)],
      head: 20_100_000,
      members: ["current"],
      excluded: { stale: "behind" },
    },
    {
      name: "2 providers, every answer in the future (the monitor's clock is behind): timestamps are compared as they are",
      checks: [head("stale", 20_000_000, 3_600), head("current", 20_100_000, 7_200)],
      head: 20_100_000,
      members: ["current"],
      excluded: { stale: "behind" },
    },
    {
      name: "regression: a block number past 2^53 (a lone answer, the other provider down) became the quorum head, and so the served head for good; now it is ahead and there is no head",
      checks: [
        head("liar", 2 ** 60, 0),
        { provider: "down", answer: { error: "timeout" }, chainIdOk: null },
      ],
      head: null,
      members: [],
      excluded: { liar: "ahead", down: "no_answer" },
    },
    {
      name: "2 providers: 2^53 - 1 is still a block number (judged against the other answer as any)",
      checks: [head("a", 2 ** 53 - 1, 0), head("b", 2 ** 53 - 2, 0)],
      head: 2 ** 53 - 1,
      members: ["a", "b"],
    },
    {
      name: "a head of 0 (a fresh devnet) is a head like any other",
      checks: [head("a", 0, 0), head("b", 0, -1)],
      head: 0,
      members: ["a", "b"],
    },
    {
      name: "2 providers: a far-ahead head with an older timestamp than the other's is ahead too",
      checks: [head("honest", 1_000, 0), head("liar", 100_000, -3_600)],
      head: 1_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "2 providers: a stale provider (old block, old timestamp) is behind and the current one is the head",
      checks: [head("stale", 19_999_000, -12_000), head("current", 20_000_000, 0)],
      head: 20_000_000,
      members: ["current"],
      excluded: { stale: "behind" },
    },
    {
      name: "2 providers: one catching up after a restart, 5,000 blocks and an hour behind, is behind until it is back",
      checks: [head("current", 20_000_000, 0), head("restarted", 19_995_000, -3_600)],
      head: 20_000_000,
      members: ["current"],
      excluded: { restarted: "behind" },
    },
    {
      name: "2 providers: the restarted one back within max_lag_seconds is a member again",
      checks: [head("current", 20_000_000, 0), head("restarted", 19_999_996, -48)],
      head: 20_000_000,
      members: ["current", "restarted"],
    },
    {
      // 0.4 s blocks: 500 blocks are 200 s, so a gap of that many blocks shows in the timestamps.
      name: "2 providers on a fast chain: 600 blocks behind is 240 s behind, behind, not the other ahead",
      checks: [head("fast", 5_000_600, 0), head("slow", 5_000_000, -240)],
      head: 5_000_600,
      members: ["fast"],
      excluded: { slow: "behind" },
    },
    {
      name: "2 providers on a fast chain: 100 blocks (40 s) apart, both members",
      checks: [head("fast", 5_000_100, 0), head("slow", 5_000_000, -40)],
      head: 5_000_100,
      members: ["fast", "slow"],
    },
    {
      // 0.05 s blocks: 60 s are 1,200 blocks, beyond the default 500.
      name: "2 providers on a chain faster than max_lag_seconds / max_ahead_blocks: raising max_ahead_blocks keeps both",
      checks: [head("fast", 5_001_000, 0), head("slow", 5_000_000, -50)],
      settings: { max_ahead_blocks: 2_000 },
      head: 5_001_000,
      members: ["fast", "slow"],
    },
    {
      name: "2 providers: a future timestamp is judged first, so the honest lower one is the head",
      checks: [head("honest", 1_000, 0), head("liar", 100_000, 3_600)],
      head: 1_000,
      members: ["honest"],
      excluded: { liar: "ahead" },
    },
    {
      name: "every answer in the future: the monitor's clock is suspect, nobody is excluded for it",
      checks: [head("a", 100, 3_600), head("b", 100, 3_600)],
      head: 100,
      members: ["a", "b"],
    },
    {
      name: "every answer in the future and far apart: block numbers are still judged, the higher is ahead",
      checks: [head("a", 100, 3_600), head("b", 10_000, 3_600)],
      head: 100,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "2 providers, block_majority_divider 100: far apart, the higher is ahead",
      checks: [head("a", 20_000_050, 0), head("b", 20_100_000, 0)],
      divider: 100,
      head: 20_000_050,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "2 providers, block_majority_divider 100: within max_ahead_blocks, grouped as before (the higher group)",
      checks: [head("a", 20_000_050, -2), head("b", 20_000_150, 0)],
      divider: 100,
      head: 20_000_150,
      members: ["a", "b"],
    },
    {
      name: "2 providers, block_majority_divider 1,000: one group yet 899 blocks apart with level timestamps, the higher is ahead (judged before grouping, as with 3 providers)",
      checks: [head("a", 20_000_001, 0), head("b", 20_000_900, 0)],
      divider: 1_000,
      head: 20_000_001,
      members: ["a"],
      excluded: { b: "ahead" },
    },
    {
      name: "2 providers: one on another fork far ahead is wrong_fork, not ahead, and does not vote",
      checks: [
        { ...head("a", 1_000), finalizedHash: "0xaa" },
        { ...head("b", 9_000), finalizedHash: "0xbb" },
      ],
      recordedFinalizedHash: "0xaa",
      head: 1_000,
      members: ["a"],
      excluded: { b: "wrong_fork" },
    },
    {
      name: "3 providers, one on another fork: the other two are judged as a pair",
      checks: [
        { ...head("a", 1_000), finalizedHash: "0xaa" },
        { ...head("b", 9_000), finalizedHash: "0xaa" },
        { ...head("c", 1_000), finalizedHash: "0xcc" },
      ],
      recordedFinalizedHash: "0xaa",
      head: 1_000,
      members: ["a"],
      excluded: { b: "ahead", c: "wrong_fork" },
    },
    // Three providers: a far-ahead head with a current timestamp used to stay a member.
    {
      name: "3 providers: 1,000 blocks beyond the others' median with a current timestamp is ahead",
      checks: [head("a", 20_000_000), head("b", 20_000_001), head("liar", 20_001_000)],
      head: 20_000_001,
      members: ["a", "b"],
      excluded: { liar: "ahead" },
    },
    {
      name: "3 providers: exactly max_ahead_blocks beyond the median stays in",
      checks: [head("a", 1_000), head("b", 1_000), head("c", 1_500)],
      head: 1_000,
      members: ["a", "b", "c"],
    },
    {
      name: "3 providers: max_ahead_blocks + 1 beyond the median is ahead",
      checks: [head("a", 1_000), head("b", 1_000), head("c", 1_501)],
      head: 1_000,
      members: ["a", "b"],
      excluded: { c: "ahead" },
    },
    {
      name: "3 providers: max_ahead_blocks is per network (a fast chain may allow more)",
      checks: [head("a", 1_000), head("b", 1_000), head("c", 1_501)],
      settings: { max_ahead_blocks: 2_000 },
      head: 1_000,
      members: ["a", "b", "c"],
    },
    {
      name: "3 providers: a future timestamp is ahead before block numbers are compared",
      checks: [head("a", 1_000), head("b", 1_001), head("c", 1_002, 600)],
      head: 1_001,
      members: ["a", "b"],
      excluded: { c: "ahead" },
    },
    {
      name: "3 providers: the one far behind is behind, never ahead (only leads are judged)",
      checks: [head("a", 1_000), head("b", 1_001), head("c", 100, -3_600)],
      head: 1_001,
      members: ["a", "b"],
      excluded: { c: "behind" },
    },
    {
      name: "3 providers, one did not answer: the two answers are judged as a pair, the far-ahead one is out",
      checks: [
        head("a", 1_000),
        { provider: "b", answer: { error: "timeout" }, chainIdOk: null },
        head("c", 5_000),
      ],
      head: 1_000,
      members: ["a"],
      excluded: { b: "no_answer", c: "ahead" },
    },
    {
      name: "3 providers, one in the future: the other two are judged as a pair",
      checks: [head("a", 1_000), head("b", 1_001, 600), head("c", 5_000)],
      head: 1_000,
      members: ["a"],
      excluded: { b: "ahead", c: "ahead" },
    },
    {
      name: "4 providers: two colluding liars far ahead are each judged against the others' median",
      checks: [head("a", 1_000), head("b", 1_000), head("x", 9_000), head("y", 9_000)],
      head: 1_000,
      members: ["a", "b"],
      excluded: { x: "ahead", y: "ahead" },
    },
    {
      name: "a wrong-chain answer neither votes nor counts among the others: the two left are a pair",
      checks: [head("a", 1_000), { ...head("b", 1_000), chainIdOk: false }, head("c", 9_000)],
      head: 1_000,
      members: ["a"],
      excluded: { b: "wrong_chain", c: "ahead" },
    },
    {
      name: "a wrong-chain answer far ahead is wrong_chain, and the pair rule does not see it",
      checks: [head("a", 1_000), { ...head("b", 90_000), chainIdOk: false }],
      head: 1_000,
      members: ["a"],
      excluded: { b: "wrong_chain" },
    },
    {
      name: "a wrong-chain answer far below does not push the right-chain one out as ahead",
      checks: [head("a", 90_000), { ...head("b", 1_000), chainIdOk: false }],
      head: 90_000,
      members: ["a"],
      excluded: { b: "wrong_chain" },
    },
  ])("$name", (row) => {
    const result = computeQuorum({
      checks: row.checks,
      memory: {},
      requestStats: {},
      divider: row.divider ?? 1,
      settings: { ...SETTINGS, ...row.settings },
      now: NOW,
      recordedFinalizedHash: row.recordedFinalizedHash ?? null,
    });
    expect(result.head).toBe(row.head);
    expect(result.members).toEqual(row.members);
    expect(result.excluded).toEqual(row.excluded ?? {});
  });

  it.each([{ honest: ["a", "b"] }, { honest: ["a"] }])(
    "an excluded far-ahead head counts as a missed check, so a persistent liar ends up failing often ($honest.length honest)",
    ({ honest }) => {
      const checks = (tick: number) => [
        ...honest.map((name) => head(name, 1_000 + tick)),
        head("liar", 9_000 + tick),
      ];
      let last = computeQuorum({
        checks: checks(0),
        memory: {},
        requestStats: {},
        divider: 1,
        settings: SETTINGS,
        now: NOW,
      });
      for (let tick = 1; tick < 10; tick++) {
        last = computeQuorum({
          checks: checks(tick),
          memory: last.memory,
          requestStats: {},
          divider: 1,
          settings: SETTINGS,
          now: NOW + tick * 15_000,
        });
      }
      expect(last.memory.liar?.recentChecks.every((missed) => missed)).toBe(true);
      expect(last.excluded.liar).toBe("failing_often");
    },
  );

  it("the trade-off: a liar BELOW the honest head with a current timestamp holds the quorum head low, and the head moves on the check after it stops", () => {
    const tick = (liarHead: number, tickIndex: number, memory = {}) =>
      computeQuorum({
        checks: [head("honest", 20_000_000 + tickIndex), head("liar", liarHead)],
        memory,
        requestStats: {},
        divider: 1,
        settings: SETTINGS,
        now: NOW + tickIndex * 15_000,
      });
    const lying = tick(19_000_000, 0);
    expect(lying).toMatchObject({ head: 19_000_000, members: ["liar"] });
    expect(lying.excluded).toEqual({ honest: "ahead" });
    const stopped = tick(20_000_001, 1, lying.memory);
    expect(stopped).toMatchObject({ head: 20_000_001, members: ["honest", "liar"] });
  });
});
