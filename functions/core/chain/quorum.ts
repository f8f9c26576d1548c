import type { Settings } from "../config/config-schema.ts";
import { isFailingOften, recordCheck } from "../health/failing-often.ts";
import type { RequestWindow } from "../health/request-stats.ts";
import { type FinalizedAnswer, type ForkTally, tallyForks } from "./fork-check.ts";

/**
 * The head-block quorum (docs/behaviour.md §5): one tick of the monitor over one network, as a pure
 * function of this tick's head checks, what was remembered from earlier ticks, and the
 * proxied traffic. Times: `now` and memory in ms since the epoch, block timestamps in s.
 */

export type { RequestWindow } from "../health/request-stats.ts";

/**
 * Why a provider is out of quorum. When several apply, the first in this order is reported:
 * wrong_chain > wrong_fork > no_answer > failing_often > failed_recently > behind / ahead
 * (a misconfiguration or another chain first, then what this tick saw, then the longer
 * exclusion before the shorter one, and the head comparison last).
 */
export type QuorumReason =
  | "behind"
  | "ahead"
  | "wrong_chain"
  | "wrong_fork"
  | "failed_recently"
  | "failing_often"
  | "no_answer";

export interface BlockHead {
  readonly number: number;
  /** Block timestamp, seconds. */
  readonly timestamp: number;
  readonly hash?: string;
}

export interface HeadCheck {
  readonly provider: string;
  /** `eth_getBlockByNumber("latest", false)`, or why it failed (error, timeout). */
  readonly answer: BlockHead | { readonly error: string };
  /** `eth_chainId` matched the config; null = not checked this tick (or the call failed): keep the previous verdict. */
  readonly chainIdOk: boolean | null;
  /**
   * The provider's hash of the block at the recorded finalized height; absent when not asked
   * (no recorded finalized block) or when it gave no block (an error, a null: no verdict).
   */
  readonly finalizedHash?: string;
}

/** What a provider carries from one tick to the next (stored by the monitor). */
export interface CheckMemory {
  /** Ticks still excluded by "failed recently". */
  readonly failedRecentlyRemaining: number;
  /** true = missed the check (no answer, behind or ahead); newest last, at most `missed_checks` long. */
  readonly recentChecks: readonly boolean[];
  /** Excluded by "failing often" while now < this (ms); 0 = not excluded. */
  readonly failingOftenUntil: number;
  readonly wrongChain: boolean;
  /** When the chain id was last checked (ms); 0 = never. */
  readonly lastChainIdCheckAt: number;
  /** On another fork than the recorded finalized block; absent in memories stored before this check. */
  readonly wrongFork?: boolean;
}

export function initialCheckMemory(): CheckMemory {
  return {
    failedRecentlyRemaining: 0,
    recentChecks: [],
    failingOftenUntil: 0,
    wrongChain: false,
    lastChainIdCheckAt: 0,
    wrongFork: false,
  };
}

/** Ask `eth_chainId` on first contact and every `chainIdCheckSeconds` after. */
export function needsChainIdCheck(
  memory: CheckMemory | undefined,
  now: number,
  chainIdCheckSeconds: number,
): boolean {
  if (memory === undefined || memory.lastChainIdCheckAt === 0) return true;
  return now - memory.lastChainIdCheckAt >= chainIdCheckSeconds * 1000;
}

export type QuorumSettings = Pick<
  Settings["quorum"],
  "max_lag_seconds" | "max_ahead_blocks" | "failed_recently_checks" | "failing_often"
>;

export interface QuorumInput {
  readonly checks: readonly HeadCheck[];
  /** From the previous tick; a provider without an entry starts from `initialCheckMemory()`. */
  readonly memory: Readonly<Record<string, CheckMemory>>;
  /** Proxied traffic over the last `failing_often.window_seconds`; none = no requests. */
  readonly requestStats: Readonly<Record<string, RequestWindow>>;
  /** `block_majority_divider`. */
  readonly divider: number;
  readonly settings: QuorumSettings;
  readonly now: number;
  /** The hash the monitor recorded for the `finalized` block; absent or null: no fork verdicts. */
  readonly recordedFinalizedHash?: string | null;
}

export interface QuorumResult {
  readonly head: number | null;
  readonly headTimestamp: number | null;
  /** In the order of `checks`. */
  readonly members: string[];
  /** Every checked provider that is not a member, with the reason that wins (see QuorumReason). */
  readonly excluded: Record<string, QuorumReason>;
  /** To carry into the next tick: one entry per checked provider. */
  readonly memory: Record<string, CheckMemory>;
  /**
   * The providers whose block at the recorded finalized height is the most common one (the
   * record's on a tie): the ones to read the chain's finality from first. Empty when none answered.
   */
  readonly finalizedMajority: readonly string[];
}

const NO_REQUESTS: RequestWindow = { requests: 0, errors: 0 };

/**
 * The majority group of `floor(number / divider)`; a tie, or every answer in its own group,
 * goes to the highest group so the quorum follows the chain forward. The quorum head is the
 * highest block in that group.
 */
function majorityHead(heads: readonly BlockHead[], divider: number): BlockHead | null {
  const groups = new Map<number, BlockHead[]>();
  for (const head of heads) {
    const key = Math.floor(head.number / divider);
    groups.set(key, [...(groups.get(key) ?? []), head]);
  }
  let best: { key: number; heads: BlockHead[] } | null = null;
  for (const [key, members] of groups) {
    const wins =
      best === null ||
      members.length > best.heads.length ||
      (members.length === best.heads.length && key > best.key);
    if (wins) best = { key, heads: members };
  }
  if (best === null) return null;
  return best.heads.reduce((top, head) =>
    head.number > top.number || (head.number === top.number && head.timestamp > top.timestamp)
      ? head
      : top,
  );
}

/** Lag by block timestamp, not block number: one block behind is in, exact equality is not required. */
function lagReason(
  timestamp: number,
  quorumTimestamp: number,
  maxLagSeconds: number,
): "behind" | "ahead" | null {
  if (quorumTimestamp - timestamp > maxLagSeconds) return "behind";
  if (timestamp - quorumTimestamp > maxLagSeconds) return "ahead";
  return null;
}

/** Re-judged only once an exclusion has run out, so one lasts exactly `excludeSeconds`. */
function nextFailingOftenUntil(
  until: number,
  failingOftenNow: boolean,
  now: number,
  excludeSeconds: number,
): number {
  if (now < until) return until;
  return failingOftenNow ? now + excludeSeconds * 1000 : 0;
}

function answered(check: HeadCheck): BlockHead | null {
  return "error" in check.answer ? null : check.answer;
}

interface Answer {
  readonly provider: string;
  readonly head: BlockHead;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? upper) + upper) / 2;
}

/**
 * Heads no honest provider can show, excluded as `ahead` before grouping so one provider can
 * never capture the quorum (ties go to the highest group):
 * - a block timestamp later than now plus `max_lag_seconds`; unless every answer is, when the
 *   monitor's own clock is the likelier fault;
 * - with two others or more, a block number more than `max_ahead_blocks` beyond their median;
 * - with one other, the higher of two numbers more than `max_ahead_blocks` apart when its block
 *   timestamp is not more than `max_lag_seconds` later than the lower's. Both cannot be honest
 *   (a provider genuinely behind shows an old timestamp, and is judged `behind` instead), and
 *   no third answer tells which lies. The lower one is kept because erring low is recoverable
 *   (a later check with the truth moves the head on) and erring high is not (the served head
 *   never goes back). A timestamp past the monitor's clock counts as now here: the future
 *   bound lets a liar claim up to `max_lag_seconds` ahead of the clock, which would otherwise
 *   make any honest head whose block is a few seconds old look `behind` it;
 * - a block number past 2^53, even alone: no chain is that long, and such a number cannot even
 *   be held exactly.
 */
function implausiblyAhead(
  answers: readonly Answer[],
  nowSeconds: number,
  settings: QuorumSettings,
): Set<string> {
  const future = answers.filter(
    (answer) => answer.head.timestamp > nowSeconds + settings.max_lag_seconds,
  );
  // Every answer in the future: the monitor's own clock is the likelier fault, and no use.
  const clockTrusted = future.length < answers.length;
  const excluded = new Set([
    ...(clockTrusted ? future.map((answer) => answer.provider) : []),
    ...answers
      .filter((answer) => !Number.isSafeInteger(answer.head.number))
      .map((answer) => answer.provider),
  ]);
  const plausible = answers.filter((answer) => !excluded.has(answer.provider));
  if (plausible.length === 2) {
    const higher = higherOfIrreconcilablePair(plausible, {
      maxAheadBlocks: settings.max_ahead_blocks,
      maxLagSeconds: settings.max_lag_seconds,
      latestTimestamp: clockTrusted ? nowSeconds : Number.POSITIVE_INFINITY,
    });
    if (higher !== null) excluded.add(higher);
    return excluded;
  }
  for (const answer of plausible) {
    const others = plausible.filter((other) => other !== answer).map((other) => other.head.number);
    if (others.length >= 2 && answer.head.number - median(others) > settings.max_ahead_blocks) {
      excluded.add(answer.provider);
    }
  }
  return excluded;
}

/**
 * Of two answers, the higher one's provider when they cannot both be honest; else null. A
 * timestamp past `latestTimestamp` (the clock, when it is trusted) counts as that.
 */
function higherOfIrreconcilablePair(
  pair: readonly Answer[],
  limits: { maxAheadBlocks: number; maxLagSeconds: number; latestTimestamp: number },
): string | null {
  const [first, second] = pair;
  if (first === undefined || second === undefined) return null;
  const [lower, higher] =
    first.head.number <= second.head.number ? [first, second] : [second, first];
  const blocksApart = higher.head.number - lower.head.number;
  // Signed: a higher block with an older timestamp is no more honest than one with the same.
  const laterBySeconds =
    Math.min(higher.head.timestamp, limits.latestTimestamp) - lower.head.timestamp;
  return blocksApart > limits.maxAheadBlocks && laterBySeconds <= limits.maxLagSeconds
    ? higher.provider
    : null;
}

export function computeQuorum(input: QuorumInput): QuorumResult {
  const { checks, settings, now } = input;
  const failingOften = settings.failing_often;

  const previous = (provider: string): CheckMemory =>
    input.memory[provider] ?? initialCheckMemory();
  const isWrongChain = (check: HeadCheck): boolean =>
    check.chainIdOk === null ? previous(check.provider).wrongChain : !check.chainIdOk;

  const forks = forkTally(input.recordedFinalizedHash ?? null, checks, isWrongChain);
  // Without a verdict this tick the last one stands, until a check sees the recorded hash again.
  const isWrongFork = (check: HeadCheck): boolean =>
    forks.verdicts.get(check.provider) ?? previous(check.provider).wrongFork === true;

  // Only answers from the right chain and fork vote: another chain's heads must not make a majority.
  const rightChain = checks.flatMap((check): Answer[] => {
    const head = answered(check);
    return head !== null && !isWrongChain(check) && !isWrongFork(check)
      ? [{ provider: check.provider, head }]
      : [];
  });
  const ahead = implausiblyAhead(rightChain, now / 1000, settings);
  const votes = rightChain.filter((answer) => !ahead.has(answer.provider)).map((a) => a.head);
  const quorumHead = majorityHead(votes, input.divider);

  const members: string[] = [];
  const excluded: Record<string, QuorumReason> = {};
  const memory: Record<string, CheckMemory> = {};

  for (const check of checks) {
    const before = previous(check.provider);
    const wrongChain = isWrongChain(check);
    const wrongFork = isWrongFork(check);
    const head = answered(check);
    const lag =
      head === null || wrongChain || wrongFork
        ? null
        : ahead.has(check.provider)
          ? "ahead"
          : quorumHead !== null
            ? lagReason(head.timestamp, quorumHead.timestamp, settings.max_lag_seconds)
            : null;

    // A missed check is one this tick judged on its own: sticky exclusions are not counted
    // again, or an exclusion would feed itself and never end.
    const recentChecks = recordCheck(
      before.recentChecks,
      head === null || lag !== null,
      failingOften.missed_checks,
    );
    const failingOftenUntil = nextFailingOftenUntil(
      before.failingOftenUntil,
      isFailingOften(input.requestStats[check.provider] ?? NO_REQUESTS, recentChecks, failingOften),
      now,
      failingOften.exclude_seconds,
    );
    // The failing tick is reported as no_answer; the N ticks after it as failed_recently. So
    // are the N ticks after a fork verdict: a provider flapping between forks would otherwise
    // be a member every other tick, and its answers about finalized blocks cached for good.
    const failedRecently = head !== null && before.failedRecentlyRemaining > 0;

    memory[check.provider] = {
      failedRecentlyRemaining:
        head === null || wrongFork
          ? settings.failed_recently_checks
          : Math.max(0, before.failedRecentlyRemaining - 1),
      recentChecks,
      failingOftenUntil,
      wrongChain,
      lastChainIdCheckAt: check.chainIdOk === null ? before.lastChainIdCheckAt : now,
      wrongFork,
    };

    const reason: QuorumReason | null = wrongChain
      ? "wrong_chain"
      : wrongFork
        ? "wrong_fork"
        : head === null
          ? "no_answer"
          : now < failingOftenUntil
            ? "failing_often"
            : failedRecently
              ? "failed_recently"
              : lag;
    if (reason === null) members.push(check.provider);
    else excluded[check.provider] = reason;
  }

  return {
    head: quorumHead?.number ?? null,
    headTimestamp: quorumHead?.timestamp ?? null,
    members,
    excluded,
    memory,
    finalizedMajority: forks.largestGroup,
  };
}

/** The fork verdicts of this tick: answers from the right chain, against the recorded hash. */
function forkTally(
  recordedHash: string | null,
  checks: readonly HeadCheck[],
  isWrongChain: (check: HeadCheck) => boolean,
): ForkTally {
  if (recordedHash === null) return { verdicts: new Map(), largestGroup: [] };
  const answers = checks.flatMap((check): FinalizedAnswer[] =>
    check.finalizedHash === undefined || isWrongChain(check)
      ? []
      : [{ provider: check.provider, hash: check.finalizedHash }],
  );
  return tallyForks(recordedHash, answers);
}
