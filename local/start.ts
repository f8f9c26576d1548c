import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { devnetFor } from "./devnet.ts";
import { startLocalStack } from "./stack.ts";

/**
 * `npm start`: the gateway on 127.0.0.1 with no AWS account. By default it serves
 * config/local.json and starts the devnet that file points at (one anvil chain, behind a
 * front on each provider's port: two primaries and a backup); `--config FILE` serves another
 * config without a devnet unless `--devnet` is given too, which starts the chains that file's
 * providers on 127.0.0.1 point at.
 */

const { values } = parseArgs({
  allowNegative: true,
  options: {
    port: { type: "string", default: "8545" },
    config: { type: "string" },
    devnet: { type: "boolean", default: false },
    metrics: { type: "boolean", default: false },
    containers: { type: "string", default: "1" },
    dynamodb: { type: "string" },
    monitor: { type: "boolean", default: true },
    "socket-idle-seconds": { type: "string" },
    "socket-lifetime-seconds": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help) {
  console.log(
    "usage: npm start -- [--port 8545] [--config FILE] [--devnet] [--metrics] [--containers N] [--dynamodb URL] [--no-monitor] [--socket-idle-seconds 600] [--socket-lifetime-seconds 7200]",
  );
  process.exit(0);
}
const containers = Number(values.containers);
if (!Number.isInteger(containers) || containers < 1 || containers > 64) {
  console.error(`--containers must be a whole number from 1 to 64, not "${values.containers}"`);
  process.exit(2);
}

/** A WebSocket limit shortened by a flag (API Gateway's own when absent). */
function socketLimitMs(
  flag: "socket-idle-seconds" | "socket-lifetime-seconds",
): number | undefined {
  const given = values[flag];
  if (given === undefined) return undefined;
  const seconds = Number(given);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    console.error(`--${flag} must be a number of seconds above 0, not "${given}"`);
    process.exit(2);
  }
  return seconds * 1000;
}
const socketIdleMs = socketLimitMs("socket-idle-seconds");
const socketLifetimeMs = socketLimitMs("socket-lifetime-seconds");

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`--port must be a port number, not "${values.port}"`);
  process.exit(2);
}
const configPath = values.config ?? "config/local.json";
const withDevnet = values.config === undefined || values.devnet;
const started = performance.now();

/** The config's JSON for the devnet to read its ports from; the stack reports a bad file. */
function configJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

try {
  const stack = await startLocalStack({
    config: configPath,
    port,
    devnet: withDevnet ? devnetFor(configJson(configPath)) : [],
    monitor: values.monitor,
    containers,
    ...(values.dynamodb ? { dynamodb: values.dynamodb } : {}),
    webSocket: {
      ...(socketIdleMs === undefined ? {} : { idleTimeoutMs: socketIdleMs }),
      ...(socketLifetimeMs === undefined ? {} : { maxConnectionMs: socketLifetimeMs }),
    },
    // CloudWatch reads EMF lines from stdout in AWS; locally they only drown the logs.
    ...(values.metrics ? {} : { writeMetrics: () => undefined }),
  });
  const { model } = await stack.runtime.current();
  const networks = [...model.networks.keys()];
  const first = networks[0] ?? "devnet";
  console.log(`
RPC gateway running at ${stack.url}  (ready in ${Math.round(performance.now() - started)} ms)

  config     ${stack.configPath}
  networks   ${networks.map((name) => `${stack.url}/${name}`).join("\n             ")}
  websocket  ${networks.map((name) => `${stack.wsUrl}/${name}`).join("\n             ")}
  status     ${stack.url}/status  (JSON, or a page in a browser)
  dynamodb   ${values.dynamodb ? "" : "dynalite at "}${stack.dynamo.endpoint} (table ${stack.dynamo.tableName})
  proxy      ${containers} runtime${containers === 1 ? "" : "s (as many Lambda containers, one request each at a time)"}
  monitor    ${values.monitor ? `quorum and probes every ${model.checkIntervalSeconds} s` : "off (--no-monitor)"}
  devnet     ${stack.devnet === null ? (withDevnet ? "none: no provider of the config is on 127.0.0.1" : "not started (--devnet to start it)") : stack.devnet.chains.map(({ node, fronts }) => `anvil chain ${node.chainId} at ${node.url}, fronted on ${fronts.map((front) => front.port).join(", ")}`).join("\n             ")}

Try:
  curl -s ${stack.url}/${first} -H 'content-type: application/json' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'

Ctrl-C stops everything.
`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping…`);
    await stack.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
} catch (error) {
  console.error(`could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
