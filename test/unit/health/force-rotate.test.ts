import { describe, expect, it } from "vitest";
import type { Verdict } from "../../../functions/core/classify/verdict.ts";
import {
  iso,
  MIN,
  NOW,
  ok,
  recorder,
  settled,
  three,
  unclassified,
} from "../../support/health-recorder-harness.ts";

/**
 * Force-rotate (docs/behaviour.md §4.6): unclassified errors in a row move traffic away from a
 * provider, through a shared blacklist when a backup exists, else by demoting it in this
 * container only.
 */

describe("force-rotate: unclassified errors in a row (force_rotate_errors, 3 by default)", () => {
  async function errorsInARow(
    r: ReturnType<typeof recorder>,
    verdicts: Verdict[],
    options: { callersCodeOnly?: boolean; network?: string } = {},
  ): Promise<void> {
    for (const verdict of verdicts) {
      const attempt = await r.attempt("p1", options);
      r.health.succeeded(attempt, verdict);
      await settled(attempt);
    }
  }

  it("with no backup: demoted in this container for the force_rotate cooldown, told once", async () => {
    const r = recorder({ net: { providers: three } });
    await errorsInARow(r, [unclassified, unclassified]);
    expect(r.health.demoted(r.network(), NOW)).toEqual(new Set());
    await errorsInARow(r, [unclassified]);
    const until = NOW + MIN;
    expect(r.health.demoted(r.network(), until - 1)).toEqual(new Set(["p1"]));
    expect(r.health.demoted(r.network(), until)).toEqual(new Set());
    expect(r.logs).toEqual([
      {
        level: "warn",
        message: "force-rotate: unclassified errors in a row",
        fields: { network: "net", provider: "p1", errors: 3 },
      },
    ]);
    expect(r.events).toEqual([
      {
        network: "net",
        at: NOW,
        provider: "p1",
        kind: "force_rotated",
        reason: "force_rotate",
        detail: `3 unclassified errors in a row: demoted in this container until ${iso(until)}`,
      },
    ]);
    expect(r.store.healthWrites).toEqual([]);
    // The count starts again after a rotation.
    await errorsInARow(r, [unclassified, unclassified]);
    expect(r.events).toHaveLength(1);
  });

  it("with a backup: a shared force_rotate blacklist, as a force_rotated event", async () => {
    const r = recorder({
      net: { providers: [...three, { name: "b", url: "http://b.test/", backup: true }] },
    });
    await errorsInARow(r, [unclassified, unclassified, unclassified]);
    expect(r.store.healthWrites.map((write) => write.next.reason)).toEqual(["force_rotate"]);
    expect(r.events.map((event) => [event.kind, event.detail.split(";")[0]])).toEqual([
      ["force_rotated", "3 unclassified errors in a row"],
    ]);
    expect(r.health.demoted(r.network(), NOW)).toEqual(new Set());
  });

  it.each<[string, Verdict[], { callersCodeOnly?: boolean }]>([
    [
      "a good answer between them starts the count again",
      [unclassified, unclassified, ok, unclassified, unclassified],
      {},
    ],
    [
      "calls running the caller's code do not count",
      [unclassified, unclassified, unclassified],
      { callersCodeOnly: true },
    ],
  ])("%s", async (_name, verdicts, options) => {
    const r = recorder({ net: { providers: three } });
    await errorsInARow(r, verdicts, options);
    expect(r.health.demoted(r.network(), NOW)).toEqual(new Set());
    expect(r.events).toEqual([]);
  });

  it("counts per network: a rotation on one network demotes nothing on another", async () => {
    // Names chosen so that network and provider, run together, read the same.
    const r = recorder({
      ne: { providers: [{ name: "tp1", url: "http://x.test/" }] },
      net: { providers: three },
    });
    await errorsInARow(r, [unclassified, unclassified, unclassified]);
    expect(r.health.demoted(r.network("net"), NOW)).toEqual(new Set(["p1"]));
    expect(r.health.demoted(r.network("ne"), NOW)).toEqual(new Set());
  });
});
