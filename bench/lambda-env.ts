import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { startDynalite } from "../local/dynamodb.ts";

/**
 * What a proxy Lambda talks to, on this machine: the config object in an S3-compatible server
 * (s3rver), the state table in dynalite behind a counting relay (every DynamoDB call the
 * handler makes, by operation and size), and the anvil upstream. Handlers run in fresh Node
 * processes (bench/lambda-child.ts) with the environment the stack gives the Lambda.
 */

const ROOT = resolve(import.meta.dirname, "..");
const CHILD = join(ROOT, "bench", "lambda-child.ts");
const BUCKET = "bench-config";
const CONFIG_KEY = "config/bench.json";
const TABLE = "bench-lambda";
export const LAMBDA_NETWORK = "bench";
const run = promisify(execFile);

/** One DynamoDB call the handler made: its operation (Query, UpdateItem, …) and sizes. */
export interface DynamoCall {
  readonly operation: string;
  /** Milliseconds since the epoch, when the answer went back. */
  readonly at: number;
  readonly requestBytes: number;
  readonly responseBytes: number;
}

export interface LambdaEnvironment {
  /** The environment of the Lambda, pointed at the local stand-ins. */
  readonly env: Readonly<Record<string, string>>;
  /** DynamoDB calls made since `since` (ms since the epoch). */
  dynamoCalls(since: number): DynamoCall[];
  /** Runs one Lambda container (bench/lambda-child.ts) and returns its figures. */
  runChild<T>(job: ChildJob, nodeArgs?: readonly string[]): Promise<T>;
  close(): Promise<void>;
}

export interface ChildJob {
  readonly module: string;
  readonly mode: "cold" | "loop" | "paced";
  readonly event: unknown;
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
    await client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: CONFIG_KEY,
        Body: JSON.stringify({
          networks: {
            [LAMBDA_NETWORK]: {
              chain_id: 31337,
              providers: [{ name: "anvil", url: upstreamUrl }],
            },
          },
        }),
      }),
    );
    client.destroy();

    const dynamo = await startDynalite({ tableName: TABLE });
    closers.push(() => dynamo.close());
    const calls: DynamoCall[] = [];
    const relay = await startCountingRelay(dynamo.endpoint, (call) => calls.push(call));
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

    return {
      env,
      dynamoCalls: (since) => calls.filter((call) => call.at >= since),
      runChild,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A relay in front of dynalite that names each call by its X-Amz-Target and counts bytes. */
async function startCountingRelay(
  target: string,
  record: (call: DynamoCall) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const agent = new http.Agent({ keepAlive: true });
  const upstream = new URL(target);
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const operation = String(req.headers["x-amz-target"] ?? "unknown").replace(/^.*\./, "");
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        const parts: Buffer[] = [];
        answer.on("data", (part: Buffer) => parts.push(part));
        answer.on("end", () => {
          const payload = Buffer.concat(parts);
          record({
            operation,
            at: Date.now(),
            requestBytes: body.length,
            responseBytes: payload.length,
          });
          res.writeHead(answer.statusCode ?? 500, answer.headers).end(payload);
        });
      },
    );
    forward.on("error", (error) => res.writeHead(502).end(String(error)));
    forward.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      agent.destroy();
    },
  };
}
