import type { StageObserver } from "./gateway-deps.ts";
import type { InFlight, Stage } from "./in-flight.ts";
import type { GatewayResponse } from "./vocabulary.ts";

/**
 * Walks a request through `stages` in order, as middy walks its middlewares: each stage runs
 * once, awaited only when it returns a promise, until one gives an early response. Returns the
 * response the stages built.
 */
export async function walk(
  stages: readonly Stage[],
  flight: InFlight,
  observer: StageObserver | undefined,
): Promise<GatewayResponse> {
  if (observer !== undefined) return walkObserved(stages, flight, observer);
  for (let index = 0; index < stages.length && !flight.done; index++) {
    const running = (stages[index] as Stage).run(flight);
    if (running !== undefined) await running;
  }
  return answerOf(flight);
}

async function walkObserved(
  stages: readonly Stage[],
  flight: InFlight,
  observer: StageObserver,
): Promise<GatewayResponse> {
  const internal = flight.internal !== undefined;
  for (let index = 0; index < stages.length && !flight.done; index++) {
    const stage = stages[index] as Stage;
    const started = observer.now();
    const running = stage.run(flight);
    if (running !== undefined) await running;
    observer.stage(stage.name, stage.phase, observer.now() - started, internal);
  }
  return answerOf(flight);
}

function answerOf(flight: InFlight): GatewayResponse {
  if (flight.response === null) throw new Error("the stages gave no response");
  return flight.response;
}
