import type { HedgeTimer, Wait } from "../core/ports.ts";

/** The real timer behind the core's `Wait` port: resolves after `ms`, or at once on abort. */
export const wait: Wait = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });

/** The real timer behind hedged reads: a plain timer, cheaper than an abortable `wait`. */
export const hedgeTimer: HedgeTimer = (ms) => {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
};
