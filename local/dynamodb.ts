import { once } from "node:events";
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import {
  ChildExitedError,
  findFreePort,
  spawnOwned,
  stopChild,
  waitUntilReady,
} from "./child-process.ts";

/** A local DynamoDB endpoint with the gateway's table already created and ACTIVE. */
export interface LocalDynamoDb {
  readonly endpoint: string;
  readonly tableName: string;
  close(): Promise<void>;
}

const HOST = "127.0.0.1";
const TABLE_ACTIVE_TIMEOUT_MS = 60_000;
// Measured 3 s on an idle 2-core machine and up to 20 s when the machine is busy.
const DYNAMODB_LOCAL_READY_TIMEOUT_MS = 90_000;
const PORT_ATTEMPTS = 5;

/** A client for a local endpoint; the emulators accept any credentials. */
export function createLocalDynamoDbClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

/**
 * Creates the gateway's single table (pk/sk strings, on demand) and waits until it is ACTIVE.
 * Idempotent: an existing table is left as it is.
 */
export async function createGatewayTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "S" },
        ],
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitForTableActive(client, tableName);
}

async function waitForTableActive(client: DynamoDBClient, tableName: string): Promise<void> {
  const deadline = Date.now() + TABLE_ACTIVE_TIMEOUT_MS;
  // Emulators are ACTIVE within milliseconds, real DynamoDB within seconds: back off from 10 ms.
  for (let delayMs = 10; Date.now() < deadline; delayMs = Math.min(delayMs * 2, 1000)) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === "ACTIVE") return;
    await sleep(delayMs);
  }
  throw new Error(`table ${tableName} did not become ACTIVE within ${TABLE_ACTIVE_TIMEOUT_MS} ms`);
}

async function withGatewayTable(endpoint: string, tableName: string): Promise<void> {
  const client = createLocalDynamoDbClient(endpoint);
  try {
    await createGatewayTable(client, tableName);
  } finally {
    client.destroy();
  }
}

/** dynalite in this process on 127.0.0.1 (about 0.1 s to start). */
export async function startDynalite({ tableName }: { tableName: string }): Promise<LocalDynamoDb> {
  // The default 500 ms in CREATING makes a write right after CreateTable fail.
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  server.listen(0, HOST);
  await once(server, "listening");
  const endpoint = `http://${HOST}:${(server.address() as AddressInfo).port}`;
  // dynalite closes its database with the server: a request still being served then throws
  // "Database is closed" out of its callback, so close waits for those (a stack's background
  // writes) first, a bounded time.
  let serving = 0;
  server.on("request", (_request, response) => {
    serving++;
    response.on("close", () => serving--);
  });
  const close = async (): Promise<void> => {
    const until = Date.now() + 2_000;
    while (serving > 0 && Date.now() < until) await new Promise((done) => setTimeout(done, 10));
    await new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      // SDK clients keep connections alive; without this close() waits for them to idle out.
      server.closeAllConnections();
    });
  };
  try {
    await withGatewayTable(endpoint, tableName);
  } catch (error) {
    await close();
    throw error;
  }
  return { endpoint, tableName, close };
}

/** True when a `java` executable is on PATH (checked without starting a JVM). */
export function isJavaAvailable(): boolean {
  const names = process.platform === "win32" ? ["java.exe"] : ["java"];
  for (const directory of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of names) {
      try {
        accessSync(join(directory, name), constants.X_OK);
        return true;
      } catch {
        // not in this directory
      }
    }
  }
  return false;
}

/** The DynamoDB Local jar and its native libraries, shipped in `amplify-dynamodb-simulator`. */
function dynamoDbLocalDirectory(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("amplify-dynamodb-simulator/package.json")), "emulator");
}

/**
 * AWS DynamoDB Local (Java) on a free port, 3 s or more to start. It has no host flag and
 * listens on 0.0.0.0; the endpoint uses 127.0.0.1.
 */
export async function startDynamoDbLocal({
  tableName,
}: {
  tableName: string;
}): Promise<LocalDynamoDb> {
  if (!isJavaAvailable()) {
    throw new Error("DynamoDB Local needs a Java runtime, and no `java` is on PATH");
  }
  const cwd = dynamoDbLocalDirectory();
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    const owned = spawnOwned(
      "java",
      [
        // Start-up dominates a test run: the C1-only JIT and the serial GC start faster on
        // small CI runners, and the emulator never runs long enough to need C2.
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Djava.library.path=./DynamoDBLocal_lib",
        "-jar",
        "DynamoDBLocal.jar",
        "-inMemory",
        "-port",
        String(port),
        "-disableTelemetry",
      ],
      { cwd },
    );
    const endpoint = `http://${HOST}:${port}`;
    try {
      await waitUntilReady(owned, () => answersHttp(endpoint), {
        what: `DynamoDB Local (${endpoint})`,
        timeoutMs: DYNAMODB_LOCAL_READY_TIMEOUT_MS,
      });
      await withGatewayTable(endpoint, tableName);
      return { endpoint, tableName, close: () => stopChild(owned.child) };
    } catch (error) {
      await stopChild(owned.child, 0);
      const portTaken =
        error instanceof ChildExitedError && error.stderr.includes("Address already in use");
      if (!portTaken || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

async function answersHttp(endpoint: string): Promise<boolean> {
  const response = await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
  await response.body?.cancel();
  return true;
}
