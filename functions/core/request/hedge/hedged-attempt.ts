import type { Provider } from "../../config/network-model.ts";
import type { HedgeTimer, HedgeWait, UpstreamResult } from "../../ports.ts";
import type { AttemptGroup } from "../vocabulary.ts";
import type { RequestHedging } from "./hedging.ts";

/** One attempt's result, and whether its timeout was cut to the time left before the deadline. */
export interface SentAttempt {
  readonly result: UpstreamResult;
  readonly cutShort: boolean;
}

export interface HedgeRace {
  /** Sends one attempt of a group; aborting `signal` ends it at once. */
  readonly send: (group: AttemptGroup, signal?: AbortSignal) => Promise<SentAttempt>;
  /** Judges and records an attempt that counts (never an aborted loser). */
  readonly settle: (group: AttemptGroup, sent: SentAttempt) => void;
  /** Whether the request may make one more upstream call (`max_upstream_calls`). */
  readonly callsLeft: () => boolean;
  /** Counts one more upstream call of the request. */
  readonly spendCall: () => void;
  readonly single: boolean;
  readonly maxAttempts: number;
  readonly batchLimit: (provider: Provider) => number;
  readonly deadline: number;
  readonly clock: () => number;
}

const LOST_THE_RACE = new Error("hedged read: the other attempt answered first");

/**
 * The group's first attempt, hedged (docs/behaviour.md §13): when it has not answered after
 * the hedging delay, the same calls go to the next provider of their order as well, and the
 * first attempt that leaves every call answered wins. The other is aborted and never judged,
 * so it counts neither for nor against its provider. An attempt that fails while the other
 * runs counts as any failure does, and the other one is the call's retry.
 */
export async function attemptHedged(
  group: AttemptGroup,
  hedging: RequestHedging,
  race: HedgeRace,
): Promise<void> {
  // Without a provider to hedge on, no hedge can start: no abort signal, no timer.
  const delay = hedgeSlotOf(group, race) === null ? null : hedging.delayFor(group);
  if (delay === null) {
    race.settle(group, await race.send(group));
    return;
  }
  const firstController = new AbortController();
  const first = race
    .send(group, firstController.signal)
    .then((sent) => ({ group, controller: firstController, sent }));
  const delayed = delayThenTurn(hedging.timer, delay);
  const early = await Promise.race([first, delayed.done.then(() => null)]);
  if (early !== null) {
    delayed.cancel();
    race.settle(group, early.sent);
    return;
  }
  const hedge = hedgeOf(group, race);
  if (hedge === null || !takeHedge(group, hedging, race)) {
    race.settle(group, (await first).sent);
    return;
  }
  const slowProvider = group.slot.provider.name;
  hedging.count("started", slowProvider);
  const hedgeController = new AbortController();
  const second = race
    .send(hedge, hedgeController.signal)
    .then((sent) => ({ group: hedge, controller: hedgeController, sent }));
  let running = [first, second];
  while (running.length > 0) {
    const done = await Promise.race(running);
    running = running.filter((attempt) => attempt !== (done.group === hedge ? second : first));
    race.settle(done.group, done.sent);
    if (group.calls.every((entry) => entry.answer !== null)) {
      if (running.length > 0) {
        const loser = done.controller === firstController ? hedgeController : firstController;
        loser.abort(LOST_THE_RACE);
        hedging.count("aborted", slowProvider);
      }
      if (done.group === hedge) hedging.count("won", slowProvider);
      return;
    }
  }
}

/**
 * The delay, then one more turn of the event loop through its I/O: after a CPU stall the
 * timers run before the answers that arrived meanwhile are read, and an answer already there
 * must not be hedged.
 */
function delayThenTurn(timer: HedgeTimer, ms: number): HedgeWait {
  let current = timer(ms);
  const done = current.done.then(() => {
    current = timer(0);
    return current.done;
  });
  return { done, cancel: () => current.cancel() };
}

/**
 * The provider a hedge of the group would go to: the one each call takes next, when they agree
 * on one that is a candidate (not emergency use) and each call has an attempt left. Null
 * otherwise. None of this changes while the group's first attempt is out.
 */
function hedgeSlotOf(group: AttemptGroup, race: HedgeRace): AttemptGroup["slot"] | null {
  let slot: AttemptGroup["slot"] | null = null;
  for (const entry of group.calls) {
    const next = entry.order[entry.next];
    if (entry.answer !== null || entry.attempts >= race.maxAttempts) return null;
    if (next === undefined || next.emergency) return null;
    if (slot !== null && slot.provider.name !== next.provider.name) return null;
    slot = next;
  }
  return slot;
}

/**
 * The hedge of a group whose first attempt is still out: the same calls, to the provider
 * `hedgeSlotOf` names, when that provider takes a batch that size. Null otherwise.
 */
function hedgeOf(group: AttemptGroup, race: HedgeRace): AttemptGroup | null {
  const slot = hedgeSlotOf(group, race);
  if (slot === null) return null;
  const size = Math.max(1, race.batchLimit(slot.provider));
  if (!race.single && group.calls.length > size) return null;
  return { slot, calls: [...group.calls], alone: race.single || size === 1 };
}

/**
 * Takes what a hedge costs, in this order: time left before the deadline, one upstream call of
 * the request's budget, one hedge of the container's budget. Then the calls take their slot.
 */
function takeHedge(group: AttemptGroup, hedging: RequestHedging, race: HedgeRace): boolean {
  if (race.deadline - race.clock() <= 0 || !race.callsLeft()) return false;
  if (!hedging.takeBudget()) return false;
  race.spendCall();
  for (const entry of group.calls) {
    entry.next++;
    entry.attempts++;
  }
  return true;
}
