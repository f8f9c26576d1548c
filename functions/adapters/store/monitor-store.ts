import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { ChainHead } from "../../core/chain/chain-head.ts";
import type { CheckMemory } from "../../core/chain/quorum.ts";
import type { QuorumSnapshot } from "../../core/routing/network-state.ts";
import { HEAD_KEY, MONITOR_KEY, networkKey, providerKey, QUORUM_KEY } from "./state-store.ts";

/**
 * The monitor's DynamoDB operations, in the gateway's one table:
 * - `LEASE#monitor` / `LEASE`: which monitor run may tick (`holder`, `expires_at`), so two
 *   scheduled runs never overlap;
 * - `probe_until` on `NET#<network>` / `PROVIDER#<name>`: a running probe's lease;
 * - `NET#<network>` / `QUORUM` and `MONITOR`: the snapshot and heartbeat the proxy reads;
 * - `MONITOR#<network>` / `CHECK_MEMORY`: what the quorum carries from tick to tick, in its
 *   own partition so the proxy's per-network Query never reads it.
 * Only GetItem, Query, PutItem and UpdateItem are used (the functions' IAM grant).
 */

type Item = Record<string, AttributeValue>;

export const MONITOR_LEASE_KEY = { pk: "LEASE#monitor", sk: "LEASE" } as const;
export const checkMemoryKey = (network: string) => ({
  pk: `MONITOR#${network}`,
  sk: "CHECK_MEMORY",
});

/** Leases end on their own; the TTL only tidies the table a day later. */
const TTL_SECONDS = 86_400;

const n = (value: number): AttributeValue => ({ N: String(value) });
const s = (value: string): AttributeValue => ({ S: value });
const key = (pk: string, sk: string): Item => ({ pk: s(pk), sk: s(sk) });
const ttlAfter = (ms: number): AttributeValue => n(Math.ceil(ms / 1000) + TTL_SECONDS);

/** Runs a conditional write; false when its condition did not hold. */
async function conditional(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

export class DynamoMonitorStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  /** Takes the monitor lease until `expiresAt` when it is free, expired or already ours. */
  acquireMonitorLease(holder: string, now: number, expiresAt: number): Promise<boolean> {
    return conditional(
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            ...key(MONITOR_LEASE_KEY.pk, MONITOR_LEASE_KEY.sk),
            holder: s(holder),
            expires_at: n(expiresAt),
            ttl: ttlAfter(expiresAt),
          },
          ConditionExpression: "attribute_not_exists(pk) OR expires_at <= :now OR holder = :holder",
          ExpressionAttributeValues: { ":now": n(now), ":holder": s(holder) },
        }),
      ),
    );
  }

  /** Ends our lease at once, so the next run need not wait for the expiry. */
  async releaseMonitorLease(holder: string): Promise<void> {
    await conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(MONITOR_LEASE_KEY.pk, MONITOR_LEASE_KEY.sk),
          UpdateExpression: "SET expires_at = :zero",
          ConditionExpression: "holder = :holder",
          ExpressionAttributeValues: { ":zero": n(0), ":holder": s(holder) },
        }),
      ),
    );
  }

  /** Running probes' leases (ms) by provider; providers without one are absent. */
  async readProbeLeases(network: string): Promise<Map<string, number>> {
    const leases = new Map<string, number>();
    let startKey: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
          ExpressionAttributeValues: { ":pk": s(networkKey(network)), ":prefix": s("PROVIDER#") },
          ProjectionExpression: "sk, probe_until",
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const until = item.probe_until?.N;
        if (until !== undefined) {
          leases.set((item.sk?.S ?? "").slice("PROVIDER#".length), Number(until));
        }
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return leases;
  }

  /**
   * Takes a provider's probe lease until `until`: only while no other probe holds one and the
   * provider's health is still at `expectedVersion`, so a monitor that read the state before
   * another one wrote a probe result cannot probe the same incident again.
   */
  acquireProbeLease(
    network: string,
    provider: string,
    expectedVersion: number,
    now: number,
    until: number,
  ): Promise<boolean> {
    const versionMatches =
      expectedVersion === 0
        ? "(attribute_not_exists(version) OR version = :version)"
        : "version = :version";
    return conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(networkKey(network), providerKey(provider)),
          UpdateExpression: "SET probe_until = :until",
          ConditionExpression: `(attribute_not_exists(probe_until) OR probe_until <= :now) AND ${versionMatches}`,
          ExpressionAttributeValues: {
            ":until": n(until),
            ":now": n(now),
            ":version": n(expectedVersion),
          },
        }),
      ),
    );
  }

  /** Ends the probe lease taken until `until` (someone else's later lease is left alone). */
  async releaseProbeLease(network: string, provider: string, until: number): Promise<void> {
    await conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(networkKey(network), providerKey(provider)),
          UpdateExpression: "REMOVE probe_until",
          ConditionExpression: "probe_until = :until",
          ExpressionAttributeValues: { ":until": n(until) },
        }),
      ),
    );
  }

  async readCheckMemory(network: string): Promise<Record<string, CheckMemory>> {
    const { pk, sk } = checkMemoryKey(network);
    const result = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: key(pk, sk), ConsistentRead: true }),
    );
    const text = result.Item?.memory?.S;
    if (text === undefined) return {};
    try {
      return JSON.parse(text) as Record<string, CheckMemory>;
    } catch {
      // A corrupt item only costs the history: the quorum starts afresh.
      return {};
    }
  }

  /**
   * Writes the memory computed at `computedAt`, unless a newer one is stored (an overlapping
   * run that ticked later). Returns whether it was written.
   */
  writeCheckMemory(
    network: string,
    memory: Readonly<Record<string, CheckMemory>>,
    computedAt: number,
  ): Promise<boolean> {
    const { pk, sk } = checkMemoryKey(network);
    return this.#putIfNewer(key(pk, sk), { memory: s(JSON.stringify(memory)) }, computedAt);
  }

  /** Publishes the quorum to the proxy, unless a newer snapshot is stored. */
  writeQuorum(network: string, snapshot: QuorumSnapshot): Promise<boolean> {
    return this.#putIfNewer(
      key(networkKey(network), QUORUM_KEY),
      { snapshot: s(JSON.stringify(snapshot)) },
      snapshot.computedAt,
    );
  }

  /**
   * The chain position for every container (docs/behaviour.md §10). Numbers were already made
   * forward-only against the stored item; `served` and `served_at` are the containers' and not
   * touched, except by a `reset` (§10.7), which writes the served head the reset took and drops
   * the previous one; a write older than the stored one is dropped.
   */
  async writeHead(network: string, head: ChainHead, reset = false): Promise<void> {
    const values: Item = {
      ":latest": n(head.latest.number),
      ":updated": n(head.updatedAt),
      ":reorg": n(head.reorgSeenAt),
      ":finality": n(head.finalityBrokenAt ?? 0),
      ":reset": n(head.resetAt ?? 0),
      ":below": n(head.belowChecks ?? 0),
    };
    const sets = [
      "latest = :latest",
      "updated_at = :updated",
      "reorg_seen_at = :reorg",
      "finality_broken_at = :finality",
      "chain_reset_at = :reset",
      "below_checks = :below",
    ];
    if (reset) {
      const none = { block: -1, at: -1 };
      const [served, previous] = [head.served ?? none, head.previousServed ?? none];
      sets.push(
        "served = :served",
        "served_at = :servedAt",
        "prev_served = :previous",
        "prev_served_at = :previousAt",
      );
      Object.assign(values, {
        ":served": n(served.block),
        ":servedAt": n(served.at),
        ":previous": n(previous.block),
        ":previousAt": n(previous.at),
      });
    }
    const removes: string[] = [];
    for (const [name, position] of [
      ["latest", head.latest],
      ["safe", head.safe],
      ["finalized", head.finalized],
    ] as const) {
      // A safe or finalized block dropped (above the head, or gone with a reset) goes.
      if (position === null) {
        removes.push(name, `${name}_hash`);
        continue;
      }
      if (name !== "latest") {
        sets.push(`${name} = :${name}`);
        values[`:${name}`] = n(position.number);
      }
      if (position.hash === null) removes.push(`${name}_hash`);
      else {
        sets.push(`${name}_hash = :${name}_hash`);
        values[`:${name}_hash`] = s(position.hash);
      }
    }
    await conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(networkKey(network), HEAD_KEY),
          UpdateExpression: `SET ${sets.join(", ")}${removes.length > 0 ? ` REMOVE ${removes.join(", ")}` : ""}`,
          ConditionExpression: "attribute_not_exists(updated_at) OR updated_at <= :updated",
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  /** The heartbeat behind `monitor.last_tick_at` on the status route. */
  async writeHeartbeat(network: string, at: number): Promise<void> {
    await conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(networkKey(network), MONITOR_KEY),
          UpdateExpression: "SET last_tick_at = :at",
          ConditionExpression: "attribute_not_exists(last_tick_at) OR last_tick_at <= :at",
          ExpressionAttributeValues: { ":at": n(at) },
        }),
      ),
    );
  }

  /**
   * Health items (`PROVIDER#<name>`) of providers the config no longer names get a TTL of
   * `expiresAt` (ms), so a removed provider's strikes and blacklist go away; an item of a
   * configured provider loses any TTL, so a provider added back keeps its state.
   */
  async tidyProviderItems(
    network: string,
    configured: readonly string[],
    expiresAt: number,
  ): Promise<void> {
    const keep = new Set(configured);
    const updates: Array<Promise<boolean>> = [];
    let startKey: Item | undefined;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
          ExpressionAttributeValues: { ":pk": s(networkKey(network)), ":prefix": s("PROVIDER#") },
          ExpressionAttributeNames: { "#ttl": "ttl" },
          ProjectionExpression: "sk, #ttl",
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const sk = item.sk?.S ?? "";
        const configuredNow = keep.has(sk.slice("PROVIDER#".length));
        const marked = item.ttl !== undefined;
        if (configuredNow === marked)
          updates.push(this.#setExpiry(network, sk, configuredNow ? null : expiresAt));
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    await Promise.all(updates);
  }

  #setExpiry(network: string, sk: string, expiresAt: number | null): Promise<boolean> {
    return conditional(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: key(networkKey(network), sk),
          UpdateExpression: expiresAt === null ? "REMOVE #ttl" : "SET #ttl = :ttl",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#ttl": "ttl" },
          ...(expiresAt === null
            ? {}
            : { ExpressionAttributeValues: { ":ttl": n(Math.ceil(expiresAt / 1000)) } }),
        }),
      ),
    );
  }

  #putIfNewer(itemKey: Item, attributes: Item, computedAt: number): Promise<boolean> {
    return conditional(
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { ...itemKey, ...attributes, computed_at: n(computedAt) },
          ConditionExpression: "attribute_not_exists(computed_at) OR computed_at <= :at",
          ExpressionAttributeValues: { ":at": n(computedAt) },
        }),
      ),
    );
  }
}
