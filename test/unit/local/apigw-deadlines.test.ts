import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { InvocationDeadlines } from "../../../local/apigw-deadlines.ts";

/** The emulator's invocation timeouts: one timer for all, each invocation timed from its start. */

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

function watcher(deadlines: InvocationDeadlines<string>) {
  const expired: string[] = [];
  const watch = (name: string) => deadlines.watch((value) => expired.push(`${name}:${value}`));
  return { expired, watch };
}

describe("invocation deadlines", () => {
  it("times out each invocation its own duration after it started, not when the first one does", () => {
    const deadlines = new InvocationDeadlines(1000, "timeout");
    const { expired, watch } = watcher(deadlines);
    watch("a");
    vi.advanceTimersByTime(300);
    watch("b");
    vi.advanceTimersByTime(400);
    watch("c");
    vi.advanceTimersByTime(299);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(["a:timeout"]);
    vi.advanceTimersByTime(299);
    expect(expired).toEqual(["a:timeout"]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(["a:timeout", "b:timeout"]);
    vi.advanceTimersByTime(400);
    expect(expired).toEqual(["a:timeout", "b:timeout", "c:timeout"]);
  });

  it("never times out an invocation released in time, whatever order they settle in", () => {
    const deadlines = new InvocationDeadlines(1000, "timeout");
    const { expired, watch } = watcher(deadlines);
    const a = watch("a");
    vi.advanceTimersByTime(100);
    const b = watch("b");
    vi.advanceTimersByTime(100);
    const c = watch("c");
    deadlines.release(b);
    vi.advanceTimersByTime(799);
    deadlines.release(a);
    vi.advanceTimersByTime(1000);
    expect(expired).toEqual(["c:timeout"]);
    deadlines.release(c);
    expect(expired).toEqual(["c:timeout"]);
  });

  it("times out an invocation that started after every earlier one was released and the timer had gone quiet", () => {
    const deadlines = new InvocationDeadlines(1000, "timeout");
    const { expired, watch } = watcher(deadlines);
    deadlines.release(watch("a"));
    vi.advanceTimersByTime(5000);
    watch("b");
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(["b:timeout"]);
  });

  it("keeps timing the invocations behind one that is still waiting while thousands before it are released", () => {
    const deadlines = new InvocationDeadlines(1000, "timeout");
    const { expired, watch } = watcher(deadlines);
    watch("stuck");
    for (let index = 0; index < 3000; index++) {
      const waiting = watch(`w${index}`);
      if (index !== 2500) deadlines.release(waiting);
    }
    vi.advanceTimersByTime(1000);
    expect(expired).toEqual(["stuck:timeout", "w2500:timeout"]);
  });

  it("stops timing when closed", () => {
    const deadlines = new InvocationDeadlines(1000, "timeout");
    const { expired, watch } = watcher(deadlines);
    watch("a");
    deadlines.close();
    vi.advanceTimersByTime(5000);
    expect(expired).toEqual([]);
  });
});
