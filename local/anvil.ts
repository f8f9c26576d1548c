import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import {
  ChildExitedError,
  findFreePort,
  spawnOwned,
  stopChild,
  waitUntilReady,
} from "./child-process.ts";

export interface StartAnvilOptions {
  chainId: number;
  /** Interval mining; without it anvil mines one block per transaction. Keep it ≥ 1 s. */
  blockTimeSeconds?: number;
  /** 0 or undefined picks a free port. */
  port?: number;
  /** How long to wait for the first eth_chainId answer (default 10 s). */
  readyTimeoutMs?: number;
}

/** A running anvil node on 127.0.0.1. */
export interface AnvilNode {
  readonly url: string;
  readonly port: number;
  readonly chainId: number;
  readonly process: ChildProcess;
  /** Calls a JSON-RPC method; throws with the node's error code and message on an error answer. */
  rpc<T = unknown>(method: string, params?: readonly unknown[]): Promise<T>;
  /** SIGTERM (SIGKILL after a grace period) and wait until the process is gone. */
  stop(): Promise<void>;
  /** SIGKILL at once, for "the primary dies mid-run" tests. */
  kill(): void;
}

export class JsonRpcCallError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
    readonly data?: unknown,
  ) {
    super(`${method} failed: ${code} ${rpcMessage}`);
    this.name = "JsonRpcCallError";
  }
}

const HOST = "127.0.0.1";
const PROBE_TIMEOUT_MS = 1000;
const RPC_TIMEOUT_MS = 30_000;
/** A picked port can be taken between the check and anvil's bind; try a few others. */
const PORT_ATTEMPTS = 5;

const PLATFORM_ARCH: Record<string, string> = { x64: "amd64", arm64: "arm64" };

/**
 * The native anvil binary. `ANVIL_BINARY` overrides it; otherwise it comes from the platform
 * package that `@foundry-rs/anvil` installs as an optional dependency. Spawning the binary
 * directly (not the package's `bin.mjs` wrapper) saves a Node start per node and means
 * signals reach anvil itself.
 */
export function resolveAnvilBinary(): string {
  const override = process.env.ANVIL_BINARY;
  if (override) return override;
  const arch = PLATFORM_ARCH[process.arch];
  const executable = process.platform === "win32" ? "anvil.exe" : "anvil";
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const require = createRequire(import.meta.url);
  // The platform package may be hoisted or nested under @foundry-rs/anvil; try both.
  const resolvers = [require];
  try {
    resolvers.push(createRequire(require.resolve("@foundry-rs/anvil/package.json")));
  } catch {
    // @foundry-rs/anvil itself is missing; the error below names what to install.
  }
  for (const resolver of resolvers) {
    try {
      const candidate = resolver.resolve(`${platformPackage}/bin/${executable}`);
      if (existsSync(candidate)) return candidate;
    } catch {
      // try the next location
    }
  }
  throw new Error(
    `anvil binary not found: ${platformPackage} is not installed (install @foundry-rs/anvil, or set ANVIL_BINARY)`,
  );
}

export async function startAnvil(options: StartAnvilOptions): Promise<AnvilNode> {
  const binary = resolveAnvilBinary();
  const fixedPort = options.port !== undefined && options.port !== 0 ? options.port : undefined;
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await findFreePort());
    try {
      return await launch(binary, port, options);
    } catch (error) {
      const portTaken =
        error instanceof ChildExitedError && error.stderr.includes("Address already in use");
      if (!portTaken || fixedPort !== undefined || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

async function launch(
  binary: string,
  port: number,
  options: StartAnvilOptions,
): Promise<AnvilNode> {
  const args = [
    "--host",
    HOST,
    "--port",
    String(port),
    "--chain-id",
    String(options.chainId),
    // --quiet: no per-request log lines (cost on the benchmark path, and nobody reads them).
    "--quiet",
  ];
  if (options.blockTimeSeconds !== undefined) {
    args.push("--block-time", String(options.blockTimeSeconds));
  }
  const owned = spawnOwned(binary, args);
  const url = `http://${HOST}:${port}`;
  const rpc = createRpcCaller(url);
  const expectedChainId = `0x${options.chainId.toString(16)}`;
  try {
    await waitUntilReady(owned, () => answersChainId(url, expectedChainId), {
      what: `anvil (chain ${options.chainId}, ${url})`,
      timeoutMs: options.readyTimeoutMs ?? 10_000,
    });
  } catch (error) {
    await stopChild(owned.child, 0);
    throw error;
  }
  return {
    url,
    port,
    chainId: options.chainId,
    process: owned.child,
    rpc,
    stop: () => stopChild(owned.child),
    kill: () => {
      owned.child.kill("SIGKILL");
    },
  };
}

async function answersChainId(url: string, expected: string): Promise<boolean> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
  });
  const answer = (await response.json()) as { result?: unknown };
  return answer.result === expected;
}

function createRpcCaller(url: string): AnvilNode["rpc"] {
  let nextId = 1;
  return async <T>(method: string, params: readonly unknown[] = []): Promise<T> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
      signal: AbortSignal.timeout(RPC_TIMEOUT_MS),
    });
    const answer = (await response.json()) as {
      result?: T;
      error?: { code: number; message: string; data?: unknown };
    };
    if (answer.error) {
      throw new JsonRpcCallError(
        method,
        answer.error.code,
        answer.error.message,
        answer.error.data,
      );
    }
    return answer.result as T;
  };
}
