import { buildBundle, STAGED_ENTRY } from "../tools/bundles.ts";
import type { LambdaCall, LambdaEnvironment } from "../tools/lambda-env.ts";
import { median } from "../tools/machine.ts";
import { measuredWhen, type PartMeta } from "../verdict.ts";

/**
 * What each stage of the request pipeline costs a forwarded call: the handler invoked as the
 * `handler` part invokes it, bundled with the gateway's stage observer on
 * (`tools/staged-handler.ts`), each stage's time (awaits included: `attempts` holds the
 * upstream's answer) added up over the measured invocations. Rounds in fresh processes.
 */

/** What each stage took, as bench/results.json keeps it. */
export interface StagesPart extends PartMeta {
  readonly rounds: number;
  readonly count: number;
  readonly records: readonly StageRecord[];
  /** The staged handler's CPU per request, each round (the observer's clock reads included). */
  readonly cpuUs: readonly number[];
}

export interface StageRecord {
  readonly stage: string;
  readonly phase: string;
  /** µs per request of each round. */
  readonly usPerRequest: readonly number[];
  readonly medianUs: number;
  /** How many times a request ran it (1, or more for an internal call's stages). */
  readonly perRequest: number;
}

interface StagedFigures {
  readonly count: number;
  readonly cpuUsPerRequest: number;
  readonly stages: ReadonlyArray<{ stage: string; phase: string; ms: number; count: number }>;
}

export async function measureStages(
  environment: LambdaEnvironment,
  plan: {
    readonly configText: string;
    readonly rounds: number;
    readonly warmup: number;
    readonly count: number;
    readonly call: LambdaCall;
  },
  log: (line: string) => void,
): Promise<{ readonly records: StageRecord[]; readonly cpuUs: number[] }> {
  const bundle = await buildBundle({
    name: "gateway-staged",
    entry: STAGED_ENTRY,
    configText: plan.configText,
  });
  const rounds: StagedFigures[] = [];
  for (let round = 1; round <= plan.rounds; round++) {
    await environment.writeChainPosition();
    const figures = await environment.runChild<StagedFigures>({
      module: bundle.file,
      mode: "loop",
      ...plan.call,
      warmup: plan.warmup,
      count: plan.count,
    });
    rounds.push(figures);
    const walked = figures.stages.reduce((sum, s) => sum + s.ms, 0);
    log(
      `stages round ${round}: ${((walked * 1000) / figures.count).toFixed(0)} µs in the stages per request, ${figures.cpuUsPerRequest.toFixed(0)} µs CPU`,
    );
  }
  const names = rounds[0]?.stages ?? [];
  const records = names.map(({ stage, phase }) => {
    const usPerRequest = rounds.map((r) => {
      const found = r.stages.find((s) => s.stage === stage);
      return found === undefined ? 0 : (found.ms * 1000) / r.count;
    });
    const found = rounds[0]?.stages.find((s) => s.stage === stage);
    return {
      stage,
      phase,
      usPerRequest,
      medianUs: median(usPerRequest),
      perRequest: found === undefined ? 0 : found.count / (rounds[0]?.count ?? 1),
    };
  });
  return { records, cpuUs: rounds.map((r) => r.cpuUsPerRequest) };
}

export function renderStages(part: StagesPart): string[] {
  const total = part.records.reduce((sum, r) => sum + r.medianUs, 0);
  return [
    "## The request pipeline, stage by stage",
    "",
    `- Measured: ${measuredWhen(part)}`,
    `- The handler invoked as in "Handler CPU per request", on the same forwarded call, bundled with the gateway's stage observer on (\`bench/tools/staged-handler.ts\`): ${part.count} invocations after 2,000 of warm-up, ${part.rounds} rounds. Each stage's wall time, awaits included (\`attempts\` holds the upstream's answer); its CPU per request was ${part.cpuUs.map((v) => Math.round(v)).join(", ")} µs.`,
    "",
    "| stage | phase | µs/request (median) | every round | runs/request |",
    "|---|---|---:|---|---:|",
    ...part.records.map(
      (r) =>
        `| ${r.stage} | ${r.phase} | ${r.medianUs.toFixed(1)} | ${r.usPerRequest.map((v) => v.toFixed(1)).join(", ")} | ${r.perRequest.toFixed(2)} |`,
    ),
    `| all stages | | ${total.toFixed(1)} | | |`,
    "",
  ];
}
