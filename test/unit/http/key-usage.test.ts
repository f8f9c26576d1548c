import { describe, expect, it } from "vitest";
import {
  type KeyDecision,
  KeyUsage,
  type Reservation,
} from "../../../functions/core/http/key-usage.ts";

/**
 * requests_per_minute across containers (docs/behaviour.md §8.5): a container admits from
 * tokens it reserved in the key's shared counter; the shared counter is a plain number here,
 * added to as DynamoDB's ADD does.
 */

const MINUTE = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);
const LIMIT = { name: "indexer", requestsPerMinute: 60 };

/** Containers over one shared counter (per minute), as DynamoDB's ADD keeps it. */
function fleet(start = T0) {
  let now = start;
  const counters = new Map<number, number>();
  const writes: Reservation[] = [];
  const add = (reservation: Reservation) => {
    writes.push(reservation);
    const total = (counters.get(reservation.minute) ?? 0) + reservation.count;
    counters.set(reservation.minute, total);
    return total;
  };
  /** One request through a container: reserving until it is admitted or refused. */
  const request = (usage: KeyUsage, limit = LIMIT): boolean => {
    for (;;) {
      const decision: KeyDecision = usage.decide(limit);
      if (decision.kind !== "reserve") return decision.kind === "admit";
      usage.reserved(limit, decision.reservation, add(decision.reservation));
    }
  };
  return {
    container: () => new KeyUsage(() => now),
    request,
    writes,
    set: (ms: number) => {
      now = ms;
    },
  };
}

const admitted = (answers: boolean[]) => answers.filter(Boolean).length;

describe("KeyUsage: tokens reserved in the shared counter", () => {
  it.each([1, 4, 16, 200])(
    "a burst through %i containers admits the limit, never more",
    (containers) => {
      const f = fleet();
      const all = Array.from({ length: containers }, () => f.container());
      // Round-robin, as containers each take the next request.
      const answers = Array.from({ length: 500 }, (_, i) =>
        f.request(all[i % containers] as KeyUsage),
      );
      expect(admitted(answers)).toBe(60);
    },
  );

  it("a key used at a quarter of its limit across 20 containers is never refused", () => {
    const f = fleet();
    const big = { name: "wide", requestsPerMinute: 6000 };
    const all = Array.from({ length: 20 }, () => f.container());
    const answers = Array.from({ length: 1500 }, (_, i) => f.request(all[i % 20] as KeyUsage, big));
    expect(admitted(answers)).toBe(1500);
  });

  it("blocks start at one token and double; near the limit, one token a write", () => {
    const f = fleet();
    const one = f.container();
    Array.from({ length: 70 }, () => f.request(one));
    // Each block: twice the last, at most an eighth of what the total left (at least 1).
    expect(f.writes.map((w) => w.count)).toEqual([
      1,
      2,
      4,
      6,
      5,
      5,
      4,
      4,
      3,
      3,
      2,
      2,
      2,
      2,
      ...Array.from({ length: 15 }, () => 1),
    ]);
    // Every token reserved was used: 29 writes for 60 requests, none for the 10 refused.
    expect(f.writes.reduce((sum, w) => sum + w.count, 0)).toBe(60);
  });

  it("a container that saw the minute used up refuses without another write until the minute ends", () => {
    const f = fleet();
    const one = f.container();
    expect(admitted(Array.from({ length: 80 }, () => f.request(one)))).toBe(60);
    const writes = f.writes.length;
    expect(f.request(one)).toBe(false);
    expect(f.writes).toHaveLength(writes);
    f.set(T0 + MINUTE);
    expect(f.request(one)).toBe(true);
    expect(f.writes.at(-1)).toEqual({ key: "indexer", minute: T0 + MINUTE, count: 1 });
  });

  it("a reservation answered after its minute ended grants nothing in the new one", () => {
    const f = fleet();
    const one = f.container();
    const decision = one.decide(LIMIT);
    if (decision.kind !== "reserve") throw new Error("expected a reservation");
    f.set(T0 + MINUTE);
    one.reserved(LIMIT, decision.reservation, 1);
    const next = one.decide(LIMIT);
    expect(next).toEqual({
      kind: "reserve",
      reservation: { key: "indexer", minute: T0 + MINUTE, count: 1 },
    });
  });

  it("counting alone (the counter unreachable) admits the limit per container, and later tokens pay those back", () => {
    const f = fleet();
    const one = f.container();
    const alone = Array.from({ length: 70 }, () => one.admitAlone(LIMIT));
    expect(admitted(alone)).toBe(60);
    // Reachable again: the 60 admitted alone are owed before any new admission.
    expect(f.request(one)).toBe(false);
  });
});
