import { performance } from "node:perf_hooks";
import { proxyRuntimeFromEnvironment } from "../../functions/proxy/from-environment.ts";
import { createProxyHandler } from "../../functions/proxy/lambda.ts";

/**
 * The proxy handler as functions/proxy/handler.ts builds it, with the gateway's stage observer
 * on: what each stage of each request took is added up here, for the bench's `stages` part
 * (bundled as the stack bundles the handler, and invoked by lambda-child.ts).
 */

interface StageTotal {
  readonly phase: string;
  ms: number;
  count: number;
}

const totals = new Map<string, StageTotal>();

export const handler = createProxyHandler(
  proxyRuntimeFromEnvironment(process.env, {
    stageObserver: {
      now: () => performance.now(),
      stage(name, phase, ms, internal) {
        const key = internal ? `${name} (internal)` : name;
        const total = totals.get(key);
        if (total === undefined) totals.set(key, { phase, ms, count: 1 });
        else {
          total.ms += ms;
          total.count++;
        }
      },
    },
  }),
);

/** Forgets what the stages took so far (the warm-up's). */
export function resetStageTimings(): void {
  totals.clear();
}

/** Each stage's total ms and how often it ran, in the order the stages first ran. */
export function stageTimings(): Array<{ stage: string; phase: string; ms: number; count: number }> {
  return [...totals].map(([stage, total]) => ({ stage, ...total }));
}
