import { randomUUID } from "node:crypto";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { inject } from "vitest";
import {
  createGatewayTable,
  createLocalDynamoDbClient,
  type LocalDynamoDb,
} from "../../local/dynamodb.ts";

/**
 * A gateway table of its own on the test run's one DynamoDB Local (`dynamodb-local-broker.ts`),
 * for the files that hold an adapter to DynamoDB Local's behaviour. `close` drops the table;
 * the JVM stops with the run. Throws as starting one would (no Java, a start that failed).
 */
export async function startSharedDynamoDbLocal({
  tableName,
}: {
  tableName: string;
}): Promise<LocalDynamoDb> {
  const answer = await fetch(inject("dynamoDbLocalBroker"));
  const text = await answer.text();
  if (!answer.ok) throw new Error(`DynamoDB Local did not start: ${text}`);
  const { endpoint } = JSON.parse(text) as { endpoint: string };
  const name = `${tableName}-${randomUUID().slice(0, 8)}`;
  const client = createLocalDynamoDbClient(endpoint);
  try {
    await createGatewayTable(client, name);
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    tableName: name,
    async close() {
      const dropping = createLocalDynamoDbClient(endpoint);
      try {
        await dropping.send(new DeleteTableCommand({ TableName: name }));
      } finally {
        dropping.destroy();
      }
    },
  };
}
