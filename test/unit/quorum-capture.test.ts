import { describe, expect, it } from "vitest";
import {
  computeQuorum,
  type HeadCheck,
  type QuorumReason,
  type QuorumSettings,
} from "../../functions/core/quorum.ts";

/**
 * One provider claiming a head far ahead of the others must not capture the quorum: not with
 * future block timestamps (excluded before grouping, so it cannot win a tie), and not with a
 * current timestamp when at least two others answered (more than `max_ahead_blocks` beyond
 * their median).
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
      name: "2 providers, current timestamps: one other is not enough to judge block numbers",
      checks: [head("a", 100, 0), head("b", 1_100, 0)],
      head: 1_100,
      members: ["a", "b"],
    },
    {
      name: "every answer in the future: the monitor's clock is suspect, nobody is excluded for it",
      checks: [head("a", 100, 3_600), head("b", 100, 3_600)],
      head: 100,
      members: ["a", "b"],
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
      name: "3 providers, one did not answer: one other left, block numbers are not judged",
      checks: [
        head("a", 1_000),
        { provider: "b", answer: { error: "timeout" }, chainIdOk: null },
        head("c", 5_000),
      ],
      head: 5_000,
      members: ["a", "c"],
      excluded: { b: "no_answer" },
    },
    {
      name: "4 providers: two colluding liars far ahead are each judged against the others' median",
      checks: [head("a", 1_000), head("b", 1_000), head("x", 9_000), head("y", 9_000)],
      head: 1_000,
      members: ["a", "b"],
      excluded: { x: "ahead", y: "ahead" },
    },
    {
      name: "a wrong-chain answer neither votes nor counts among the others",
      checks: [head("a", 1_000), { ...head("b", 1_000), chainIdOk: false }, head("c", 9_000)],
      head: 9_000,
      members: ["a", "c"],
      excluded: { b: "wrong_chain" },
    },
  ])("$name", (row) => {
    const result = computeQuorum({
      checks: row.checks,
      memory: {},
      requestStats: {},
      divider: 1,
      settings: { ...SETTINGS, ...row.settings },
      now: NOW,
    });
    expect(result.head).toBe(row.head);
    expect(result.members).toEqual(row.members);
    expect(result.excluded).toEqual(row.excluded ?? {});
  });

  it("an excluded far-ahead head counts as a missed check, so a persistent liar ends up failing often", () => {
    let memory = {};
    let last = computeQuorum({
      checks: [head("a", 1_000), head("b", 1_000), head("liar", 9_000)],
      memory,
      requestStats: {},
      divider: 1,
      settings: SETTINGS,
      now: NOW,
    });
    for (let tick = 1; tick < 10; tick++) {
      memory = last.memory;
      last = computeQuorum({
        checks: [head("a", 1_000 + tick), head("b", 1_000 + tick), head("liar", 9_000 + tick)],
        memory,
        requestStats: {},
        divider: 1,
        settings: SETTINGS,
        now: NOW + tick * 15_000,
      });
    }
    expect(last.memory.liar?.recentChecks.every((missed) => missed)).toBe(true);
    expect(last.excluded.liar).toBe("failing_often");
  });
});
