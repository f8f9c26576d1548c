import type { DynamoCall } from "../tools/lambda-env.ts";

/**
 * Cost per million proxied requests at list prices (us-east-1, on demand, arm64), from what
 * the bench measured: the handler's billed duration and the DynamoDB calls it made.
 */

export const PRICES = {
  /** API Gateway HTTP API, first 300 M requests a month. */
  httpApiPerMillion: 1.0,
  lambdaRequestsPerMillion: 0.2,
  /** Lambda duration on arm64, per GB-second. */
  lambdaArmPerGbSecond: 0.0000133334,
  dynamoReadUnitPerMillion: 0.125,
  dynamoWriteUnitPerMillion: 0.625,
} as const;

/** Paced invocations before the measured ones: a container's first seconds are its start. */
export const COST_WARMUP_SECONDS = 5;

/** Lambda gives a function one full vCPU at 1,769 MB and a proportional share below. */
const FULL_VCPU_MB = 1769;

export interface CostBreakdown {
  readonly requests: number;
  /** Mean billed duration per request, ms (each invocation rounded up to 1 ms). */
  readonly billedMs: number;
  readonly readUnitsPerRequest: number;
  readonly writeUnitsPerRequest: number;
  readonly callsPerRequest: Readonly<Record<string, number>>;
  /** Dollars per million requests. */
  readonly httpApi: number;
  readonly lambdaRequests: number;
  readonly lambdaDuration: number;
  readonly dynamo: number;
  readonly total: number;
}

/** One invocation as measured here. */
export interface Invocation {
  readonly wallMs: number;
  readonly cpuMs: number;
  /** Time it spent runnable but waiting for a core: other processes' load on this machine. */
  readonly waitMs: number;
}

/**
 * Billed duration of one invocation, in ms: its wall time here without the time it waited for
 * a core (a Lambda container has its share to itself), its CPU time stretched by how much
 * less CPU Lambda gives the configured memory than a whole core, rounded up to Lambda's 1 ms
 * billing step.
 */
export function billedMs(invocation: Invocation, memoryMb: number): number {
  const stretch = Math.max(1, FULL_VCPU_MB / memoryMb);
  const here = Math.max(0, invocation.wallMs - invocation.waitMs);
  return Math.max(1, Math.ceil(here + invocation.cpuMs * (stretch - 1)));
}

/**
 * Capacity units of one call. A Query or eventually consistent read costs half a read unit
 * per 4 KB read (its answer's size stands in for the items'); a strongly consistent GetItem a
 * whole one; a write one unit per KB written (the request's size stands in for the item's).
 */
function capacityUnits(call: DynamoCall): { read: number; write: number } {
  switch (call.operation) {
    case "Query":
    case "Scan":
      return { read: 0.5 * Math.max(1, Math.ceil(call.responseBytes / 4096)), write: 0 };
    case "GetItem":
      return { read: Math.max(1, Math.ceil(call.responseBytes / 4096)), write: 0 };
    case "UpdateItem":
    case "PutItem":
    case "DeleteItem":
      return { read: 0, write: Math.max(1, Math.ceil(call.requestBytes / 1024)) };
    default:
      return { read: 0, write: 0 };
  }
}

export function costPerMillion(options: {
  readonly invocations: readonly Invocation[];
  readonly memoryMb: number;
  readonly dynamoCalls: readonly DynamoCall[];
}): CostBreakdown {
  const requests = options.invocations.length;
  const billed =
    options.invocations.reduce((sum, call) => sum + billedMs(call, options.memoryMb), 0) /
    Math.max(1, requests);
  let read = 0;
  let write = 0;
  const calls: Record<string, number> = {};
  for (const call of options.dynamoCalls) {
    const units = capacityUnits(call);
    read += units.read;
    write += units.write;
    // Named by the kind of item as well (`UpdateItem STATS`, `Query NET`): which writes they are.
    const name =
      call.partition === undefined
        ? call.operation
        : `${call.operation} ${call.partition.split("#")[0]}`;
    calls[name] = (calls[name] ?? 0) + 1;
  }
  const perRequest = (value: number) => value / Math.max(1, requests);
  const readUnitsPerRequest = perRequest(read);
  const writeUnitsPerRequest = perRequest(write);
  const lambdaDuration =
    (billed / 1000) * (options.memoryMb / 1024) * PRICES.lambdaArmPerGbSecond * 1e6;
  const dynamo =
    readUnitsPerRequest * PRICES.dynamoReadUnitPerMillion +
    writeUnitsPerRequest * PRICES.dynamoWriteUnitPerMillion;
  return {
    requests,
    billedMs: billed,
    readUnitsPerRequest,
    writeUnitsPerRequest,
    callsPerRequest: Object.fromEntries(
      Object.entries(calls).map(([operation, count]) => [operation, perRequest(count)]),
    ),
    httpApi: PRICES.httpApiPerMillion,
    lambdaRequests: PRICES.lambdaRequestsPerMillion,
    lambdaDuration,
    dynamo,
    total: PRICES.httpApiPerMillion + PRICES.lambdaRequestsPerMillion + lambdaDuration + dynamo,
  };
}

/** What each millisecond of provider latency adds per million requests at this memory. */
export const dollarsPerMillionPerMs = (memoryMb: number): number =>
  (1 / 1000) * (memoryMb / 1024) * PRICES.lambdaArmPerGbSecond * 1e6;
