import { FOLLOWER_RUN_MS } from "./follow-run.ts";

/** What the schedule starts: a run until a time it may bring forward, on the follower's clock. */
export interface ScheduledFollower {
  run(holder: string, until: () => number): Promise<unknown>;
  readonly clock: () => number;
}

/**
 * For the local runtime: what EventBridge does in AWS, a run every `everyMs` lasting `runMs`
 * (so runs overlap and hand each network's lease over, as they do in Lambda). `stop()` cancels
 * the schedule, brings the running runs to an end and waits for them.
 */
export function startFollowerSchedule(
  follower: ScheduledFollower,
  { everyMs = 60_000, runMs = FOLLOWER_RUN_MS }: { everyMs?: number; runMs?: number } = {},
  onError: (error: unknown) => void = (error) => console.error("follower run failed:", error),
): () => Promise<void> {
  let stopped = false;
  let runs = 0;
  const running = new Set<Promise<unknown>>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const start = (): void => {
    if (stopped) return;
    const until = follower.clock() + runMs;
    const run = follower
      .run(`local-run-${++runs}`, () => (stopped ? 0 : until))
      .catch(onError)
      .finally(() => running.delete(run));
    running.add(run);
    timer = setTimeout(start, everyMs);
  };
  start();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await Promise.all(running);
  };
}
