/**
 * Splits the gateway's cost into layers, on the same anvil node and load generator as the
 * bench: each target below adds one layer to the previous one. Prints the main thread's CPU
 * time per request (where every server here runs) and the throughput, per target.
 *
 *   pass-through      node:http + undici forward (bench/passthrough.ts)
 *   emulator-forward  the API Gateway emulator (local/apigw-emulator.ts) + a handler that only
 *                     forwards the body with undici: the emulator's own cost
 *   gateway-stub      the emulator + the real proxy runtime on a stub upstream (no upstream I/O)
 *   gateway-plain-upstream  the same with a bare undici upstream (no signal, no timeouts)
 *   gateway-adapter   the same with the real upstream adapter (createUpstream)
 *   gateway           the whole local stack (`startLocalStack`), as in the bench
 *
 *   POWERTOOLS_LOG_LEVEL=WARN node --import tsx bench/profile.ts \
 *     [--targets pass-through,emulator-forward,gateway-stub,gateway] [--connections 32]
 *     [--seconds 5] [--method eth_blockNumber|eth_getBlockByNumber]
 *
 * Add `--cpu-prof --cpu-prof-dir=bench/.tmp/prof` (before the script) with a single target
 * to profile it, then `npx tsx bench/cpuprofile-top.ts <main thread .cpuprofile>`.
 * Not part of `npm run bench`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { Agent, request } from "undici";
import { createConfigSource } from "../functions/adapters/config-source.ts";
import { envSecretResolver } from "../functions/adapters/secrets.ts";
import { createDynamoClient, DynamoStateStore } from "../functions/adapters/state-store.ts";
import { createUpstream } from "../functions/adapters/upstream.ts";
import type { Upstream } from "../functions/core/ports.ts";
import { createProxyRuntime } from "../functions/proxy/runtime.ts";
import { startAnvil } from "../local/anvil.ts";
import { startApiGateway } from "../local/apigw-emulator.ts";
import { startDynalite } from "../local/dynamodb.ts";
import { startLocalStack } from "../local/stack.ts";
import type { LoadJob, LoadResult } from "./load-worker.ts";
import { startPassthrough } from "./passthrough.ts";

process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";

const { values } = parseArgs({
  options: {
    targets: { type: "string", default: "pass-through,emulator-forward,gateway-stub,gateway" },
    connections: { type: "string", default: "32" },
    seconds: { type: "string", default: "5" },
    method: { type: "string", default: "eth_blockNumber" },
  },
});

const body =
  values.method === "eth_getBlockByNumber"
    ? '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}'
    : '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

/** CPU seconds of this process's main thread (Linux). */
function mainThreadCpu(): number {
  const stat = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const closers: Array<() => Promise<unknown>> = [];
const anvil = await startAnvil({ chainId: 31337 });
closers.push(() => anvil.stop());
await anvil.rpc("anvil_mine", ["0xa"]);
const worker = new Worker(new URL("./load-worker.ts", import.meta.url));
closers.push(() => worker.terminate());
const dir = await mkdtemp(join(tmpdir(), "bench-profile-"));
closers.push(() => rm(dir, { recursive: true, force: true }));

try {
  // The stub answers what anvil answers, captured once.
  const captured = await (
    await fetch(anvil.url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    })
  ).text();
  const config = {
    networks: { bench: { chain_id: 31337, providers: [{ name: "anvil", url: anvil.url }] } },
  };

  async function start(target: string): Promise<string> {
    switch (target) {
      case "pass-through": {
        const server = await startPassthrough(anvil.url);
        closers.push(() => server.close());
        return server.url;
      }
      case "emulator-forward": {
        const agent = new Agent({ keepAliveTimeout: 10_000, connections: 256 });
        const api = await startApiGateway({
          handler: async (event) => {
            const answer = await request(anvil.url, {
              dispatcher: agent,
              method: "POST",
              headers: { "content-type": "application/json" },
              body: event.body ?? "",
            });
            return {
              statusCode: answer.statusCode,
              headers: { "content-type": "application/json" },
              body: await answer.body.text(),
            };
          },
        });
        closers.push(
          () => api.close(),
          () => agent.close(),
        );
        return `${api.url}/bench`;
      }
      case "gateway-stub":
      case "gateway-adapter":
      case "gateway-plain-upstream": {
        const path = join(dir, `${target}.json`);
        writeFileSync(path, JSON.stringify(config));
        let upstream: Upstream;
        if (target === "gateway-stub") {
          upstream = {
            send: async () => ({ ok: true, status: 200, body: captured, elapsedMs: 0.1 }),
          };
        } else if (target === "gateway-adapter") {
          const adapter = createUpstream();
          closers.push(() => adapter.close());
          upstream = adapter;
        } else {
          const agent = new Agent({ keepAliveTimeout: 4_000, connections: 256 });
          closers.push(() => agent.close());
          upstream = {
            send: async (req) => {
              const started = performance.now();
              const answer = await request(req.url, {
                dispatcher: agent,
                method: "POST",
                headers: { "content-type": "application/json" },
                body: req.body,
              });
              const text = await answer.body.text();
              return {
                ok: true,
                status: answer.statusCode,
                body: text,
                elapsedMs: performance.now() - started,
              };
            },
          };
        }
        const dynamo = await startDynalite({ tableName: "bench" });
        closers.push(() => dynamo.close());
        const runtime = createProxyRuntime({
          configSource: createConfigSource({ kind: "file", path }),
          secrets: envSecretResolver({}),
          store: new DynamoStateStore({
            client: createDynamoClient({ endpoint: dynamo.endpoint }),
            tableName: dynamo.tableName,
          }),
          upstream,
          writeMetrics: () => undefined,
        });
        await runtime.current();
        const api = await startApiGateway({
          handler: (event, context) => runtime.handle(event, context.getRemainingTimeInMillis()),
        });
        closers.push(() => api.close());
        return `${api.url}/bench`;
      }
      case "gateway": {
        const stack = await startLocalStack({ config, writeMetrics: () => undefined });
        closers.push(() => stack.close());
        return `${stack.url}/bench`;
      }
      default:
        throw new Error(`unknown target ${target}`);
    }
  }

  const run = (url: string, durationSeconds: number) =>
    new Promise<LoadResult>((resolve, reject) => {
      worker.once("message", (message: { ok: boolean; result: LoadResult; error?: string }) =>
        message.ok ? resolve(message.result) : reject(new Error(message.error)),
      );
      const job: LoadJob = { url, body, connections: Number(values.connections), durationSeconds };
      worker.postMessage(job);
    });

  for (const target of (values.targets ?? "").split(",")) {
    const url = await start(target);
    await run(url, 2);
    const cpu = mainThreadCpu();
    const result = await run(url, Number(values.seconds));
    const used = mainThreadCpu() - cpu;
    const sorted = result.latenciesMs.sort();
    const problems = result.errors + result.non2xx + result.mismatches;
    console.error(
      `${target.padEnd(17)} c=${values.connections} ${values.method}: ${String(Math.round(result.responses / result.durationSeconds)).padStart(6)} req/s  p50 ${(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(3)} ms  main-thread CPU ${Math.round((used * 1e6) / result.responses)} µs/request${problems ? `  ${problems} ERRORS` : ""}`,
    );
  }
} finally {
  for (const close of closers.reverse()) await close().catch(() => undefined);
}
