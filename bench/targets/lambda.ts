import { BASELINE_ENTRY, type Bundle, buildBundle, GATEWAY_ENTRY } from "../tools/bundles.ts";
import {
  LAMBDA_BLOCK_TIME_SECONDS,
  type LambdaCall,
  type LambdaEnvironment,
} from "../tools/lambda-env.ts";
import { median, spread } from "../tools/machine.ts";
import type { RevisionTree } from "../tools/revision-tree.ts";
import { COST_WARMUP_SECONDS, type CostBreakdown, costPerMillion } from "./cost.ts";

/**
 * What a Lambda container pays, measured on the bundles the stack ships: CPU per request when
 * the proxy handler is invoked directly with API Gateway events (no HTTP server), the cold
 * start (import, then the first request), and the cost per million requests. Each against the
 * baseline handler (bench/baseline/minimal-handler.ts), in fresh processes, alternated.
 */

/** `against`: the gateway of another revision (`--against`), measured beside this one. */
export type Role = "gateway" | "baseline" | "against";

export interface LambdaVariant {
  readonly role: Role;
  readonly bundle: Bundle;
}

/**
 * `configText`: the S3 object's text, bundled beside each handler as a deploy bundles it;
 * `against`: another revision's tree, whose gateway is built too.
 */
export async function buildVariants(
  configText: string,
  against?: RevisionTree,
): Promise<LambdaVariant[]> {
  const variants: LambdaVariant[] = [];
  for (const role of ["gateway", "baseline"] as const) {
    const entry = role === "gateway" ? GATEWAY_ENTRY : BASELINE_ENTRY;
    variants.push({ role, bundle: await buildBundle({ name: role, entry, configText }) });
  }
  if (against !== undefined) {
    const name = `gateway@${against.commit}`;
    const bundle = await buildBundle({
      name,
      entry: GATEWAY_ENTRY,
      configText,
      root: against.root,
    });
    variants.push({ role: "against", bundle });
  }
  return variants;
}

export interface HandlerCpuRecord {
  readonly variant: string;
  readonly role: Role;
  /** CPU µs per request of each round (one fresh process each). */
  readonly cpuUs: readonly number[];
  readonly wallMs: readonly number[];
  readonly medianCpuUs: number;
  readonly medianWallMs: number;
  readonly spread: number;
  /** DynamoDB calls per request during the measured invocations. */
  readonly dynamoPerRequest: Readonly<Record<string, number>>;
}

interface LoopFigures {
  readonly count: number;
  readonly cpuUsPerRequest: number;
  readonly wallMsPerRequest: number;
  readonly measuredFrom: number;
  readonly measuredTo: number;
}

export async function measureHandlerCpu(
  environment: LambdaEnvironment,
  variants: readonly LambdaVariant[],
  plan: {
    readonly rounds: number;
    readonly warmup: number;
    readonly count: number;
    readonly call: LambdaCall;
  },
  log: (line: string) => void,
): Promise<HandlerCpuRecord[]> {
  const rounds = new Map<LambdaVariant, LoopFigures[]>(variants.map((v) => [v, []]));
  const calls = new Map<LambdaVariant, Record<string, number>>(variants.map((v) => [v, {}]));
  for (let round = 1; round <= plan.rounds; round++) {
    // The order alternates, so a drift in the machine's load does not always favour one.
    for (const variant of round % 2 === 1 ? variants : [...variants].reverse()) {
      // As deployed: the monitor has written the chain position (without it, every container
      // keeps retrying a served-head publication that cannot succeed).
      await environment.writeChainPosition();
      const figures = await environment.runChild<LoopFigures>({
        module: variant.bundle.file,
        mode: "loop",
        ...plan.call,
        warmup: plan.warmup,
        count: plan.count,
      });
      rounds.get(variant)?.push(figures);
      const tally = calls.get(variant) ?? {};
      for (const call of environment.dynamoCalls(figures.measuredFrom)) {
        if (call.at <= figures.measuredTo) tally[call.operation] = (tally[call.operation] ?? 0) + 1;
      }
      log(
        `handler ${variant.bundle.name.padEnd(16)} round ${round}: ${figures.cpuUsPerRequest.toFixed(0)} µs CPU/request, ${(figures.wallMsPerRequest * 1000).toFixed(0)} µs wall`,
      );
    }
  }
  return variants.map((variant) => {
    const figures = rounds.get(variant) ?? [];
    const cpuUs = figures.map((f) => f.cpuUsPerRequest);
    const requests = figures.reduce((sum, f) => sum + f.count, 0);
    return {
      variant: variant.bundle.name,
      role: variant.role,
      cpuUs,
      wallMs: figures.map((f) => f.wallMsPerRequest),
      medianCpuUs: median(cpuUs),
      medianWallMs: median(figures.map((f) => f.wallMsPerRequest)),
      spread: spread(cpuUs),
      dynamoPerRequest: Object.fromEntries(
        Object.entries(calls.get(variant) ?? {}).map(([op, n]) => [op, n / Math.max(1, requests)]),
      ),
    };
  });
}

export interface ColdStartRecord {
  readonly variant: string;
  readonly role: Role;
  readonly bytes: number;
  /**
   * CPU time of each start, ms: what stretches on Lambda's share of a vCPU, and what other
   * people's load on this machine disturbs least (wall time here also counts waiting for a core).
   */
  readonly importCpuMs: readonly number[];
  readonly firstRequestCpuMs: readonly number[];
  readonly importMs: readonly number[];
  readonly firstRequestMs: readonly number[];
  readonly medianImportCpuMs: number;
  /** Median of import + first request, per start. */
  readonly medianTotalCpuMs: number;
  readonly medianImportMs: number;
  readonly medianTotalMs: number;
  /** Median wall time less the time spent waiting for a core. */
  readonly medianOwnTotalMs: number;
}

interface ColdFigures {
  readonly importMs: number;
  readonly importCpuMs: number;
  readonly importWaitMs: number;
  readonly firstRequestMs: number;
  readonly firstRequestCpuMs: number;
  readonly firstRequestWaitMs: number;
}

export async function measureColdStarts(
  environment: LambdaEnvironment,
  variants: readonly LambdaVariant[],
  plan: { readonly starts: number; readonly call: LambdaCall },
  log: (line: string) => void,
): Promise<ColdStartRecord[]> {
  const starts = new Map<LambdaVariant, ColdFigures[]>(variants.map((v) => [v, []]));
  for (let start = 1; start <= plan.starts; start++) {
    for (const variant of variants) {
      const f = await environment.runChild<ColdFigures>({
        module: variant.bundle.file,
        mode: "cold",
        ...plan.call,
      });
      starts.get(variant)?.push(f);
      log(
        `cold ${variant.role.padEnd(8)} start ${start}: import ${f.importCpuMs.toFixed(0)} ms CPU (${f.importMs.toFixed(0)} wall), first request ${f.firstRequestCpuMs.toFixed(0)} ms CPU (${f.firstRequestMs.toFixed(0)} wall)`,
      );
    }
  }
  return variants.map((variant) => {
    const figures = starts.get(variant) ?? [];
    const pick = (get: (f: ColdFigures) => number) => figures.map(get);
    return {
      variant: variant.bundle.name,
      role: variant.role,
      bytes: variant.bundle.bytes,
      importCpuMs: pick((f) => f.importCpuMs),
      firstRequestCpuMs: pick((f) => f.firstRequestCpuMs),
      importMs: pick((f) => f.importMs),
      firstRequestMs: pick((f) => f.firstRequestMs),
      medianImportCpuMs: median(pick((f) => f.importCpuMs)),
      medianTotalCpuMs: median(pick((f) => f.importCpuMs + f.firstRequestCpuMs)),
      medianImportMs: median(pick((f) => f.importMs)),
      medianTotalMs: median(pick((f) => f.importMs + f.firstRequestMs)),
      medianOwnTotalMs: median(
        pick((f) => f.importMs - f.importWaitMs + f.firstRequestMs - f.firstRequestWaitMs),
      ),
    };
  });
}

export interface CostRecord extends CostBreakdown {
  /** Requests a second this one container served. */
  readonly rate: number;
  readonly medianWallMs: number;
  readonly medianCpuMs: number;
  /** Waiting for a core on this shared machine; not billed in Lambda. */
  readonly medianWaitMs: number;
}

export async function measureCost(
  environment: LambdaEnvironment,
  gateway: LambdaVariant,
  plan: {
    readonly rates: readonly number[];
    readonly seconds: number;
    readonly memoryMb: number;
    readonly call: LambdaCall;
  },
  log: (line: string) => void,
): Promise<CostRecord[]> {
  const records: CostRecord[] = [];
  for (const rate of plan.rates) {
    // As deployed: the monitor has written the chain position, and the chain moves on at its
    // block time, so containers publish the served head as often as a live chain makes them.
    await environment.writeChainPosition();
    const mining = setInterval(
      () => environment.mineBlock().catch(() => undefined),
      LAMBDA_BLOCK_TIME_SECONDS * 1000,
    );
    const figures = await environment
      .runChild<{
        durationsMs: number[];
        cpuMs: number[];
        waitMs: number[];
        measuredFrom: number;
        measuredTo: number;
      }>({
        module: gateway.bundle.file,
        mode: "paced",
        ...plan.call,
        rate,
        seconds: plan.seconds,
        warmup: Math.round(rate * COST_WARMUP_SECONDS),
      })
      .finally(() => clearInterval(mining));
    const dynamoCalls = environment
      .dynamoCalls(figures.measuredFrom)
      .filter((call) => call.at <= figures.measuredTo);
    const cost = costPerMillion({
      invocations: figures.durationsMs.map((wallMs, index) => ({
        wallMs,
        cpuMs: figures.cpuMs[index] ?? 0,
        waitMs: figures.waitMs[index] ?? 0,
      })),
      memoryMb: plan.memoryMb,
      dynamoCalls,
    });
    records.push({
      ...cost,
      rate,
      medianWallMs: median(figures.durationsMs),
      medianCpuMs: median(figures.cpuMs),
      medianWaitMs: median(figures.waitMs),
    });
    log(
      `cost at ${rate} requests/s: ${cost.requests} requests, billed ${cost.billedMs.toFixed(2)} ms, ${JSON.stringify(cost.callsPerRequest)} DynamoDB calls/request, $${cost.total.toFixed(4)} per million`,
    );
  }
  return records;
}
