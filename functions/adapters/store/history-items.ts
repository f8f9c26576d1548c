import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type {
  HistoryProbe,
  LearnedBound,
  ProbedResource,
  ProviderHistory,
} from "../../core/history/bounds.ts";
import { HISTORY_RESOURCES, type HistoryResource } from "../../core/history/resources.ts";

/**
 * The shared items of history-aware routing (docs/behaviour.md §16.3), in the network's
 * partition so the proxy's one Query reads them: `HISTORY#<provider>#<resource>`, a bound learned
 * from a refusal (at most five a provider, each expiring), and `HISTORYPROBE#<provider>`, the
 * monitor's last probe (one a provider). Their number is bounded by the config, never by callers.
 */

type Item = Record<string, AttributeValue>;

export const HISTORY_PREFIX = "HISTORY#";
export const HISTORY_PROBE_PREFIX = "HISTORYPROBE#";
export const historyBoundKey = (provider: string, resource: HistoryResource) =>
  `${HISTORY_PREFIX}${provider}#${resource}`;
export const historyProbeKey = (provider: string) => `${HISTORY_PROBE_PREFIX}${provider}`;

/** The attributes of these items the state Query reads (beside `sk`, `until`, `snapshot`). */
export const HISTORY_ATTRIBUTES = ["bound_from", "refused_at", "learned_at"];

/** A probe item outlives its provider's removal from the config by this long. */
const PROBE_ITEM_TTL_S = 7 * 86_400;

const RESOURCES: ReadonlySet<string> = new Set(HISTORY_RESOURCES);
const num = (item: Item, name: string): number => Number(item[name]?.N ?? Number.NaN);

/** Adds one item of the Query to `into`, when it is one of these; false when it is not. */
export function readHistoryItem(
  sk: string,
  item: Item,
  now: number,
  into: Map<string, ProviderHistory>,
): boolean {
  if (sk.startsWith(HISTORY_PROBE_PREFIX)) {
    const probe = probeFromText(item.snapshot?.S);
    const provider = sk.slice(HISTORY_PROBE_PREFIX.length);
    if (probe !== null) into.set(provider, { ...(into.get(provider) ?? empty()), probe });
    return true;
  }
  if (!sk.startsWith(HISTORY_PREFIX)) return false;
  const rest = sk.slice(HISTORY_PREFIX.length);
  const cut = rest.lastIndexOf("#");
  const provider = rest.slice(0, cut);
  const resource = rest.slice(cut + 1);
  const bound: LearnedBound = {
    from: num(item, "bound_from"),
    refusedAt: num(item, "refused_at"),
    at: num(item, "learned_at"),
    until: num(item, "until"),
  };
  // DynamoDB's TTL deletes late: an expired bound is forgotten here.
  if (cut <= 0 || !RESOURCES.has(resource) || !(bound.until > now)) return true;
  if (!Number.isSafeInteger(bound.from) || bound.from < 0) return true;
  const current = into.get(provider) ?? empty();
  const learned = new Map(current.learned);
  learned.set(resource as HistoryResource, bound);
  into.set(provider, { ...current, learned });
  return true;
}

function empty(): ProviderHistory {
  return { learned: new Map(), probe: null };
}

/** A probe item's snapshot, or null for one that is not a probe (a corrupt or foreign write). */
function probeFromText(text: string | undefined): HistoryProbe | null {
  if (text === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const probe = value as Partial<HistoryProbe>;
  if (typeof probe.at !== "number" || typeof probe.capabilitiesAt !== "number") return null;
  if (!["supported", "unsupported", "unknown"].includes(String(probe.capabilities))) return null;
  const resources: Partial<Record<HistoryResource, ProbedResource>> = {};
  for (const resource of HISTORY_RESOURCES) {
    const found = (probe.resources as Record<string, unknown> | undefined)?.[resource];
    if (typeof found !== "object" || found === null) continue;
    const { from, window, how } = found as Partial<ProbedResource>;
    const validFrom = from === null || (Number.isSafeInteger(from) && (from as number) >= 0);
    const validWindow = window === null || (Number.isSafeInteger(window) && (window as number) > 0);
    if (!validFrom || !validWindow || (how !== "capabilities" && how !== "balance")) continue;
    resources[resource] = { from: from as number | null, window: window as number | null, how };
  }
  return {
    at: probe.at,
    capabilities: probe.capabilities as HistoryProbe["capabilities"],
    capabilitiesAt: probe.capabilitiesAt,
    resources,
    detail: typeof probe.detail === "string" ? probe.detail.slice(0, 300) : "",
  };
}

export interface Table {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly pk: AttributeValue;
}

/** A learned bound: written when none is in force, or when it is later than the one that is. */
export async function recordHistoryBound(
  table: Table,
  provider: string,
  resource: HistoryResource,
  bound: LearnedBound,
  now: number,
): Promise<void> {
  try {
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { pk: table.pk, sk: { S: historyBoundKey(provider, resource) } },
        UpdateExpression:
          "SET bound_from = :from, refused_at = :refused, learned_at = :at, #until = :until, #ttl = :ttl",
        ConditionExpression:
          "attribute_not_exists(bound_from) OR bound_from < :from OR #until < :now",
        ExpressionAttributeNames: { "#until": "until", "#ttl": "ttl" },
        ExpressionAttributeValues: {
          ":from": { N: String(bound.from) },
          ":refused": { N: String(bound.refusedAt) },
          ":at": { N: String(bound.at) },
          ":until": { N: String(bound.until) },
          ":now": { N: String(now) },
          ":ttl": { N: String(Math.ceil(bound.until / 1000) + 3600) },
        },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/**
 * Forgets a learned bound that leaves out `block`, which the provider has served: its `until`
 * is set to 0, so it reads as expired and any lesson replaces it (an UpdateItem, as neither
 * role may delete).
 */
export async function forgetHistoryBound(
  table: Table,
  provider: string,
  resource: HistoryResource,
  block: number,
): Promise<void> {
  try {
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { pk: table.pk, sk: { S: historyBoundKey(provider, resource) } },
        UpdateExpression: "SET #until = :zero",
        ConditionExpression: "bound_from > :block",
        ExpressionAttributeNames: { "#until": "until" },
        ExpressionAttributeValues: { ":block": { N: String(block) }, ":zero": { N: "0" } },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/** The monitor's probe of one provider: one item, replaced each time (one monitor writes it). */
export async function recordHistoryProbe(
  table: Table,
  provider: string,
  probe: HistoryProbe,
): Promise<void> {
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: { pk: table.pk, sk: { S: historyProbeKey(provider) } },
      UpdateExpression: "SET #snapshot = :snapshot, #ttl = :ttl",
      ExpressionAttributeNames: { "#snapshot": "snapshot", "#ttl": "ttl" },
      ExpressionAttributeValues: {
        ":snapshot": { S: JSON.stringify(probe) },
        ":ttl": { N: String(Math.ceil(probe.at / 1000) + PROBE_ITEM_TTL_S) },
      },
    }),
  );
}
