/**
 * Where the gateway's time goes, without the network: the proxy runtime's `handle()` on a
 * stub upstream (CPU per request, sequential and 32 in flight), the telemetry calls a request
 * makes, the API Gateway emulator's per-request extras, and the upstream adapter against a
 * plain undici request to the same anvil node. Profile it with
 *
 *   POWERTOOLS_LOG_LEVEL=WARN node --import tsx --cpu-prof --cpu-prof-dir=bench/.tmp/prof-handler \
 *     bench/profile-handler.ts
 *
 * Not part of `npm run bench`.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { Agent, request } from "undici";
import { createConfigSource } from "../functions/adapters/config-source.ts";
import { envSecretResolver } from "../functions/adapters/secrets.ts";
import { DynamoStateStore } from "../functions/adapters/state-store.ts";
import { createTelemetry } from "../functions/adapters/telemetry.ts";
import { createUpstream } from "../functions/adapters/upstream.ts";
import type { Upstream } from "../functions/core/ports.ts";
import { createProxyRuntime } from "../functions/proxy/runtime.ts";
import { startAnvil } from "../local/anvil.ts";
import { createLocalDynamoDbClient, startDynalite } from "../local/dynamodb.ts";

process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
const ANSWER = '{"jsonrpc":"2.0","id":1,"result":"0xa"}';

function event(): APIGatewayProxyEventV2 {
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: "/bench",
    rawQueryString: "",
    headers: { "content-type": "application/json", host: "127.0.0.1" },
    requestContext: {
      accountId: "123456789012",
      apiId: "local",
      domainName: "127.0.0.1",
      domainPrefix: "127",
      http: {
        method: "POST",
        path: "/bench",
        protocol: "HTTP/1.1",
        sourceIp: "127.0.0.1",
        userAgent: "",
      },
      requestId: "id",
      routeKey: "$default",
      stage: "$default",
      time: "",
      timeEpoch: now.getTime(),
    },
    body: BODY,
    isBase64Encoded: false,
  };
}

/** CPU µs of the main thread (Linux); process CPU elsewhere. */
function mainThreadCpuUs(): number {
  try {
    const stat = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6;
  } catch {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  }
}

async function perCall(label: string, n: number, inFlight: number, call: () => Promise<unknown>) {
  for (let i = 0; i < Math.min(n, 2000); i++) await call(); // warm-up (JIT)
  const cpu = mainThreadCpuUs();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < n) await call();
    }),
  );
  const wall = (performance.now() - started) * 1000;
  const used = mainThreadCpuUs() - cpu;
  console.log(
    `${label.padEnd(58)} ${(wall / n).toFixed(1).padStart(7)} µs wall/call ${(used / n).toFixed(1).padStart(7)} µs CPU/call`,
  );
}

function perCallSync(label: string, n: number, call: () => unknown) {
  for (let i = 0; i < Math.min(n, 2000); i++) call();
  const started = performance.now();
  for (let i = 0; i < n; i++) call();
  console.log(
    `${label.padEnd(58)} ${(((performance.now() - started) * 1000) / n).toFixed(2).padStart(7)} µs/call`,
  );
}

const dir = await mkdtemp(join(tmpdir(), "bench-handler-"));
const dynamo = await startDynalite({ tableName: "bench" });
const anvil = await startAnvil({ chainId: 31337 });
const realUpstream = createUpstream();
try {
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      networks: { bench: { chain_id: 31337, providers: [{ name: "anvil", url: anvil.url }] } },
    }),
  );
  let metricLines = 0;
  const stub: Upstream = {
    send: async () => ({ ok: true, status: 200, body: ANSWER, elapsedMs: 0.1 }),
  };
  const runtime = createProxyRuntime({
    configSource: createConfigSource({ kind: "file", path: configPath }),
    secrets: envSecretResolver({}),
    store: new DynamoStateStore({
      client: createLocalDynamoDbClient(dynamo.endpoint),
      tableName: dynamo.tableName,
    }),
    upstream: stub,
    writeMetrics: () => {
      metricLines++;
    },
  });
  await runtime.current();
  const check = await runtime.handle(event());
  if (check.statusCode !== 200 || check.body !== ANSWER) {
    throw new Error(`unexpected answer: ${check.statusCode} ${check.body}`);
  }

  console.log("\n# handler CPU, stub upstream (no network)");
  await perCall("runtime.handle(), sequential", 50_000, 1, () => runtime.handle(event()));
  await perCall("runtime.handle(), 32 in flight", 50_000, 32, () => runtime.handle(event()));
  console.log(`(EMF lines written: ${metricLines})`);

  console.log("\n# telemetry, per request (measure ×2 + count)");
  const telemetry = createTelemetry({
    serviceName: "bench",
    namespace: "Bench",
    scrub: (text) => text,
    write: () => undefined,
  });
  perCallSync("measure(latency) + measure(attempts) + count(requests)", 50_000, () => {
    telemetry.measure("latency_ms", { network: "bench" }, 3, "Milliseconds");
    telemetry.measure("attempts", { network: "bench" }, 1, "Count");
    telemetry.count("requests", { network: "bench" });
  });
  const quiet = createTelemetry({
    serviceName: "bench",
    namespace: "Bench",
    scrub: (text) => text,
    write: () => undefined,
    flushIntervalMs: 3_600_000,
  });
  perCallSync("  … of which recording only (values cap aside)", 99, () => {
    quiet.count("requests", { network: "bench" });
  });

  console.log("\n# API Gateway emulator extras per request (local only, not in Lambda)");
  perCallSync("randomBytes(11) base64 (requestId)", 50_000, () =>
    randomBytes(11).toString("base64"),
  );
  perCallSync("randomBytes(12) hex (trace id)", 50_000, () => randomBytes(12).toString("hex"));
  perCallSync("randomUUID() (awsRequestId)", 50_000, () => randomUUID());

  // Upstream clients, alternated over several rounds (the machine is shared: noise moves).
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 256 });
  const nodeAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const clients: Record<string, () => Promise<unknown>> = {
    "undici request + text()": async () => {
      const answer = await request(anvil.url, {
        dispatcher: agent,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: BODY,
      });
      await answer.body.text();
    },
    "undici + AbortSignal.timeout + headers/bodyTimeout": async () => {
      const answer = await request(anvil.url, {
        dispatcher: agent,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: BODY,
        signal: AbortSignal.timeout(10_000),
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      await answer.body.text();
    },
    "node:http request, keep-alive Agent, minimal": () =>
      new Promise<void>((resolve, reject) => {
        const outgoing = http.request(anvil.url, {
          method: "POST",
          agent: nodeAgent,
          headers: { "content-type": "application/json", "content-length": BODY.length },
        });
        outgoing.on("error", reject);
        outgoing.on("response", (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => {
            Buffer.concat(chunks).toString("utf8");
            resolve();
          });
        });
        outgoing.end(BODY);
      }),
    "createUpstream().send (the gateway's adapter)": () =>
      realUpstream.send({
        url: anvil.url,
        body: BODY,
        timeoutMs: 10_000,
        maxResponseBytes: 6_000_000,
      }),
  };
  for (const inFlight of [1, 32]) {
    console.log(`\n# upstream clients against anvil, ${inFlight} in flight, 3 alternating rounds`);
    for (let round = 1; round <= 3; round++) {
      for (const [label, call] of Object.entries(clients)) {
        await perCall(`${label} (round ${round})`, 10_000, inFlight, call);
      }
    }
  }
  await agent.close();
  nodeAgent.destroy();
} finally {
  await realUpstream.close();
  await anvil.stop();
  await dynamo.close();
  await rm(dir, { recursive: true, force: true });
}
