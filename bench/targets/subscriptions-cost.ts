import { formatLoad } from "../tools/machine.ts";
import type { PartMeta, Verdict } from "../verdict.ts";
import { verdict } from "../verdict.ts";
import {
  BENCH_BLOCK_SECONDS,
  type SizeRecord,
  type SubscriptionsMeasurement,
  type SubscriptionsOptions,
} from "./subscriptions.ts";

/**
 * What the subscriptions bench's counts cost at list prices (AWS us-east-1, on demand, arm64),
 * and its section of bench/RESULTS.md. The follower's function runs ~63 s of every minute
 * whatever it does (functions/core/follower/follow-run.ts), so its Lambda cost is its memory's,
 * sized here by the CPU the run measured; DynamoDB and API Gateway's messages grow with blocks
 * and notifications.
 */

export const SUBSCRIPTION_PRICES = {
  /** API Gateway WebSocket messages (sent and received), first billion a month, per 32 KB. */
  messagesPerMillion: 1.0,
  connectionMinutesPerMillion: 0.25,
  lambdaRequestsPerMillion: 0.2,
  lambdaArmPerGbSecond: 0.0000133334,
  dynamoReadUnitPerMillion: 0.125,
  dynamoWriteUnitPerMillion: 0.625,
} as const;

const HOURS_PER_MONTH = 730;
/** A follower run's length and the runs an hour (EventBridge each minute). */
const RUN_SECONDS = 63;
const RUNS_PER_HOUR = 60;
/** Lambda gives a function one full vCPU at 1,769 MB and a proportional share below. */
const FULL_VCPU_MB = 1769;
/** The stack's follower memory (infra/environments.ts) and the share of its CPU a run may use. */
export const FOLLOWER_MEMORY_MB = 256;
const CPU_HEADROOM = 0.5;
const SOCKET_MEMORY_MB = 512;
/** viem's `webSocket()` keep-alive: a `net_version` every 30 s. */
const KEEP_ALIVE_SECONDS = 30;

export interface SubscriptionsPart extends PartMeta, SubscriptionsMeasurement {
  readonly options: SubscriptionsOptions;
  readonly verdicts: readonly Verdict[];
}

export interface SizeCost {
  readonly perBlock: {
    readonly readUnits: number;
    readonly writeUnits: number;
    readonly providerCalls: number;
    readonly cpuMs: number;
    readonly notifications: number;
  };
  /** The run's CPU over its wall time, and the least memory whose CPU share covers it twice. */
  readonly cpuShare: number;
  readonly memoryMb: number;
  /** Dollars an hour: the follower's function, its DynamoDB, the messages, the connections. */
  readonly hourly: {
    readonly lambda: number;
    readonly dynamo: number;
    readonly messages: number;
    readonly connections: number;
  };
  readonly perSubscriberHour: number;
  readonly monthly: number;
}

const sum = (values: Readonly<Record<string, number>>) =>
  Object.values(values).reduce((total, value) => total + value, 0);

export function sizeCost(record: SizeRecord): SizeCost {
  const p = SUBSCRIPTION_PRICES;
  const blocks = Math.max(1, record.blocks);
  const perBlock = {
    readUnits: record.readUnits / blocks,
    writeUnits: record.writeUnits / blocks,
    providerCalls: sum(record.providerCalls) / blocks,
    cpuMs: record.run.cpuMs / blocks,
    notifications: record.notifications / blocks,
  };
  const cpuShare = record.run.cpuMs / Math.max(1, record.run.wallMs);
  const needed = (cpuShare / CPU_HEADROOM) * FULL_VCPU_MB;
  const memoryMb = Math.max(FOLLOWER_MEMORY_MB, Math.ceil(needed / 64) * 64);
  const blocksPerHour = 3600 / BENCH_BLOCK_SECONDS;
  const hourly = {
    lambda:
      RUNS_PER_HOUR *
      (p.lambdaRequestsPerMillion / 1e6 + RUN_SECONDS * (memoryMb / 1024) * p.lambdaArmPerGbSecond),
    dynamo:
      (blocksPerHour *
        (perBlock.readUnits * p.dynamoReadUnitPerMillion +
          perBlock.writeUnits * p.dynamoWriteUnitPerMillion)) /
      1e6,
    messages: (blocksPerHour * (record.billedMessages / blocks) * p.messagesPerMillion) / 1e6,
    connections: (record.connections * 60 * p.connectionMinutesPerMillion) / 1e6,
  };
  const total = hourly.lambda + hourly.dynamo + hourly.messages + hourly.connections;
  return {
    perBlock,
    cpuShare,
    memoryMb,
    hourly,
    perSubscriberHour: total / Math.max(1, record.subscriptions),
    monthly: total * HOURS_PER_MONTH,
  };
}

/** Dollars a month for 1,000 connections held open, with viem's keep-alive, beside the connection minutes. */
export function keepAliveMonth(keepAliveBilledMs: number): {
  readonly connectionMinutes: number;
  readonly keepAlive: number;
} {
  const p = SUBSCRIPTION_PRICES;
  const pings = ((HOURS_PER_MONTH * 3600) / KEEP_ALIVE_SECONDS) * 1000;
  // The ping in and its answer out are two messages, and one invocation of the socket function.
  const invocation =
    p.lambdaRequestsPerMillion / 1e6 +
    (keepAliveBilledMs / 1000) * (SOCKET_MEMORY_MB / 1024) * p.lambdaArmPerGbSecond;
  return {
    connectionMinutes: (1000 * HOURS_PER_MONTH * 60 * p.connectionMinutesPerMillion) / 1e6,
    keepAlive: pings * ((2 * p.messagesPerMillion) / 1e6 + invocation),
  };
}

/** Dollars per million notifications at the largest size: its messages, and its follower's whole cost shared out. */
export function perMillionNotifications(record: SizeRecord): {
  readonly messages: number;
  readonly follower: number;
} {
  const cost = sizeCost(record);
  const perHour = (3600 / BENCH_BLOCK_SECONDS) * cost.perBlock.notifications;
  return {
    messages: cost.hourly.messages * (1e6 / Math.max(1, perHour)),
    follower: (cost.hourly.lambda + cost.hourly.dynamo) * (1e6 / Math.max(1, perHour)),
  };
}

export function subscriptionsVerdicts(measured: SubscriptionsMeasurement): Verdict[] {
  const sorted = [...measured.records].sort((a, b) => a.subscriptions - b.subscriptions);
  const fewest = sorted[0];
  const most = sorted.at(-1);
  if (fewest === undefined || most === undefined) return [];
  const invalid = measured.records.some((record) => record.problems.length > 0);
  const writes = (record: SizeRecord) => sizeCost(record).perBlock.writeUnits;
  const ratio = writes(most) / Math.max(1e-9, writes(fewest));
  const mostCost = sizeCost(most);
  return [
    {
      target: `no DynamoDB write per notification: write units per block at ${most.subscriptions} subscriptions ≤ 1.5× those at ${fewest.subscriptions}`,
      measured: `${writes(most).toFixed(2)} vs ${writes(fewest).toFixed(2)} = ${ratio.toFixed(2)}× (${mostCost.perBlock.notifications.toFixed(0)} notifications a block)`,
      verdict: verdict(ratio <= 1.5, !invalid),
    },
    {
      target: `the follower keeps up with ${most.subscriptions} subscriptions on ${FOLLOWER_MEMORY_MB} MB: its CPU ≤ ${CPU_HEADROOM * 100} % of that memory's share of a core`,
      measured: `${(mostCost.cpuShare * 100).toFixed(1)} % of a core vs ${((CPU_HEADROOM * FOLLOWER_MEMORY_MB * 100) / FULL_VCPU_MB).toFixed(1)} %; ${most.delivered} of ${most.blocks} blocks sent`,
      verdict: verdict(mostCost.memoryMb <= FOLLOWER_MEMORY_MB, !invalid),
    },
  ];
}

const money = (value: number) => `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;

export function renderSubscriptions(part: SubscriptionsPart): string[] {
  const largest = [...part.records].sort((a, b) => b.subscriptions - a.subscriptions)[0];
  const perMillion = largest === undefined ? null : perMillionNotifications(largest);
  const held = keepAliveMonth(part.keepAliveBilledMs);
  return [
    "## Subscriptions: what the head follower costs",
    "",
    `- Measured: ${part.date}, load ${formatLoad(part.loadAtStart)} at start, ${formatLoad(part.loadAtEnd)} at end; ${part.revision}; \`${part.command}\``,
    `- An anvil chain with 1–2 \`Tick\` logs in every ${BENCH_BLOCK_SECONDS} s block, \`npm start\`'s stack in the bench's process, and per size a warm-up run (every subscription made live: one write each, once) then a measured run of ${part.options.seconds} s of the follower's shipped bundle in a process of its own (bench/tools/follower-child.ts), invoked as EventBridge does. Its DynamoDB calls go through a relay that asks each for its \`ConsumedCapacity\` (dynalite applies DynamoDB's rules), its provider calls through a relay in front of anvil, its pushes to a sink playing the \`@connections\` API (bench/tools/push-sink.ts); CPU and wall time are its process's. Subscriptions: one \`newHeads\`, or half \`newHeads\` and half \`logs\` on the contract, two to a connection.`,
    `- Lambda: a run of ${RUN_SECONDS} s each minute, billed whatever it does, at the least memory (≥ ${FOLLOWER_MEMORY_MB} MB, the stack's) whose CPU share is twice the CPU measured. Prices: messages $1.00 per million (32 KB each), connection minutes $0.25 per million, DynamoDB on demand $0.125 / $0.625 per million read / write units, Lambda arm64 $0.0000133334 per GB-s.`,
    "",
    "| subscriptions | connections | blocks sent / mined | notifications / block | read units / block | write units / block | provider calls / block | follower CPU ms / block (share of a core) | memory | $ / subscriber-hour | $ / month | valid |",
    "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ...part.records.map((record) => {
      const cost = sizeCost(record);
      const calls = Object.entries(record.providerCalls)
        .map(([method, count]) => `${method} ${(count / Math.max(1, record.blocks)).toFixed(2)}`)
        .join(", ");
      return `| ${record.subscriptions} | ${record.connections} | ${record.delivered} / ${record.blocks} | ${cost.perBlock.notifications.toFixed(1)} | ${cost.perBlock.readUnits.toFixed(2)} | ${cost.perBlock.writeUnits.toFixed(2)} | ${cost.perBlock.providerCalls.toFixed(2)} (${calls}) | ${cost.perBlock.cpuMs.toFixed(1)} (${(cost.cpuShare * 100).toFixed(1)} %) | ${cost.memoryMb} MB | ${money(cost.perSubscriberHour)} | ${money(cost.monthly)} | ${record.problems.length === 0 ? "yes" : `**NO**: ${record.problems.join("; ")}`} |`;
    }),
    "",
    "DynamoDB calls per block, by operation and item:",
    "",
    ...part.records.map(
      (record) =>
        `- ${record.subscriptions}: ${Object.entries(record.dynamoCalls)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, count]) => `${name} ${(count / Math.max(1, record.blocks)).toFixed(2)}`)
          .join(", ")}`,
    ),
    "",
    ...(perMillion === null
      ? []
      : [
          `Per million notifications (at ${largest?.subscriptions} subscriptions): ${money(perMillion.messages)} of messages, ${money(perMillion.follower)} of the follower's Lambda and DynamoDB. Per 1,000 connections a month: ${money(held.connectionMinutes)} of connection minutes, ${money(held.keepAlive)} for viem's 30 s keep-alive (two messages and a socket invocation of ${part.keepAliveBilledMs} ms billed at ${SOCKET_MEMORY_MB} MB each).`,
          "",
        ]),
  ];
}
