import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * A child process owned by the local runtime (anvil, DynamoDB Local): spawned, awaited until
 * it answers, stopped, and never left behind when this process ends.
 */
export interface OwnedChildProcess {
  readonly child: ChildProcess;
  /** The last few KB of the child's stderr (and any spawn error), for error messages. */
  stderrTail(): string;
  /** True once the child has exited or could not be spawned at all. */
  isGone(): boolean;
}

const STDERR_TAIL_BYTES = 4096;
const POLL_INTERVAL_MS = 10;

const liveChildren = new Set<ChildProcess>();
let exitHooksInstalled = false;

export function spawnOwned(
  command: string,
  args: readonly string[],
  options: { cwd?: string } = {},
): OwnedChildProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    // stdout is ignored so a chatty child can never block on a full pipe; stderr is drained.
    stdio: ["ignore", "ignore", "pipe"],
  });
  let tail = "";
  let spawnFailed = false;
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    tail = (tail + chunk).slice(-STDERR_TAIL_BYTES);
  });
  // A missing or non-executable binary emits "error" and never "exit".
  child.on("error", (error) => {
    spawnFailed = true;
    tail = `${tail}${error.message}\n`.slice(-STDERR_TAIL_BYTES);
    liveChildren.delete(child);
  });
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  installExitHooks();
  return { child, stderrTail: () => tail, isGone: () => spawnFailed || hasExited(child) };
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Polls `probe` until it returns true. Fails fast when the child dies first (with its stderr)
 * and after `timeoutMs` with a message naming `what`. A probe must bound its own duration
 * (e.g. `AbortSignal.timeout`); a probe that throws counts as "not ready yet".
 */
export async function waitUntilReady(
  owned: OwnedChildProcess,
  probe: () => Promise<boolean>,
  { what, timeoutMs }: { what: string; timeoutMs: number },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (owned.isGone()) throw new ChildExitedError(what, owned.child, owned.stderrTail());
    if (await probe().catch(() => false)) return;
    await sleep(POLL_INTERVAL_MS);
  }
  throw new Error(
    `${what} did not become ready within ${timeoutMs} ms. stderr: ${owned.stderrTail() || "(empty)"}`,
  );
}

export class ChildExitedError extends Error {
  constructor(
    what: string,
    child: ChildProcess,
    readonly stderr: string,
  ) {
    super(
      `${what} exited before it was ready (code ${child.exitCode}, signal ${child.signalCode}). stderr: ${stderr || "(empty)"}`,
    );
    this.name = "ChildExitedError";
  }
}

/** SIGTERM, then SIGKILL if the child has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (hasExited(child) || child.pid === undefined) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const stoppedInTime = await Promise.race([
    exited.then(() => true),
    sleep(graceMs, false, { ref: false }),
  ]);
  if (!stoppedInTime) {
    child.kill("SIGKILL");
    await exited;
  }
}

/**
 * A port that is free on every interface right now. Bound on the wildcard address on purpose:
 * a server that itself binds 0.0.0.0 (DynamoDB Local) may share a port with a 127.0.0.1
 * listener, so a loopback-only check could hand out a port that is already in use.
 * Callers retry on "address in use", since the port can be taken between check and use.
 */
export async function findFreePort(): Promise<number> {
  const server = createServer();
  server.listen(0);
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") {
    throw new Error("could not determine a free TCP port");
  }
  return address.port;
}

function killAllChildren(): void {
  for (const child of liveChildren) child.kill("SIGKILL");
}

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.once("exit", killAllChildren);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = (): void => {
      killAllChildren();
      // Listening for a signal disables Node's default "exit on signal"; restore it unless
      // someone else (e.g. `npm start`'s graceful shutdown) handles the signal.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}
