import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { DynamoMonitorStore } from "../../functions/adapters/store/monitor-store.ts";
import { createDynamoClient } from "../../functions/adapters/store/state-store.ts";
import { startDynalite } from "../../local/dynamodb.ts";
import { startCountingRelay } from "./counting-relay.ts";

/**
 * What a proxy Lambda talks to, on this machine: the config object in an S3-compatible server
 * (s3rver), the state table in dynalite behind a counting relay (every DynamoDB call the
 * handler makes, by operation and size), and the anvil upstream. Handlers run in fresh Node
 * processes (bench/tools/lambda-child.ts) with the environment the stack gives the Lambda.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const CHILD = join(ROOT, "bench", "tools", "lambda-child.ts");
const BUCKET = "bench-config";
const CONFIG_KEY = "config/bench.json";
const TABLE = "bench-lambda";
export const LAMBDA_NETWORK = "bench";
/** The Lambda parts' network's block time: the cost part mines a block this often. */
export const LAMBDA_BLOCK_TIME_SECONDS = 12;
const run = promisify(execFile);

/** One DynamoDB call the handler made: its operation (Query, UpdateItem, …) and sizes. */
export interface DynamoCall {
  readonly operation: string;
  /** Milliseconds since the epoch, when the answer went back. */
  readonly at: number;
  readonly requestBytes: number;
  readonly responseBytes: number;
  /** The item's or query's partition key (`NET#bench`, `STATS#bench`, …), when it names one. */
  readonly partition?: string;
}

export interface LambdaEnvironment {
  /** The environment of the Lambda, pointed at the local stand-ins. */
  readonly env: Readonly<Record<string, string>>;
  /** The config object's text in S3: bundled beside the handlers, as a deploy bundles it. */
  readonly configText: string;
  /** DynamoDB calls made since `since` (ms since the epoch). */
  dynamoCalls(since: number): DynamoCall[];
  /** Runs one Lambda container (bench/tools/lambda-child.ts) and returns its figures. */
  runChild<T>(job: ChildJob, nodeArgs?: readonly string[]): Promise<T>;
  /**
   * Writes the upstream's chain position as the monitor of a deployed stack writes it every
   * check; not counted among the handler's DynamoDB calls.
   */
  writeChainPosition(): Promise<void>;
  /** Mines one block on the upstream (anvil), as a live chain moves on. */
  mineBlock(): Promise<void>;
  close(): Promise<void>;
}

/** What a container is invoked with. */
export interface LambdaCall {
  /** An API Gateway event. */
  readonly event: unknown;
  /** When set, this text in the event's body becomes a new address on every invocation. */
  readonly addressMarker?: string;
}

export interface ChildJob extends LambdaCall {
  readonly module: string;
  readonly mode: "cold" | "loop" | "paced";
  readonly warmup?: number;
  readonly count?: number;
  readonly rate?: number;
  readonly seconds?: number;
}

export async function startLambdaEnvironment(upstreamUrl: string): Promise<LambdaEnvironment> {
  const closers: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    const scratch = mkdtempSync(join(tmpdir(), "bench-lambda-"));
    closers.push(async () => rmSync(scratch, { recursive: true, force: true }));

    const s3 = new S3rver({
      port: 0,
      address: "127.0.0.1",
      silent: true,
      directory: join(scratch, "s3"),
    });
    const { port: s3Port } = await s3.run();
    closers.push(() => s3.close());
    const s3Endpoint = `http://127.0.0.1:${s3Port}`;
    const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
    const client = new S3Client({
      endpoint: s3Endpoint,
      forcePathStyle: true,
      region: "us-east-1",
      credentials,
    });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const configText = JSON.stringify({
      networks: {
        [LAMBDA_NETWORK]: {
          chain_id: 31337,
          block_time_seconds: LAMBDA_BLOCK_TIME_SECONDS,
          providers: [{ name: "anvil", url: upstreamUrl }],
        },
      },
    });
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: CONFIG_KEY, Body: configText }));
    client.destroy();

    const dynamo = await startDynalite({ tableName: TABLE });
    closers.push(() => dynamo.close());
    const calls: DynamoCall[] = [];
    // Each call named by its X-Amz-Target, with its sizes and the item it is about.
    const relay = await startCountingRelay(dynamo.endpoint, (exchange) => {
      const partition = partitionOf(exchange.body);
      calls.push({
        operation: String(exchange.headers["x-amz-target"] ?? "unknown").replace(/^.*\./, ""),
        at: Date.now(),
        requestBytes: exchange.requestBytes,
        responseBytes: exchange.responseBytes,
        ...(partition === undefined ? {} : { partition }),
      });
    });
    closers.push(() => relay.close());

    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      TABLE_NAME: TABLE,
      DYNAMODB_ENDPOINT: relay.url,
      CONFIG_BUCKET: BUCKET,
      CONFIG_KEY,
      S3_ENDPOINT: s3Endpoint,
      // As in the stack: secrets from SSM (this config has no placeholder, so no SSM call).
      SECRETS_SOURCE: "ssm",
      SECRETS_PREFIX: "/rpc-gateway/bench/",
      POWERTOOLS_SERVICE_NAME: "rpc-gateway-bench",
      POWERTOOLS_METRICS_NAMESPACE: "RpcGateway",
      POWERTOOLS_LOG_LEVEL: "INFO",
      NODE_NO_WARNINGS: "1",
    };

    let jobs = 0;
    const runChild = async <T>(job: ChildJob, nodeArgs: readonly string[] = []): Promise<T> => {
      const out = join(scratch, `job-${++jobs}.json`);
      const bundled = job.module.endsWith(".mjs");
      try {
        await run(process.execPath, [...nodeArgs, CHILD, JSON.stringify({ ...job, out })], {
          cwd: ROOT,
          // The stack puts the bundled fallback config beside the bundle.
          env: bundled
            ? { ...env, BUNDLED_CONFIG_PATH: join(resolve(job.module, ".."), "config.json") }
            : { ...env, BUNDLED_CONFIG_PATH: join(ROOT, "config", "dev.json") },
          maxBuffer: 64 * 1024 * 1024,
          timeout: 10 * 60_000,
        });
      } catch (error) {
        let detail = "";
        try {
          detail = (JSON.parse(readFileSync(out, "utf8")) as { error?: string }).error ?? "";
        } catch {
          // No result file: the process died before writing one; the error says why.
        }
        throw new Error(`${job.mode} run of ${job.module} failed: ${detail || String(error)}`);
      }
      return JSON.parse(readFileSync(out, "utf8")) as T;
    };

    const monitorClient = createDynamoClient({ endpoint: dynamo.endpoint });
    closers.push(async () => monitorClient.destroy());
    const monitorStore = new DynamoMonitorStore({ client: monitorClient, tableName: TABLE });
    const block = async (tag: string) => {
      const found = await rpc<{ number: string; hash: string }>(
        upstreamUrl,
        "eth_getBlockByNumber",
        [tag, false],
      );
      return { number: Number.parseInt(found.number, 16), hash: found.hash };
    };

    return {
      env,
      configText,
      dynamoCalls: (since) => calls.filter((call) => call.at >= since),
      runChild,
      async writeChainPosition() {
        const [latest, safe, finalized] = await Promise.all(
          ["latest", "safe", "finalized"].map(block),
        );
        if (latest === undefined) throw new Error("the upstream has no latest block");
        await monitorStore.writeHead(LAMBDA_NETWORK, {
          latest,
          safe: safe ?? null,
          finalized: finalized ?? null,
          served: null,
          previousServed: null,
          updatedAt: Date.now(),
          reorgSeenAt: 0,
        });
      },
      mineBlock: async () => {
        await rpc(upstreamUrl, "anvil_mine", ["0x1"]);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The partition key a DynamoDB request names: an item's `Key.pk`, or a Query's `:pk`. */
function partitionOf(body: string): string | undefined {
  try {
    const request = JSON.parse(body) as {
      Key?: { pk?: { S?: string } };
      ExpressionAttributeValues?: { ":pk"?: { S?: string } };
    };
    return request.Key?.pk?.S ?? request.ExpressionAttributeValues?.[":pk"]?.S;
  } catch {
    return undefined;
  }
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await answer.json()) as { result?: T; error?: { message?: string } };
  if (body.error !== undefined || !("result" in body)) {
    throw new Error(`${method}: ${body.error?.message ?? "no result"}`);
  }
  return body.result as T;
}
