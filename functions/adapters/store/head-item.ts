import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { BlockPosition, ChainHead, Publication } from "../../core/chain/chain-head.ts";
import { SERVED_HEAD_WRITE_MARGIN_MS } from "../../core/policies.ts";

/**
 * The chain position item (`NET#<network>` / `HEAD`, docs/behaviour.md §10): the monitor's
 * `latest`, `safe` and `finalized` with their hashes and stamps, and the served head's two
 * newest publications. The proxy reads it with the network's state Query, and alone with a
 * strongly consistent GetItem at most every `head_cache_ms`; containers publish to it with a
 * conditional UpdateItem.
 */

type Item = Record<string, AttributeValue>;

export const HEAD_KEY = "HEAD";

/** The head item's attributes, for a projection. */
export const HEAD_ATTRIBUTES = [
  "latest",
  "latest_hash",
  "safe",
  "safe_hash",
  "finalized",
  "finalized_hash",
  "updated_at",
  "reorg_seen_at",
  "finality_broken_at",
  "chain_reset_at",
  "below_checks",
  "served",
  "served_at",
  "prev_served",
  "prev_served_at",
] as const;

const num = (item: Item, name: string): number => Number(item[name]?.N ?? 0);

function position(item: Item, name: string): BlockPosition | null {
  const number = item[name]?.N;
  return number === undefined
    ? null
    : { number: Number(number), hash: item[`${name}_hash`]?.S ?? null };
}

function publication(item: Item, block: string, at: string): Publication | null {
  const number = item[block]?.N;
  return number === undefined || Number(number) < 0
    ? null
    : { block: Number(number), at: num(item, at) };
}

/** The head item, as the monitor and the containers wrote it; null before the monitor's first. */
export function headFromItem(item: Item): ChainHead | null {
  const latest = position(item, "latest");
  if (latest === null) return null;
  return {
    latest,
    safe: position(item, "safe"),
    finalized: position(item, "finalized"),
    served: publication(item, "served", "served_at"),
    previousServed: publication(item, "prev_served", "prev_served_at"),
    updatedAt: num(item, "updated_at"),
    reorgSeenAt: num(item, "reorg_seen_at"),
    finalityBrokenAt: num(item, "finality_broken_at"),
    resetAt: num(item, "chain_reset_at"),
    belowChecks: num(item, "below_checks"),
  };
}

const PROJECTION = {
  expression: HEAD_ATTRIBUTES.map((_, index) => `#h${index}`).join(", "),
  names: Object.fromEntries(HEAD_ATTRIBUTES.map((name, index) => [`#h${index}`, name])),
};

/** One strongly consistent GetItem of the head item (1 read unit: the item is under 4 KB). */
export async function readHeadItem(
  client: DynamoDBClient,
  table: string,
  key: Item,
): Promise<ChainHead | null> {
  const result = await client.send(
    new GetItemCommand({
      TableName: table,
      Key: key,
      ConsistentRead: true,
      ProjectionExpression: PROJECTION.expression,
      ExpressionAttributeNames: PROJECTION.names,
    }),
  );
  return result.Item === undefined ? null : headFromItem(result.Item);
}

/**
 * Publishes `block` as the served head at `at`, keeping the previous publication, under the
 * store's conditions (higher, a delay after the newest, the same reset). Given up after
 * `SERVED_HEAD_WRITE_MARGIN_MS`: a publication landing later than that could be in one
 * container's copy and missing from another's when it comes of age.
 */
export async function publishServedItem(
  client: DynamoDBClient,
  table: string,
  key: Item,
  publication: { block: number; at: number; delayMs: number; resetAt: number },
): Promise<boolean> {
  const { block, at, delayMs, resetAt } = publication;
  // A chain position never reset has no stamp; one reset since the publisher read it has another.
  const sameReset =
    resetAt === 0
      ? "(attribute_not_exists(chain_reset_at) OR chain_reset_at = :reset)"
      : "chain_reset_at = :reset";
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: key,
        // The newest publication becomes the previous one; -1 stands for none.
        UpdateExpression:
          "SET prev_served = if_not_exists(served, :none), prev_served_at = if_not_exists(served_at, :none), served = :block, served_at = :at",
        // Only beside the monitor's chain position: without it there is no reachable head to
        // bound a provider's number, and one far ahead would freeze the served head there.
        ConditionExpression: `attribute_exists(latest) AND ${sameReset} AND (attribute_not_exists(served) OR (served < :block AND served_at <= :cutoff))`,
        ExpressionAttributeValues: {
          ":block": { N: String(block) },
          ":at": { N: String(at) },
          ":cutoff": { N: String(at - delayMs) },
          ":none": { N: "-1" },
          ":reset": { N: String(resetAt) },
        },
      }),
      { abortSignal: AbortSignal.timeout(SERVED_HEAD_WRITE_MARGIN_MS) },
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
