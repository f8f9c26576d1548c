import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { type LocalDynamoDb, startDynamoDbLocal } from "../../local/dynamodb.ts";

/**
 * The test run's one DynamoDB Local (vitest `globalSetup`). A JVM takes 3 s to start on an
 * idle machine and up to 20 s on a busy one, and eight test files each started their own: now
 * the first file that asks starts it, the others share it (each with a table of its own,
 * `shared-dynamodb-local.ts`), and it stops when the run ends. A run that asks for none starts
 * no JVM. Files ask this process over HTTP (`GET /` answers the endpoint once it is ready),
 * since they run in worker processes of their own.
 */

declare module "vitest" {
  export interface ProvidedContext {
    /** Where a test file asks for the run's DynamoDB Local endpoint. */
    readonly dynamoDbLocalBroker: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let started: Promise<LocalDynamoDb> | null = null;
  const server = createServer((_request, response) => {
    started ??= startDynamoDbLocal({ tableName: "broker-ready" });
    started.then(
      (db) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ endpoint: db.endpoint }));
      },
      (error: unknown) => {
        response.writeHead(500, { "content-type": "text/plain" });
        response.end(error instanceof Error ? error.message : String(error));
      },
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  project.provide(
    "dynamoDbLocalBroker",
    `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  );
  return async () => {
    server.closeAllConnections();
    server.close();
    const db = await started?.catch(() => null);
    await db?.close();
  };
}
