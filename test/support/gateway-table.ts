import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";

/** The gateway's table, as a test reads it behind the gateway's back. */
export interface GatewayTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
}

/** Every item's key in the table, `<pk> <sk>`, sorted (a full Scan, page by page). */
export async function tableKeys(table: GatewayTable): Promise<string[]> {
  const keys: string[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await table.client.send(
      new ScanCommand({
        TableName: table.tableName,
        ProjectionExpression: "pk, sk",
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) keys.push(`${item.pk?.S} ${item.sk?.S}`);
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return keys.sort();
}

/**
 * Items whose number grows with what callers send, as opposed to time-bucketed counters
 * (`STATS#…` request stats, `USAGE#…` API-key minutes), which grow with time only.
 */
export function callerShapedKeys(keys: readonly string[]): string[] {
  return keys.filter((key) => !key.startsWith("STATS#") && !key.startsWith("USAGE#"));
}

/** One item's attributes as stored, or undefined when there is none. */
export async function tableItem(
  table: GatewayTable,
  pk: string,
  sk: string,
): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: { pk: { S: pk }, sk: { S: sk } } }),
  );
  return Item;
}
