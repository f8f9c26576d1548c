import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";

/** Where a network's learned limits live, and the time of the write. */
export interface LearnedLimitTable {
  readonly client: DynamoDBClient;
  readonly table: string;
  readonly pk: string;
  readonly now: number;
}

/**
 * A learned limit (`size`, in force until `until`; docs/behaviour.md §4.11, §12.2): only ever
 * smaller, unless it expired, so two containers learning at once keep the smaller.
 */
export async function recordLearnedLimit(
  where: LearnedLimitTable,
  sk: string,
  size: number,
  until: number,
): Promise<void> {
  try {
    await where.client.send(
      new UpdateItemCommand({
        TableName: where.table,
        Key: { pk: { S: where.pk }, sk: { S: sk } },
        UpdateExpression: "SET #size = :size, #until = :until, #ttl = :ttl",
        ConditionExpression: "attribute_not_exists(#size) OR #size > :size OR #until < :now",
        ExpressionAttributeNames: { "#size": "size", "#until": "until", "#ttl": "ttl" },
        ExpressionAttributeValues: {
          ":size": { N: String(size) },
          ":until": { N: String(until) },
          ":now": { N: String(where.now) },
          ":ttl": { N: String(Math.ceil(until / 1000) + 3600) },
        },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
