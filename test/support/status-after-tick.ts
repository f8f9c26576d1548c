/**
 * A network's status route as e2e tests of the monitor read it: `status()` now, and
 * `statusAfter(tick)` once it shows a monitor tick other than `tick` (a container refreshes its
 * copy of the shared state off the hot path, so the tick shows a moment after it ran).
 */
export interface TickedStatus {
  readonly monitor: { readonly last_tick_at: string | null };
}

export function statusReader<S extends TickedStatus>(url: string, network: string) {
  const status = async () => (await (await fetch(`${url}/${network}/status`)).json()) as S;
  const statusAfter = async (after: string | null): Promise<S> => {
    for (let wait = 0; wait < 100; wait++) {
      const now = await status();
      if (now.monitor.last_tick_at !== null && now.monitor.last_tick_at !== after) return now;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the monitor's tick never showed on the status route");
  };
  /**
   * Once the start-up tick has ended: a tick shows, and no newer one for `quietMs`. The status
   * shows a tick at its quorum check, before its probes and heartbeat; a test tick begun then
   * would read the start-up tick's heartbeat as its own (and its quorum, not the test's).
   */
  const statusSettled = async (quietMs = 300): Promise<S> => {
    let seen = await statusAfter(null);
    for (let wait = 0; wait < 100; wait++) {
      await new Promise((resolve) => setTimeout(resolve, quietMs));
      const now = await status();
      if (now.monitor.last_tick_at === seen.monitor.last_tick_at) return now;
      seen = now;
    }
    throw new Error("the monitor's ticks never settled on the status route");
  };
  return { status, statusAfter, statusSettled };
}
