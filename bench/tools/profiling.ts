import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AnvilNode } from "../../local/anvil.ts";
import type { Workload } from "../targets/calls.ts";
import { byFile, byNearestProjectFrame, readProfile, sample, top } from "./cpuprofile.ts";
import type { LambdaCall, LambdaEnvironment } from "./lambda-env.ts";
import type { LoadGenerator } from "./load.ts";
import { GATEWAY_NETWORK, startGatewayProcess } from "./servers.ts";

/**
 * Where the time goes, from V8 CPU profiles (`--cpu-prof`): the proxy handler invoked
 * directly, back to back and at a steady modest rate (its source, type-stripped by Node, so
 * frames name their files), and the local server (`npm start`) under load. Each sample is
 * charged to its nearest project frame, and by file or package, in µs per request.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const PROFILES = join(ROOT, "bench", ".tmp", "profiles");
const TOP = 12;

export interface ProfileFindings {
  readonly subject: string;
  readonly requests: number;
  /** CPU sampled per request (idle excluded), µs. */
  readonly cpuUsPerRequest: number;
  readonly byOwner: ReadonlyArray<readonly [string, number]>;
  readonly byPackage: ReadonlyArray<readonly [string, number]>;
  readonly file: string;
}

function findings(
  subject: string,
  file: string,
  window: { fromMs: number; toMs: number },
  requests: number,
): ProfileFindings {
  const sampled = sample(readProfile(file), window);
  const perRequest = (entries: Array<[string, number]>) =>
    entries
      .filter(([name]) => !/\(idle\)/.test(name))
      .map(([name, us]) => [name, us / requests] as const);
  const owners = byNearestProjectFrame(sampled);
  const idle = [...owners].filter(([name]) => /\(idle\)/.test(name)).reduce((s, [, v]) => s + v, 0);
  return {
    subject,
    requests,
    cpuUsPerRequest: (sampled.totalUs - idle) / requests,
    byOwner: perRequest(top(owners, TOP + 2)).slice(0, TOP),
    byPackage: perRequest(top(byFile(sampled), TOP + 2)).slice(0, TOP),
    file,
  };
}

function freshDirectory(name: string): string {
  const dir = join(PROFILES, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The largest profile in a directory: the process that did the work. */
function largestProfile(dir: string): string {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".cpuprofile"))
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  const [largest] = files;
  if (!largest) throw new Error(`no CPU profile was written to ${dir}`);
  return largest;
}

/** Node runs the handler's TypeScript itself: no bundler or loader frames in the profile. */
const SOURCE_FLAGS = ["--experimental-transform-types"];
const GATEWAY_SOURCE = join(ROOT, "functions", "proxy", "handler.ts");

export async function profileHandler(
  environment: LambdaEnvironment,
  plan: { readonly call: LambdaCall; readonly count: number },
  log: (line: string) => void,
): Promise<ProfileFindings> {
  const dir = freshDirectory("handler");
  const figures = await environment.runChild<{ count: number; sinceStartMs: [number, number] }>(
    { module: GATEWAY_SOURCE, mode: "loop", ...plan.call, warmup: 2000, count: plan.count },
    [...SOURCE_FLAGS, "--cpu-prof", `--cpu-prof-dir=${dir}`],
  );
  const [fromMs, toMs] = figures.sinceStartMs;
  const result = findings(
    "proxy handler invoked back to back",
    largestProfile(dir),
    { fromMs, toMs },
    figures.count,
  );
  log(`profile: handler ${result.cpuUsPerRequest.toFixed(0)} µs CPU/request sampled`);
  return result;
}

/** The handler in a container that idles between requests, as the cost part runs it. */
export async function profilePacedHandler(
  environment: LambdaEnvironment,
  plan: { readonly call: LambdaCall; readonly rate: number; readonly seconds: number },
  log: (line: string) => void,
): Promise<ProfileFindings> {
  const dir = freshDirectory("handler-paced");
  const figures = await environment.runChild<{ count: number; sinceStartMs: [number, number] }>(
    {
      module: GATEWAY_SOURCE,
      mode: "paced",
      ...plan.call,
      rate: plan.rate,
      seconds: plan.seconds,
    },
    [...SOURCE_FLAGS, "--cpu-prof", `--cpu-prof-dir=${dir}`],
  );
  const [fromMs, toMs] = figures.sinceStartMs;
  const result = findings(
    `proxy handler at ${plan.rate} requests/s (idle in between)`,
    largestProfile(dir),
    { fromMs, toMs },
    figures.count,
  );
  log(`profile: paced handler ${result.cpuUsPerRequest.toFixed(0)} µs CPU/request sampled`);
  return result;
}

export async function profileLocalServer(
  anvil: AnvilNode,
  load: LoadGenerator,
  plan: { readonly workload: Workload; readonly connections: number; readonly seconds: number },
  log: (line: string) => void,
): Promise<ProfileFindings> {
  const dir = freshDirectory("local-server");
  const spawnedAt = Date.now();
  const server = await startGatewayProcess({
    name: "gateway (profiled)",
    upstreamUrl: anvil.url,
    nodeOptions: ["--cpu-prof", `--cpu-prof-dir=${dir}`],
  });
  const { workload } = plan;
  const job = { url: `${server.url}/${GATEWAY_NETWORK}`, workload, connections: plan.connections };
  let window: { fromMs: number; toMs: number };
  let requests: number;
  try {
    await load.run({ ...job, seconds: 2 });
    const from = Date.now();
    const result = await load.run({ ...job, seconds: plan.seconds });
    window = { fromMs: from - spawnedAt, toMs: Date.now() - spawnedAt };
    requests = result.requests;
  } finally {
    await server.stop();
  }
  // The profile starts when the gateway's Node process does, a little after the spawn: the
  // window is late by that much, and loses as much of the load at its start.
  const found = findings(
    `local server (npm start) at c=${plan.connections}, ${workload.name}`,
    largestProfile(dir),
    window,
    requests,
  );
  log(`profile: local server ${found.cpuUsPerRequest.toFixed(0)} µs CPU/request sampled`);
  return found;
}
