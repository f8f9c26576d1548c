import { describe, expect, it } from "vitest";
import {
  type CheckMemory,
  computeQuorum,
  type HeadCheck,
  initialCheckMemory,
  needsChainIdCheck,
  type QuorumReason,
  type QuorumResult,
  type QuorumSettings,
  type RequestWindow,
} from "../../../functions/core/chain/quorum.ts";
import { isFailingOften } from "../../../functions/core/health/failing-often.ts";

const NOW = 1_800_000_000_000;
const TICK_MS = 15_000;
/** Block timestamps (s) of a 12 s chain: block n at BASE + 12 n. */
const BASE = 1_700_000_000;
const ts = (block: number): number => BASE + 12 * block;

const SETTINGS: QuorumSettings = {
  max_lag_seconds: 60,
  max_ahead_blocks: 1000,
  failed_recently_checks: 2,
  failing_often: {
    window_seconds: 300,
    min_requests: 20,
    error_ratio: 0.5,
    missed_checks: 4,
    missed_ratio: 0.5,
    exclude_seconds: 45, // three ticks
  },
};

const ok = (provider: string, block: number): HeadCheck => ({
  provider,
  answer: { number: block, timestamp: ts(block) },
  chainIdOk: null,
});
const at = (provider: string, block: number, timestamp: number): HeadCheck => ({
  provider,
  answer: { number: block, timestamp },
  chainIdOk: null,
});
/** A 1 s chain, where a divider makes sense: block n at BASE + n. */
const fast = (provider: string, block: number): HeadCheck => at(provider, block, BASE + block);
const verified = (provider: string, block: number): HeadCheck => ({
  ...ok(provider, block),
  chainIdOk: true,
});
const foreign = (provider: string, block: number): HeadCheck => ({
  ...ok(provider, block),
  chainIdOk: false,
});
const err = (provider: string): HeadCheck => ({
  provider,
  answer: { error: "timeout" },
  chainIdOk: null,
});

const remembered = (partial: Partial<CheckMemory>): CheckMemory => ({
  ...initialCheckMemory(),
  ...partial,
});

interface TickRow {
  name: string;
  checks: HeadCheck[];
  divider?: number;
  memory?: Record<string, CheckMemory>;
  requestStats?: Record<string, RequestWindow>;
  head: number | null;
  members: string[];
  excluded?: Record<string, QuorumReason>;
}

describe("computeQuorum: one tick", () => {
  it.each<TickRow>([
    {
      name: "all agree: everyone is in",
      checks: [ok("a", 100), ok("b", 100), ok("c", 100)],
      head: 100,
      members: ["a", "b", "c"],
    },
    {
      name: "the majority group wins over a single higher answer, which stays in (one block ahead)",
      checks: [ok("a", 100), ok("b", 100), ok("c", 101)],
      head: 100,
      members: ["a", "b", "c"],
    },
    {
      name: "a 2-2 tie goes to the highest group",
      checks: [ok("a", 100), ok("b", 100), ok("c", 110), ok("d", 110)],
      head: 110,
      members: ["c", "d"],
      excluded: { a: "behind", b: "behind" },
    },
    {
      name: "every answer different: quorum fallback to the highest",
      checks: [ok("a", 100), ok("b", 101), ok("c", 102)],
      head: 102,
      members: ["a", "b", "c"],
    },
    {
      name: "every answer different and far apart: the highest, the rest behind",
      checks: [ok("a", 100), ok("b", 200), ok("c", 300)],
      head: 300,
      members: ["c"],
      excluded: { a: "behind", b: "behind" },
    },
    {
      name: "divider 10 groups 101 and 109 together; head is the highest in the group",
      checks: [fast("a", 101), fast("b", 109), fast("c", 110)],
      divider: 10,
      head: 109,
      members: ["a", "b", "c"],
    },
    {
      name: "divider 10 puts 110 apart from 109 (groups 11 vs 10)",
      checks: [fast("a", 109), fast("b", 110), fast("c", 119)],
      divider: 10,
      head: 119,
      members: ["a", "b", "c"],
    },
    {
      name: "divider 1: the same answers all differ, fallback to the highest",
      checks: [fast("a", 101), fast("b", 109), fast("c", 110)],
      head: 110,
      members: ["a", "b", "c"],
    },
    {
      name: "one block behind stays in (no exact-equality quorum)",
      checks: [ok("a", 101), ok("b", 101), ok("c", 100)],
      head: 101,
      members: ["a", "b", "c"],
    },
    {
      name: "exactly max_lag_seconds behind by timestamp stays in",
      checks: [at("a", 100, 5000), at("b", 100, 5000), at("c", 99, 4940)],
      head: 100,
      members: ["a", "b", "c"],
    },
    {
      name: "61 s behind by timestamp is behind",
      checks: [at("a", 100, 5000), at("b", 100, 5000), at("c", 99, 4939)],
      head: 100,
      members: ["a", "b"],
      excluded: { c: "behind" },
    },
    {
      name: "exactly max_lag_seconds ahead by timestamp stays in",
      checks: [at("a", 100, 5000), at("b", 100, 5000), at("c", 101, 5060)],
      head: 100,
      members: ["a", "b", "c"],
    },
    {
      name: "61 s ahead by timestamp is ahead",
      checks: [at("a", 100, 5000), at("b", 100, 5000), at("c", 101, 5061)],
      head: 100,
      members: ["a", "b"],
      excluded: { c: "ahead" },
    },
    {
      name: "lag is by timestamp, not blocks: 10 blocks behind on a 2 s chain stays in",
      checks: [at("a", 100, 5000), at("b", 100, 5000), at("c", 90, 4980)],
      head: 100,
      members: ["a", "b", "c"],
    },
    {
      name: "wrong chain is excluded and does not vote (its majority is ignored)",
      checks: [ok("a", 100), foreign("b", 500), foreign("c", 500)],
      head: 100,
      members: ["a"],
      excluded: { b: "wrong_chain", c: "wrong_chain" },
    },
    {
      name: "wrong chain is remembered on ticks without a chain-id check",
      checks: [ok("a", 100), ok("b", 500), ok("c", 500)],
      memory: { b: remembered({ wrongChain: true }), c: remembered({ wrongChain: true }) },
      head: 100,
      members: ["a"],
      excluded: { b: "wrong_chain", c: "wrong_chain" },
    },
    {
      name: "a passing chain-id check clears wrong chain",
      checks: [ok("a", 100), verified("b", 100)],
      memory: { b: remembered({ wrongChain: true }) },
      head: 100,
      members: ["a", "b"],
    },
    {
      name: "zero answers: no head, everyone no_answer",
      checks: [err("a"), err("b")],
      head: null,
      members: [],
      excluded: { a: "no_answer", b: "no_answer" },
    },
    {
      name: "zero answers from the right chain: no head, each with its reason",
      checks: [err("a"), foreign("b", 100)],
      head: null,
      members: [],
      excluded: { a: "no_answer", b: "wrong_chain" },
    },
    {
      name: "no providers checked: no head",
      checks: [],
      head: null,
      members: [],
    },
    {
      name: "precedence: wrong_chain over no_answer",
      checks: [ok("a", 100), { ...err("b"), chainIdOk: false }],
      head: 100,
      members: ["a"],
      excluded: { b: "wrong_chain" },
    },
    {
      name: "precedence: no_answer over failing_often",
      checks: [ok("a", 100), err("b")],
      memory: { b: remembered({ failingOftenUntil: NOW + 1000 }) },
      head: 100,
      members: ["a"],
      excluded: { b: "no_answer" },
    },
    {
      name: "precedence: failing_often over failed_recently",
      checks: [ok("a", 100), ok("b", 100)],
      memory: { b: remembered({ failingOftenUntil: NOW + 1000, failedRecentlyRemaining: 1 }) },
      head: 100,
      members: ["a"],
      excluded: { b: "failing_often" },
    },
    {
      name: "precedence: failed_recently over behind",
      checks: [ok("a", 100), ok("b", 100), ok("c", 90)],
      memory: { c: remembered({ failedRecentlyRemaining: 1 }) },
      head: 100,
      members: ["a", "b"],
      excluded: { c: "failed_recently" },
    },
    {
      name: "failing often by requests: 10 of 20 failed",
      checks: [ok("a", 100), ok("b", 100)],
      requestStats: { b: { requests: 20, errors: 10 } },
      head: 100,
      members: ["a"],
      excluded: { b: "failing_often" },
    },
    {
      name: "failing often needs min_requests: 19 of 19 failed is not enough",
      checks: [ok("a", 100), ok("b", 100)],
      requestStats: { b: { requests: 19, errors: 19 } },
      head: 100,
      members: ["a", "b"],
    },
    {
      name: "failing often by requests: 9 of 20 failed is under the ratio",
      checks: [ok("a", 100), ok("b", 100)],
      requestStats: { b: { requests: 20, errors: 9 } },
      head: 100,
      members: ["a", "b"],
    },
    {
      name: "a failing-often exclusion ending exactly now is over",
      checks: [ok("a", 100), ok("b", 100)],
      memory: { b: remembered({ failingOftenUntil: NOW }) },
      head: 100,
      members: ["a", "b"],
    },
    {
      name: "a failing-often exclusion ending 1 ms from now still holds",
      checks: [ok("a", 100), ok("b", 100)],
      memory: { b: remembered({ failingOftenUntil: NOW + 1 }) },
      head: 100,
      members: ["a"],
      excluded: { b: "failing_often" },
    },
  ])("$name", (row) => {
    const result = computeQuorum({
      checks: row.checks,
      memory: row.memory ?? {},
      requestStats: row.requestStats ?? {},
      divider: row.divider ?? 1,
      settings: SETTINGS,
      now: NOW,
    });
    expect(result.head).toBe(row.head);
    expect(result.members).toEqual(row.members);
    expect(result.excluded).toEqual(row.excluded ?? {});
  });

  it("reports the timestamp of the quorum head's block", () => {
    const result = computeQuorum({
      checks: [at("a", 100, 5000), at("b", 102, 5030), at("c", 200, 9000)],
      memory: {},
      requestStats: {},
      divider: 10,
      settings: SETTINGS,
      now: NOW,
    });
    expect([result.head, result.headTimestamp]).toEqual([102, 5030]);
  });
});

/**
 * Provider x over several ticks, next to peers a and b that always answer the head. One
 * word per tick: ok, err (no answer), behind (10 blocks = 120 s), ahead, foreign (chain id
 * wrong), verified (chain id right). Expected: "in" or the reason.
 */
type Step = "ok" | "err" | "behind" | "ahead" | "foreign" | "verified";

function xCheck(step: Step, head: number): HeadCheck {
  switch (step) {
    case "ok":
      return ok("x", head);
    case "err":
      return err("x");
    case "behind":
      return ok("x", head - 10);
    case "ahead":
      return ok("x", head + 10);
    case "foreign":
      return foreign("x", head);
    case "verified":
      return verified("x", head);
  }
}

function runTicks(
  steps: readonly Step[],
  settings: QuorumSettings,
  statsAt: Record<number, RequestWindow> = {},
): QuorumResult[] {
  let memory: Record<string, CheckMemory> = {};
  return steps.map((step, tick) => {
    const head = 1000 + tick;
    const result = computeQuorum({
      checks: [ok("a", head), ok("b", head), xCheck(step, head)],
      memory,
      requestStats: statsAt[tick + 1] ? { x: statsAt[tick + 1] as RequestWindow } : {},
      divider: 1,
      settings,
      now: NOW + tick * TICK_MS,
    });
    memory = result.memory;
    return result;
  });
}

const verdictOfX = (result: QuorumResult): string =>
  result.members.includes("x") ? "in" : (result.excluded.x ?? "missing");

interface TicksRow {
  name: string;
  steps: string;
  expected: string;
  settings?: Partial<QuorumSettings>;
  /** 1-based tick → x's proxied traffic at that tick. */
  statsAt?: Record<number, RequestWindow>;
}

const noFailedRecently: Partial<QuorumSettings> = { failed_recently_checks: 0 };

describe("computeQuorum: across ticks", () => {
  it.each<TicksRow>([
    {
      name: "failed recently: the failing tick is no_answer, then exactly 2 ticks out",
      steps: "ok err ok ok ok",
      expected: "in no_answer failed_recently failed_recently in",
    },
    {
      name: "failed recently: a new failure restarts the count",
      steps: "err ok err ok ok ok",
      expected: "no_answer failed_recently no_answer failed_recently failed_recently in",
      settings: { failing_often: { ...SETTINGS.failing_often, missed_checks: 10 } },
    },
    {
      name: "failed recently with failed_recently_checks 1: one tick out",
      steps: "err ok ok",
      expected: "no_answer failed_recently in",
      settings: { failed_recently_checks: 1 },
    },
    {
      name: "failed recently with failed_recently_checks 0: back at once",
      steps: "err ok",
      expected: "no_answer in",
      settings: noFailedRecently,
    },
    {
      name: "failing often by missed checks: 2 of the last 4, then out for exclude_seconds",
      steps: "behind behind ok ok ok ok ok",
      expected: "behind behind in failing_often failing_often failing_often in",
      settings: noFailedRecently,
    },
    {
      name: "failing often by missed checks: 1 of 4 is under the ratio",
      steps: "ahead ok ok ok ok",
      expected: "ahead in in in in",
      settings: noFailedRecently,
    },
    {
      name: "failing often needs a full history: a new provider's misses are only behind",
      steps: "behind behind behind",
      expected: "behind behind behind",
      settings: noFailedRecently,
    },
    {
      name: "failing often: still missing when the exclusion ends, excluded again",
      steps: "behind behind behind behind behind behind behind ok ok ok",
      expected:
        "behind behind behind failing_often failing_often failing_often failing_often failing_often failing_often in",
      settings: noFailedRecently,
    },
    {
      name: "failing often by requests: the exclusion expires after exclude_seconds",
      steps: "ok ok ok ok ok",
      expected: "failing_often failing_often failing_often in in",
      statsAt: { 1: { requests: 20, errors: 10 } },
    },
    {
      name: "failing often by requests: still failing at expiry, excluded again",
      steps: "ok ok ok ok ok",
      expected: "failing_often failing_often failing_often failing_often failing_often",
      statsAt: { 1: { requests: 20, errors: 10 }, 4: { requests: 30, errors: 20 } },
    },
    {
      name: "dead from start is never a member",
      steps: "err err err err err err err err",
      expected: "no_answer no_answer no_answer no_answer no_answer no_answer no_answer no_answer",
    },
    {
      name: "dead from start, then alive: back after a bounded exclusion (wins back)",
      steps: "err err err err ok ok ok ok ok",
      expected: "no_answer no_answer no_answer no_answer failing_often failing_often in in in",
    },
    {
      name: "wrong chain holds until the next chain-id check passes",
      steps: "foreign ok ok verified ok",
      expected: "wrong_chain wrong_chain wrong_chain in in",
    },
  ])("$name", (row) => {
    const settings = { ...SETTINGS, ...row.settings };
    const results = runTicks(row.steps.split(" ") as Step[], settings, row.statsAt);
    expect(results.map(verdictOfX).join(" ")).toBe(row.expected);
  });

  it("keeps at most missed_checks entries of check history", () => {
    const results = runTicks(["err", "err", "ok", "ok", "ok", "ok", "ok"], SETTINGS);
    expect(results.at(-1)?.memory.x?.recentChecks).toEqual([false, false, false, false]);
  });

  it("records when the chain id was checked and keeps it on unchecked ticks", () => {
    const first = computeQuorum({
      checks: [verified("a", 100)],
      memory: {},
      requestStats: {},
      divider: 1,
      settings: SETTINGS,
      now: NOW,
    });
    const second = computeQuorum({
      checks: [ok("a", 101)],
      memory: first.memory,
      requestStats: {},
      divider: 1,
      settings: SETTINGS,
      now: NOW + TICK_MS,
    });
    expect(second.memory.a?.lastChainIdCheckAt).toBe(NOW);
  });
});

describe("failing often by missed checks (docs/behaviour.md §5.3)", () => {
  const quiet = { requests: 0, errors: 0 };
  it.each<[string, boolean[], boolean]>([
    ["2 of the last 4 missed", [false, false, true, true], true],
    ["1 of the last 4 missed", [false, false, false, true], false],
    // A history kept under a larger missed_checks: only the newest 4 count.
    ["older misses do not count", [true, true, true, true, false, false, false, true], false],
    [
      "recent misses in a longer history do",
      [false, false, false, false, true, true, false, false],
      true,
    ],
  ])("%s", (_name, checks, expected) => {
    expect(isFailingOften(quiet, checks, SETTINGS.failing_often)).toBe(expected);
  });
});

describe("needsChainIdCheck", () => {
  it.each<{ name: string; memory: CheckMemory | undefined; now: number; expected: boolean }>([
    { name: "first contact: no memory", memory: undefined, now: NOW, expected: true },
    {
      name: "first contact: never checked",
      memory: initialCheckMemory(),
      now: NOW,
      expected: true,
    },
    {
      name: "checked 599 s ago",
      memory: remembered({ lastChainIdCheckAt: NOW - 599_000 }),
      now: NOW,
      expected: false,
    },
    {
      name: "checked 600 s ago",
      memory: remembered({ lastChainIdCheckAt: NOW - 600_000 }),
      now: NOW,
      expected: true,
    },
  ])("$name → $expected", ({ memory, now, expected }) => {
    expect(needsChainIdCheck(memory, now, 600)).toBe(expected);
  });
});

/** The hash recorded for the finalized block, and another fork's block at that height. */
const RECORDED = "0xaaaa";
const OTHER = "0xbbbb";
const THIRD = "0xcccc";
/** A check whose block at the recorded finalized height has `hash`. */
const sawHash = (check: HeadCheck, hash: string): HeadCheck => ({ ...check, finalizedHash: hash });

interface ForkRow {
  name: string;
  checks: HeadCheck[];
  memory?: Record<string, CheckMemory>;
  recorded?: string | null;
  head: number | null;
  members: string[];
  excluded?: Record<string, QuorumReason>;
  finalizedMajority?: string[];
}

describe("computeQuorum: providers on another fork", () => {
  it.each<ForkRow>([
    {
      name: "a lone provider with another block at the finalized height is out, though its head is level",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), RECORDED),
        sawHash(ok("f", 100), OTHER),
      ],
      head: 100,
      members: ["a", "b"],
      excluded: { f: "wrong_fork" },
      finalizedMajority: ["a", "b"],
    },
    {
      name: "two providers, one on the record: the record breaks the tie, the other is out",
      checks: [sawHash(ok("a", 100), RECORDED), sawHash(ok("f", 100), OTHER)],
      head: 100,
      members: ["a"],
      excluded: { f: "wrong_fork" },
      finalizedMajority: ["a"],
    },
    {
      name: "every provider has another block (the quorum's chain moved): nobody is out",
      checks: [
        sawHash(ok("a", 100), OTHER),
        sawHash(ok("b", 100), OTHER),
        sawHash(ok("c", 100), OTHER),
      ],
      head: 100,
      members: ["a", "b", "c"],
      finalizedMajority: ["a", "b", "c"],
    },
    {
      name: "a lone provider, another block: nobody to confirm the record, it stays in",
      checks: [sawHash(ok("a", 100), OTHER)],
      head: 100,
      members: ["a"],
      finalizedMajority: ["a"],
    },
    {
      name: "the majority on another block, one on the record: nobody is out (the break rule decides)",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), OTHER),
        sawHash(ok("c", 100), OTHER),
      ],
      head: 100,
      members: ["a", "b", "c"],
      finalizedMajority: ["b", "c"],
    },
    {
      name: "two others each on a fork of their own: the record's group is as large, both are out",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), OTHER),
        sawHash(ok("c", 100), THIRD),
      ],
      head: 100,
      members: ["a"],
      excluded: { b: "wrong_fork", c: "wrong_fork" },
      finalizedMajority: ["a"],
    },
    {
      name: "hashes compare without letter case",
      checks: [sawHash(ok("a", 100), RECORDED), sawHash(ok("b", 100), RECORDED.toUpperCase())],
      head: 100,
      members: ["a", "b"],
      finalizedMajority: ["a", "b"],
    },
    {
      name: "no recorded finalized block: no fork verdict, whatever the hashes",
      checks: [sawHash(ok("a", 100), RECORDED), sawHash(ok("f", 100), OTHER)],
      recorded: null,
      head: 100,
      members: ["a", "f"],
      finalizedMajority: [],
    },
    {
      name: "no block at the height this tick (not asked, an error, a null): the last verdict stands",
      checks: [sawHash(ok("a", 100), RECORDED), ok("f", 100), ok("g", 100)],
      memory: { f: remembered({ wrongFork: true }), g: remembered({ wrongFork: false }) },
      head: 100,
      members: ["a", "g"],
      excluded: { f: "wrong_fork" },
    },
    {
      name: "a memory from before fork checks (no wrongFork) is on the record",
      checks: [sawHash(ok("a", 100), RECORDED), ok("f", 100)],
      memory: {
        f: {
          failedRecentlyRemaining: 0,
          recentChecks: [],
          failingOftenUntil: 0,
          wrongChain: false,
          lastChainIdCheckAt: 0,
        },
      },
      head: 100,
      members: ["a", "f"],
    },
    {
      name: "seeing the recorded block again clears a remembered fork",
      checks: [sawHash(ok("a", 100), RECORDED), sawHash(ok("f", 100), RECORDED)],
      memory: { f: remembered({ wrongFork: true }) },
      head: 100,
      members: ["a", "f"],
    },
    {
      name: "a remembered fork with another block while the record is outvoted: still out",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), OTHER),
        sawHash(ok("f", 100), OTHER),
      ],
      memory: { f: remembered({ wrongFork: true }) },
      head: 100,
      members: ["a", "b"],
      excluded: { f: "wrong_fork" },
    },
    {
      name: "forked providers do not vote: a 2-2 tie no longer goes to their higher group",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), RECORDED),
        sawHash(ok("f", 110), OTHER),
        sawHash(ok("g", 110), OTHER),
      ],
      head: 100,
      members: ["a", "b"],
      excluded: { f: "wrong_fork", g: "wrong_fork" },
    },
    {
      name: "answers from another chain do not count: they cannot outvote the record",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("f", 100), OTHER),
        sawHash(foreign("x", 100), OTHER),
        sawHash(foreign("y", 100), OTHER),
      ],
      head: 100,
      members: ["a"],
      excluded: { f: "wrong_fork", x: "wrong_chain", y: "wrong_chain" },
      finalizedMajority: ["a"],
    },
    {
      name: "precedence: wrong_chain over wrong_fork",
      checks: [sawHash(ok("a", 100), RECORDED), { ...ok("f", 100), chainIdOk: false }],
      memory: { f: remembered({ wrongFork: true }) },
      head: 100,
      members: ["a"],
      excluded: { f: "wrong_chain" },
    },
    {
      name: "precedence: wrong_fork over no_answer",
      checks: [sawHash(ok("a", 100), RECORDED), err("f")],
      memory: { f: remembered({ wrongFork: true }) },
      head: 100,
      members: ["a"],
      excluded: { f: "wrong_fork" },
    },
    {
      name: "precedence: wrong_fork over behind",
      checks: [
        sawHash(ok("a", 100), RECORDED),
        sawHash(ok("b", 100), RECORDED),
        sawHash(ok("f", 80), OTHER),
      ],
      head: 100,
      members: ["a", "b"],
      excluded: { f: "wrong_fork" },
    },
  ])("$name", (row) => {
    const result = computeQuorum({
      checks: row.checks,
      memory: row.memory ?? {},
      requestStats: {},
      divider: 1,
      settings: SETTINGS,
      now: NOW,
      recordedFinalizedHash: row.recorded === undefined ? RECORDED : row.recorded,
    });
    expect(result.head).toBe(row.head);
    expect(result.members).toEqual(row.members);
    expect(result.excluded).toEqual(row.excluded ?? {});
    if (row.finalizedMajority !== undefined) {
      expect(result.finalizedMajority).toEqual(row.finalizedMajority);
    }
  });

  it("a forked provider's exclusion is not counted as a missed check", () => {
    const result = computeQuorum({
      checks: [sawHash(ok("a", 100), RECORDED), sawHash(ok("f", 100), OTHER)],
      memory: {},
      requestStats: {},
      divider: 1,
      settings: SETTINGS,
      now: NOW,
      recordedFinalizedHash: RECORDED,
    });
    expect(result.memory.f).toMatchObject({ wrongFork: true, recentChecks: [false] });
  });
});

/**
 * Three providers over ticks, each word the hashes a, b and c show at the recorded finalized
 * height (R: the record, O: the other fork), and the record the monitor holds that tick.
 */
interface ForkTicksRow {
  name: string;
  ticks: Array<{ seen: string; recorded: string }>;
  expected: string;
}

describe("computeQuorum: forks across ticks", () => {
  const hashOf = (letter: string) => (letter === "R" ? RECORDED : OTHER);
  it.each<ForkTicksRow>([
    {
      name: "a lone forked provider is out until it has shown the recorded block for failed_recently_checks (2) checks",
      ticks: [
        { seen: "RRO", recorded: RECORDED },
        { seen: "RRO", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
      ],
      expected: "a,b|c a,b|c a,b|c a,b|c a,b,c|",
    },
    {
      name: "regression: a provider flapping between forks was a member every other check (its finalized answers cacheable); now it stays out",
      ticks: [
        { seen: "RRO", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
        { seen: "RRO", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
        { seen: "RRO", recorded: RECORDED },
        { seen: "RRR", recorded: RECORDED },
      ],
      expected: "a,b|c a,b|c a,b|c a,b|c a,b|c a,b|c",
    },
    {
      name: "a finality break reaching the nodes one after the other: nobody stays out for good",
      ticks: [
        // a reorgs first: alone against the record, it is out
        { seen: "ORR", recorded: RECORDED },
        // b follows: the record is outvoted, a stays out, nobody else leaves
        { seen: "OOR", recorded: RECORDED },
        // every node moved; the break rule then records the new chain
        { seen: "OOO", recorded: RECORDED },
        { seen: "OOO", recorded: OTHER },
        // a, out as on another fork for three checks, rejoins after failed_recently_checks
        { seen: "OOO", recorded: OTHER },
        { seen: "OOO", recorded: OTHER },
      ],
      expected: "b,c|a b,c|a b,c|a b,c|a b,c|a a,b,c|",
    },
    {
      name: "a genuine deep reorg of every node at once: nobody is ever out",
      ticks: [
        { seen: "OOO", recorded: RECORDED },
        { seen: "OOO", recorded: OTHER },
      ],
      expected: "a,b,c| a,b,c|",
    },
  ])("$name", (row) => {
    let memory: Record<string, CheckMemory> = {};
    const verdicts = row.ticks.map(({ seen, recorded }, tick) => {
      const checks = ["a", "b", "c"].map((provider, index) =>
        sawHash(ok(provider, 100 + tick), hashOf(seen[index] ?? "R")),
      );
      const result = computeQuorum({
        checks,
        memory,
        requestStats: {},
        divider: 1,
        settings: SETTINGS,
        now: NOW + tick * TICK_MS,
        recordedFinalizedHash: recorded,
      });
      memory = result.memory;
      return `${result.members.join(",")}|${Object.keys(result.excluded).join(",")}`;
    });
    expect(verdicts.join(" ")).toBe(row.expected);
  });
});
