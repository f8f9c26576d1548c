import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { groupMembers } from "./machine.ts";

/**
 * The servers under test, each in its own process group as a user would run it: the gateway
 * through `npm start -- --config F --port 0`, the pass-through through `node`. Stopped by
 * signalling their group (npm, its shell and tsx sit between us and the gateway's Node).
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const TMP = join(ROOT, "bench", ".tmp");
const READY_TIMEOUT_MS = 120_000;
const OUTPUT_TAIL_BYTES = 8192;
/** Writing a CPU profile of a long run can take a while on a busy machine. */
const GROUP_EXIT_TIMEOUT_MS = 60_000;

export interface ServerProcess {
  readonly name: string;
  readonly url: string;
  /** The process group: every process the server runs as. */
  readonly groupId: number;
  /** The last lines it printed, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

export const GATEWAY_NETWORK = "bench";

/** Groups still running: killed if the bench exits early (Ctrl-C, a crash). */
const liveGroups = new Set<number>();
process.once("exit", () => {
  for (const groupId of liveGroups) {
    try {
      process.kill(-groupId, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
});

/** The gateway as `npm start -- --config F --port 0` runs it, on one provider: the upstream. */
export function startGatewayProcess(options: {
  readonly name: string;
  readonly upstreamUrl: string;
  /** Node options for the gateway's processes, e.g. to write a CPU profile. */
  readonly nodeOptions?: readonly string[];
  /** The source tree to run (another revision's, for `--against`); default this one. */
  readonly root?: string;
}): Promise<ServerProcess> {
  mkdirSync(TMP, { recursive: true });
  const configPath = join(TMP, `${options.name.replace(/[^\w.-]/g, "-")}-config.json`);
  writeFileSync(
    configPath,
    JSON.stringify({
      networks: {
        [GATEWAY_NETWORK]: {
          chain_id: 31337,
          providers: [{ name: "anvil", url: options.upstreamUrl }],
        },
      },
    }),
  );
  const nodeOptions = options.nodeOptions ?? [];
  return startServer(
    options.name,
    "npm",
    ["start", "--", "--config", configPath, "--port", "0"],
    /RPC gateway running at (http:\/\/\S+)/,
    nodeOptions.length > 0
      ? { NODE_OPTIONS: [process.env.NODE_OPTIONS ?? "", ...nodeOptions].join(" ").trim() }
      : {},
    options.root,
  );
}

/** The gateway as `npm start -- --config F --port 0 [args]` runs it, on a config of the caller's. */
export function startGatewayWithConfig(
  name: string,
  configPath: string,
  args: readonly string[],
): Promise<ServerProcess> {
  return startServer(
    name,
    "npm",
    ["start", "--", "--config", configPath, "--port", "0", ...args],
    /RPC gateway running at (http:\/\/\S+)/,
    {},
  );
}

/** The plain undici pass-through (passthrough.ts) in its own Node process. */
export function startPassthroughProcess(upstreamUrl: string): Promise<ServerProcess> {
  return startServer(
    "pass-through",
    process.execPath,
    [join(ROOT, "bench", "tools", "passthrough-server.ts"), upstreamUrl],
    /listening (http:\/\/\S+)/,
    {},
  );
}

async function startServer(
  name: string,
  command: string,
  args: readonly string[],
  ready: RegExp,
  env: Record<string, string>,
  cwd: string = ROOT,
): Promise<ServerProcess> {
  const child = spawn(command, args, {
    cwd,
    detached: true, // its own process group, so the whole tree can be stopped
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const groupId = child.pid;
  if (groupId === undefined) {
    await once(child, "error").catch(() => undefined);
    throw new Error(`${name}: could not start ${command}`);
  }
  liveGroups.add(groupId);
  const stop = async () => {
    await stopGroup(child, groupId);
    liveGroups.delete(groupId);
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const match = ready.exec(tail);
    if (match?.[1]) {
      return { name, url: match[1], groupId, output: () => tail, stop };
    }
    if (child.exitCode !== null || child.signalCode !== null) break;
    await sleep(50);
  }
  await stop();
  throw new Error(`${name} did not start. Its output:\n${tail}`);
}

/** SIGTERM to the group, SIGKILL to it after a grace period; waits for the leader. */
async function stopGroup(leader: ChildProcess, groupId: number): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-groupId, name);
    } catch {
      // The group is gone already.
    }
  };
  if (leader.exitCode === null && leader.signalCode === null) {
    const exited = once(leader, "exit");
    signal("SIGTERM");
    const inTime = await Promise.race([exited.then(() => true), sleep(5_000, false)]);
    if (!inTime) {
      signal("SIGKILL");
      await exited;
    }
  }
  // The gateway's Node process may still be closing (and writing a CPU profile) after npm has
  // gone: wait for the group to empty, then kill whatever is left of it.
  const deadline = Date.now() + GROUP_EXIT_TIMEOUT_MS;
  while (groupMembers(groupId).length > 0 && Date.now() < deadline) await sleep(50);
  if (groupMembers(groupId).length > 0) {
    console.error(`bench: process group ${groupId} outlived its leader; killing it`);
    signal("SIGKILL");
  }
}
