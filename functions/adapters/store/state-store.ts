import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { ChainHead } from "../../core/chain/chain-head.ts";
import type { CooldownReason } from "../../core/classify/verdict.ts";
import { HEALTHY, type ProbeRecord, type ProviderHealth } from "../../core/health/health.ts";
import type { HistoryProbe, LearnedBound, ProviderHistory } from "../../core/history/bounds.ts";
import type { HistoryResource } from "../../core/history/resources.ts";
import type { StateStore, WriteOutcome } from "../../core/ports.ts";
import type {
  LearnedLimit,
  NetworkState,
  QuorumSnapshot,
} from "../../core/routing/network-state.ts";
import {
  HEAD_ATTRIBUTES,
  HEAD_KEY,
  headFromItem,
  publishServedItem,
  readHeadItem,
} from "./head-item.ts";
import * as historyItems from "./history-items.ts";
import { type LearnedLimitTable, recordLearnedLimit } from "./learned-limit-item.ts";

export { HEAD_KEY } from "./head-item.ts";

/**
 * Shared state in one DynamoDB table (docs/architecture.md): `pk = NET#<network>` holds a
 * network's providers (`PROVIDER#<name>`), per-method blacklists (`CAPABILITY#<name>#<method>`),
 * learned limits (`BATCHLIMIT#<name>`, `LOGSRANGE#<name>`), the quorum (`QUORUM`) and the
 * monitor's heartbeat (`MONITOR`), so one Query reads it all.
 */

type Item = Record<string, AttributeValue>;

export const networkKey = (network: string) => `NET#${network}`;
export const providerKey = (provider: string) => `PROVIDER#${provider}`;
export const capabilityKey = (provider: string, method: string) =>
  `CAPABILITY#${provider}#${method}`;
export const batchLimitKey = (provider: string) => `BATCHLIMIT#${provider}`;
export const logsRangeKey = (provider: string) => `LOGSRANGE#${provider}`;
export const QUORUM_KEY = "QUORUM";
export const MONITOR_KEY = "MONITOR";

/** The attributes the proxy's state Query reads, each aliased (several are reserved words). */
const PROJECTION = (() => {
  const attributes = [
    "sk",
    "strikes",
    "blacklisted_until",
    "reason",
    "probe_gated",
    "version",
    "last_probe_at",
    "last_probe_result",
    "last_probe_detail",
    // A read consensus's minority record (docs/behaviour.md §17.4).
    "minority_count",
    "minority_since",
    "sit_out_until",
    "until",
    "provider",
    "method",
    "snapshot",
    "last_tick_at",
    "size",
    // The chain position item: the monitor's latest/safe/finalized and the served head.
    ...HEAD_ATTRIBUTES,
    ...historyItems.HISTORY_ATTRIBUTES,
  ];
  return {
    expression: attributes.map((_, index) => `#a${index}`).join(", "),
    names: Object.fromEntries(attributes.map((name, index) => [`#a${index}`, name])),
  };
})();

export function createDynamoClient(
  options: { endpoint?: string; region?: string } = {},
): DynamoDBClient {
  return new DynamoDBClient({
    ...(options.endpoint
      ? {
          endpoint: options.endpoint,
          credentials: { accessKeyId: "local", secretAccessKey: "local" },
        }
      : {}),
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    // Bounded: a slow or unreachable table must not hold requests (the proxy fails open).
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 2000, throwOnRequestTimeout: true },
  });
}

const num = (item: Item, name: string): number => Number(item[name]?.N ?? 0);
const str = (item: Item, name: string): string | null => item[name]?.S ?? null;

function healthFromItem(item: Item): ProviderHealth {
  const probeAt = item.last_probe_at?.N;
  const lastProbe: ProbeRecord | null =
    probeAt === undefined
      ? null
      : {
          at: Number(probeAt),
          result: str(item, "last_probe_result") === "pass" ? "pass" : "fail",
          detail: str(item, "last_probe_detail") ?? "",
        };
  return {
    strikes: num(item, "strikes"),
    blacklistedUntil: num(item, "blacklisted_until"),
    reason: (str(item, "reason") as CooldownReason | null) ?? null,
    probeGated: item.probe_gated?.BOOL ?? false,
    lastProbe,
    version: num(item, "version"),
    ...(item.minority_since === undefined
      ? {}
      : {
          consensus: {
            count: num(item, "minority_count"),
            since: num(item, "minority_since"),
            sitOutUntil: num(item, "sit_out_until"),
          },
        }),
  };
}

export class DynamoStateStore implements StateStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: () => number;

  constructor(options: { client: DynamoDBClient; tableName: string; clock?: () => number }) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#clock = options.clock ?? Date.now;
  }

  get client(): DynamoDBClient {
    return this.#client;
  }

  get tableName(): string {
    return this.#table;
  }

  async readNetwork(network: string): Promise<NetworkState> {
    const now = this.#clock();
    const providers = new Map<string, ProviderHealth>();
    const capabilities = new Map<string, Map<string, number>>();
    let quorum: QuorumSnapshot | null = null;
    let monitorTickAt = 0;
    const batchLimits = new Map<string, LearnedLimit>();
    const logsRanges = new Map<string, LearnedLimit>();
    let head: ChainHead | null = null;
    const history = new Map<string, ProviderHistory>();
    let startKey: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": { S: networkKey(network) } },
          // Only what selection needs: leases and bookkeeping stay on the server.
          ProjectionExpression: PROJECTION.expression,
          ExpressionAttributeNames: PROJECTION.names,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const sk = str(item, "sk") ?? "";
        if (historyItems.readHistoryItem(sk, item, now, history)) continue;
        if (sk.startsWith("PROVIDER#")) {
          providers.set(sk.slice("PROVIDER#".length), healthFromItem(item));
        } else if (sk.startsWith("CAPABILITY#")) {
          const until = num(item, "until");
          // DynamoDB's TTL deletes late: expired items are ignored here.
          if (until <= now) continue;
          const provider = str(item, "provider") ?? "";
          const method = str(item, "method") ?? "";
          const methods = capabilities.get(provider) ?? new Map<string, number>();
          methods.set(method, until);
          capabilities.set(provider, methods);
        } else if (sk === QUORUM_KEY) {
          const snapshot = str(item, "snapshot");
          if (snapshot) quorum = JSON.parse(snapshot) as QuorumSnapshot;
        } else if (sk.startsWith("BATCHLIMIT#")) {
          const until = num(item, "until");
          if (until > now) {
            batchLimits.set(sk.slice("BATCHLIMIT#".length), { value: num(item, "size"), until });
          }
        } else if (sk.startsWith("LOGSRANGE#")) {
          const until = num(item, "until");
          if (until > now) {
            logsRanges.set(sk.slice("LOGSRANGE#".length), { value: num(item, "size"), until });
          }
        } else if (sk === HEAD_KEY) {
          head = headFromItem(item);
        } else if (sk === MONITOR_KEY) {
          monitorTickAt = num(item, "last_tick_at");
        }
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return {
      providers,
      capabilities,
      quorum,
      monitorTickAt,
      batchLimits,
      logsRanges,
      head,
      history,
    };
  }

  async readHealth(network: string, provider: string): Promise<ProviderHealth> {
    const result = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: networkKey(network) }, sk: { S: providerKey(provider) } },
        ConsistentRead: true,
      }),
    );
    return result.Item ? healthFromItem(result.Item) : HEALTHY;
  }

  async writeHealth(
    network: string,
    provider: string,
    expectedVersion: number,
    next: ProviderHealth,
  ): Promise<WriteOutcome> {
    const values: Item = {
      ":expected": { N: String(expectedVersion) },
      ":version": { N: String(next.version) },
      ":strikes": { N: String(next.strikes) },
      ":until": { N: String(next.blacklistedUntil) },
      ":gated": { BOOL: next.probeGated },
    };
    const sets = [
      "version = :version",
      "strikes = :strikes",
      "blacklisted_until = :until",
      "probe_gated = :gated",
    ];
    const removes: string[] = [];
    if (next.reason === null) removes.push("reason");
    else {
      sets.push("reason = :reason");
      values[":reason"] = { S: next.reason };
    }
    if (next.lastProbe) {
      sets.push(
        "last_probe_at = :probeAt",
        "last_probe_result = :probeResult",
        "last_probe_detail = :probeDetail",
      );
      values[":probeAt"] = { N: String(next.lastProbe.at) };
      values[":probeResult"] = { S: next.lastProbe.result };
      values[":probeDetail"] = { S: next.lastProbe.detail };
    }
    if (next.consensus) {
      sets.push(
        "minority_count = :minority",
        "minority_since = :minoritySince",
        "sit_out_until = :sitOut",
      );
      values[":minority"] = { N: String(next.consensus.count) };
      values[":minoritySince"] = { N: String(next.consensus.since) };
      values[":sitOut"] = { N: String(next.consensus.sitOutUntil) };
    }
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: { S: networkKey(network) }, sk: { S: providerKey(provider) } },
          UpdateExpression: `SET ${sets.join(", ")}${removes.length ? ` REMOVE ${removes.join(", ")}` : ""}`,
          ConditionExpression:
            expectedVersion === 0
              ? "attribute_not_exists(version) OR version = :expected"
              : "version = :expected",
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { written: true };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // DynamoDB returns the item that won; DynamoDB emulators may not, so read it then.
      const current = error.Item
        ? healthFromItem(error.Item)
        : await this.readHealth(network, provider);
      return { written: false, current };
    }
  }

  readHead(network: string): Promise<ChainHead | null> {
    return readHeadItem(this.#client, this.#table, this.#headKey(network));
  }

  publishServed(
    network: string,
    block: number,
    at: number,
    delayMs: number,
    resetAt: number,
  ): Promise<boolean> {
    return publishServedItem(this.#client, this.#table, this.#headKey(network), {
      block,
      at,
      delayMs,
      resetAt,
    });
  }

  #headKey(network: string): Item {
    return { pk: { S: networkKey(network) }, sk: { S: HEAD_KEY } };
  }

  recordBatchLimit(network: string, provider: string, size: number, until: number): Promise<void> {
    return recordLearnedLimit(this.#limits(network), batchLimitKey(provider), size, until);
  }

  recordLogsRange(network: string, provider: string, blocks: number, until: number): Promise<void> {
    return recordLearnedLimit(this.#limits(network), logsRangeKey(provider), blocks, until);
  }

  #limits(network: string): LearnedLimitTable {
    return {
      client: this.#client,
      table: this.#table,
      pk: networkKey(network),
      now: this.#clock(),
    };
  }

  recordHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    bound: LearnedBound,
  ): Promise<void> {
    return historyItems.recordHistoryBound(
      this.#partition(network),
      provider,
      resource,
      bound,
      this.#clock(),
    );
  }

  forgetHistoryBound(
    network: string,
    provider: string,
    resource: HistoryResource,
    block: number,
  ): Promise<void> {
    return historyItems.forgetHistoryBound(this.#partition(network), provider, resource, block);
  }

  recordHistoryProbe(network: string, provider: string, probe: HistoryProbe): Promise<void> {
    return historyItems.recordHistoryProbe(this.#partition(network), provider, probe);
  }

  #partition(network: string): historyItems.Table {
    return { client: this.#client, tableName: this.#table, pk: { S: networkKey(network) } };
  }

  async blacklistCapability(
    network: string,
    provider: string,
    method: string,
    until: number,
  ): Promise<void> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: { S: networkKey(network) }, sk: { S: capabilityKey(provider, method) } },
          UpdateExpression:
            "SET #until = :until, provider = :provider, #method = :method, #ttl = :ttl",
          ConditionExpression: "attribute_not_exists(#until) OR #until < :until",
          ExpressionAttributeNames: { "#until": "until", "#method": "method", "#ttl": "ttl" },
          ExpressionAttributeValues: {
            ":until": { N: String(until) },
            ":provider": { S: provider },
            ":method": { S: method },
            ":ttl": { N: String(Math.ceil(until / 1000) + 3600) },
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
