import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { CfnElement } from "aws-cdk-lib";
import { build } from "esbuild";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PREPARED_CONFIG_FILE,
  prepareConfig,
} from "../../functions/adapters/config/config-prepared.ts";
import {
  createDynamoClient,
  DynamoStateStore,
} from "../../functions/adapters/store/state-store.ts";
import { DynamoSubscriptionStore } from "../../functions/adapters/subscriptions/subscription-store.ts";
import { BUNDLE_DEFINES } from "../../infra/constructs/node-function.ts";
import { PROJECT_ROOT } from "../../infra/gateway-config.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalDynamoDb, startDynalite } from "../../local/dynamodb.ts";
import { rpcEvent } from "../support/api-gateway-event.ts";
import {
  type SecretsExtensionStandIn,
  startSecretsExtension,
} from "../support/secrets-extension.ts";
import { synthGateway } from "./synth.ts";

/**
 * What `cdk deploy` uploads, run as Lambda would run it: real esbuild bundling through CDK,
 * then each bundle imported by a fresh Node 24 process with the Lambda's environment, against
 * local stand-ins of its AWS services (dynalite, s3rver) and a real anvil node.
 */

/**
 * The proxy bundle was 1,826 KB with the whole of undici and classic zod, 688 KB on Node's
 * HTTP client, ~1,050 KB with undici's dispatcher imported by path (its llhttp WebAssembly
 * parser included; `esbuildDetection` leaves out the experimental second one), the method
 * catalogue, the hardening and the status page with its event log, and is ~860 KB since the
 * config object is read with a signed GET instead of the S3 client; 969 KB with history-aware
 * routing and read consensus (docs/behaviour.md §16, §17). Size is no target of its
 * own (the bench compares import time with a minimal handler's); this bound stops regressions,
 * such as the S3 client (~140 KB) coming back.
 */
const MAX_PROXY_BYTES = 1000 * 1024;
/**
 * The socket bundle is the proxy's and the subscription registry (~20 KB more): its bound
 * stops the same regressions.
 */
const MAX_SOCKET_BYTES = 1040 * 1024;
/**
 * The follower bundle is the proxy's pipeline, the follower and the management API client:
 * its bound stops the same regressions.
 */
const MAX_FOLLOWER_BYTES = 1040 * 1024;
const run = promisify(execFile);

let bundles: Record<
  "proxy" | "monitor" | "socket" | "follower",
  { dir: string; file: string; bytes: number }
>;
let outdir: string;
let dynamo: LocalDynamoDb;
let anvil: AnvilNode;
let s3: S3rver;
let s3Dir: string;
let s3Endpoint: string;
let lambdaEnv: Record<string, string>;
let extension: SecretsExtensionStandIn;

beforeAll(async () => {
  const synth = synthGateway("dev", { bundle: true });
  outdir = synth.outdir;
  const resources = synth.template.toJSON().Resources as Record<
    string,
    { Properties: { Code: { S3Key: string } } }
  >;
  const locate = (fn: typeof synth.stack.proxy.function) => {
    const key =
      resources[synth.stack.getLogicalId(fn.node.defaultChild as CfnElement)]?.Properties.Code
        .S3Key;
    const dir = join(outdir, `asset.${key?.replace(/\.zip$/, "")}`);
    const file = join(dir, "index.mjs");
    return { dir, file, bytes: statSync(file).size };
  };
  bundles = {
    proxy: locate(synth.stack.proxy.function),
    monitor: locate(synth.stack.monitor.function),
    socket: locate(synth.stack.socket.function),
    follower: locate(synth.stack.follower.function),
  };

  [dynamo, anvil, extension] = await Promise.all([
    startDynalite({ tableName: "bundle-test" }),
    startAnvil({ chainId: 31337 }),
    startSecretsExtension(),
  ]);
  s3Dir = mkdtempSync(join(tmpdir(), "bundle-s3-"));
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: s3Dir });
  const address = await s3.run();
  s3Endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint: s3Endpoint,
    forcePathStyle: true,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  });
  await client.send(new CreateBucketCommand({ Bucket: "config-bucket" }));
  await client.send(
    new PutObjectCommand({
      Bucket: "config-bucket",
      Key: "config/dev.json",
      Body: JSON.stringify({
        check_interval_seconds: 1,
        // Short timeouts, so the monitor's tick budget fits the short invocation below.
        quorum: { check_timeout_ms: 1000 },
        probe: { timeout_ms: 1000 },
        networks: { devnet: { chain_id: 31337, providers: [{ name: "anvil", url: anvil.url }] } },
      }),
    }),
  );
  await client.send(
    new PutObjectCommand({
      Bucket: "config-bucket",
      Key: "config/with-secret.json",
      Body: JSON.stringify({
        networks: {
          devnet: {
            chain_id: 31337,
            providers: [{ name: "keyed", url: `${anvil.url}/?key=\${ANVIL_KEY}` }],
          },
        },
      }),
    }),
  );
  client.destroy();
  // The environment the stack gives both Lambdas, pointed at the local stand-ins.
  lambdaEnv = {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "S3RVER",
    AWS_SECRET_ACCESS_KEY: "S3RVER",
    TABLE_NAME: dynamo.tableName,
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    CONFIG_BUCKET: "config-bucket",
    CONFIG_KEY: "config/dev.json",
    S3_ENDPOINT: s3Endpoint,
    SECRETS_SOURCE: "env",
    POWERTOOLS_LOG_LEVEL: "WARN",
    POWERTOOLS_SERVICE_NAME: "rpc-gateway-dev",
    POWERTOOLS_METRICS_NAMESPACE: "RpcGateway",
  };
}, 240_000);

afterAll(async () => {
  await extension?.close();
  await s3?.close();
  await anvil?.stop();
  await dynamo?.close();
  if (s3Dir) rmSync(s3Dir, { recursive: true, force: true });
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

/** Imports a bundle in a fresh Node process and calls its handler once, as Lambda does. */
async function invoke(
  bundle: string,
  event: unknown,
  remainingMs: number,
  env: Record<string, string> = {},
) {
  const script = join(outdir, `invoke-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(
    script,
    `const started = performance.now();
const { handler } = await import(${JSON.stringify(bundle)});
const importMs = performance.now() - started;
const deadline = Date.now() + ${remainingMs};
const context = { awsRequestId: "bundle-test", functionName: "test", getRemainingTimeInMillis: () => deadline - Date.now() };
const result = await handler(${JSON.stringify(event)}, context);
process.stdout.write("\\n@@" + JSON.stringify({ importMs, result }) + "\\n");
process.exit(0);
`,
  );
  const { stdout, stderr } = await run(process.execPath, [script], {
    env: { ...lambdaEnv, ...env },
    timeout: 60_000,
  });
  if (process.env.DEBUG_BUNDLE) console.log(stdout, stderr);
  const line = stdout.split("\n").find((text) => text.startsWith("@@"));
  if (!line) throw new Error(`no result from the bundle; stdout:\n${stdout}`);
  return JSON.parse(line.slice(2)) as { importMs: number; result: Record<string, unknown> };
}

describe("the bundles CDK builds", () => {
  it("each handler is one ESM file with the env's config.json and the config prepared from it beside it", () => {
    const config = readFileSync(join(PROJECT_ROOT, "config", "dev.json"), "utf8");
    for (const { dir, file } of Object.values(bundles)) {
      expect(readFileSync(join(dir, "config.json"), "utf8")).toBe(config);
      expect(readFileSync(join(dir, PREPARED_CONFIG_FILE), "utf8")).toBe(
        prepareConfig(config, "config/dev.json"),
      );
      const code = readFileSync(file, "utf8");
      expect(code.startsWith("import { createRequire } from 'node:module';")).toBe(true);
      expect(code).toMatch(/export\s*\{[^}]*\bas handler\b[^}]*\}/);
      expect(code).not.toMatch(/sourceMappingURL/);
      execFileSync(process.execPath, ["--check", file]);
    }
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
  });

  it("the proxy bundle stays under its regression bound of 1,000 KB (the cold-start target is measured, not gated)", () => {
    const kb = Math.round(bundles.proxy.bytes / 1024);
    console.info(
      `bundle sizes: proxy ${kb} KB, monitor ${Math.round(bundles.monitor.bytes / 1024)} KB, socket ${Math.round(bundles.socket.bytes / 1024)} KB, follower ${Math.round(bundles.follower.bytes / 1024)} KB`,
    );
    expect(bundles.proxy.bytes, `proxy bundle is ${kb} KB`).toBeLessThanOrEqual(MAX_PROXY_BYTES);
    expect(bundles.socket.bytes).toBeLessThanOrEqual(MAX_SOCKET_BYTES);
    expect(bundles.follower.bytes).toBeLessThanOrEqual(MAX_FOLLOWER_BYTES);
  });

  // The cold import time is logged as a measurement, not a gate: one import on a shared
  // machine says little; `npm run bench` reports it against the 150 ms target.
  it("the bundled proxy serves a request: config from S3, state in DynamoDB, answer from anvil", async () => {
    const event = rpcEvent('{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}');
    const { importMs, result } = await invoke(bundles.proxy.file, event, 29_000);
    console.info(`proxy bundle cold import: ${importMs.toFixed(0)} ms (a measurement, not a gate)`);
    expect(result).toMatchObject({
      statusCode: 200,
      body: '{"jsonrpc":"2.0","id":7,"result":"0x7a69"}',
    });
    expect((result.headers as Record<string, string>)["x-gateway-provider"]).toBe("anvil");
  });

  it("the bundled proxy reads its config object from S3 and a provider's key through the Parameters and Secrets extension, and carries no S3, SSM or Secrets Manager client", async () => {
    for (const { file } of Object.values(bundles)) {
      const code = readFileSync(file, "utf8");
      for (const sdk of [
        "AmazonS3",
        "GetObjectCommand",
        "AmazonSSM",
        "GetParametersCommand",
        "SecretsManagerClient",
      ]) {
        expect(code).not.toContain(sdk);
      }
    }
    extension.parameters.set("/rpc-gateway/dev/ANVIL_KEY", "anvil-key-0123456789");
    const event = rpcEvent('{"jsonrpc":"2.0","id":8,"method":"eth_chainId","params":[]}');
    const { result } = await invoke(bundles.proxy.file, event, 29_000, {
      CONFIG_KEY: "config/with-secret.json",
      SECRETS_SOURCE: "ssm",
      SECRETS_PREFIX: "/rpc-gateway/dev/",
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: String(extension.port),
      AWS_SESSION_TOKEN: extension.token,
    });
    expect(result).toMatchObject({
      statusCode: 200,
      body: '{"jsonrpc":"2.0","id":8,"result":"0x7a69"}',
    });
    expect((result.headers as Record<string, string>)["x-gateway-provider"]).toBe("keyed");
    expect(extension.calls).toEqual([
      {
        path: "/systemsmanager/parameters/get",
        query: { name: "/rpc-gateway/dev/ANVIL_KEY", withDecryption: "true" },
        token: extension.token,
      },
    ]);
  });

  it("the bundled socket lets a connection in, answers its calls through the pipeline and its eth_subscribe from the registry, and lets it go", async () => {
    const context = (routeKey: string, eventType: string) => ({
      routeKey,
      eventType,
      connectionId: "bundle-conn-1=",
      stage: "devnet",
      connectedAt: Date.now(),
      requestId: "r",
      apiId: "bundle",
    });
    const connect = await invoke(
      bundles.socket.file,
      {
        requestContext: context("$connect", "CONNECT"),
        headers: { Host: "x" },
        isBase64Encoded: false,
      },
      28_000,
    );
    expect(connect.result).toMatchObject({ statusCode: 200 });
    const message = await invoke(
      bundles.socket.file,
      {
        requestContext: context("$default", "MESSAGE"),
        body: '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_subscribe","params":["newHeads"]}]',
        isBase64Encoded: false,
      },
      28_000,
    );
    const answers = JSON.parse(String(message.result.body)) as Array<{
      id: number;
      result: string;
    }>;
    expect(answers[0]).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
    expect(answers[1]?.result).toMatch(/^0x[0-9a-f]{32}$/);
    const store = new DynamoSubscriptionStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
    });
    expect((await store.list("devnet")).map((record) => record.id)).toEqual([answers[1]?.result]);
    await invoke(
      bundles.socket.file,
      { requestContext: context("$disconnect", "DISCONNECT") },
      28_000,
    );
    expect(await store.list("devnet")).toEqual([]);
  });

  it("only a function that pushes bundles the management API client, which adds ~11 KB beside the DynamoDB client", async () => {
    // Only the head follower's function pushes, so only it carries the client.
    for (const [name, { file }] of Object.entries(bundles)) {
      expect(readFileSync(file, "utf8").includes("PostToConnection")).toBe(name === "follower");
    }
    const measure = async (source: string) => {
      const dir = mkdtempSync(join(tmpdir(), "push-bundle-"));
      const entry = join(dir, "entry.ts");
      writeFileSync(entry, source);
      const out = join(dir, "out.mjs");
      await build({
        entryPoints: [entry],
        bundle: true,
        minify: true,
        format: "esm",
        platform: "node",
        target: "node24",
        mainFields: ["module", "main"],
        define: BUNDLE_DEFINES,
        outfile: out,
        logLevel: "error",
      });
      const bytes = statSync(out).size;
      rmSync(dir, { recursive: true, force: true });
      return bytes;
    };
    const monitor = join(PROJECT_ROOT, "functions/monitor/handler.ts");
    const push = join(PROJECT_ROOT, "functions/adapters/subscriptions/connection-push.ts");
    const without = await measure(`export { handler } from ${JSON.stringify(monitor)};`);
    const withPush = await measure(
      `export { handler } from ${JSON.stringify(monitor)};\nexport { ApiGatewayConnectionPush } from ${JSON.stringify(push)};`,
    );
    const addedKb = (withPush - without) / 1024;
    console.info(`the management API client adds ${addedKb.toFixed(1)} KB to the monitor's bundle`);
    expect(addedKb).toBeLessThan(40);
  });

  it("the bundled monitor runs its ticks and writes the quorum", async () => {
    const { importMs, result } = await invoke(bundles.monitor.file, {}, 12_000);
    console.info(
      `monitor bundle cold import: ${importMs.toFixed(0)} ms (a measurement, not a gate)`,
    );
    expect(result).toMatchObject({ leased: true });
    expect(result.ticks).toBeGreaterThanOrEqual(1);
    const state = await new DynamoStateStore({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
    }).readNetwork("devnet");
    expect(state.quorum?.members).toEqual(["anvil"]);
    expect(state.quorum?.head).toBe(Number(await anvil.rpc("eth_blockNumber", [])));
  });
});
