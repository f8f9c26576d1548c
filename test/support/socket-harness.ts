import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { createConfigSource } from "../../functions/adapters/config/config-source.ts";
import { envSecretResolver } from "../../functions/adapters/config/secrets.ts";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { createProxyRuntime, type ProxyRuntime } from "../../functions/proxy/runtime.ts";
import { createSocketHandler, type SocketHandler } from "../../functions/socket/lambda.ts";
import { createSocketRuntime } from "../../functions/socket/runtime.ts";
import type { WebSocketEvent, WebSocketResult } from "../../functions/socket/socket-event.ts";
import { MemoryStateStore } from "./memory-state-store.ts";
import { MemorySubscriptionStore } from "./memory-subscription-store.ts";
import { resultFor, ScriptedUpstream } from "./scripted-upstream.ts";

/**
 * The socket Lambda on in-memory parts, for table-driven tests: the real proxy runtime (config
 * from a file, the whole pipeline) on the in-memory state and subscription stores, one
 * scripted provider answering by method, and the handler as Lambda runs it (middy). Events are
 * shaped as API Gateway's WebSocket proxy integration sends them.
 */

export const PROVIDER = "https://p1.test/rpc";
export const HEAD = 0x64;

export interface SocketHarnessOptions {
  /** Config keys beside the one network `net` (chain 1, one provider). */
  readonly config?: Omit<Partial<ConfigInput>, "networks">;
  /** Keys of the network `net`. */
  readonly network?: Partial<ConfigInput["networks"][string]>;
  /** What the provider answers per method (default: a head of 0x64, chain 1, 0x0 else). */
  readonly result?: (method: string, params: unknown[]) => unknown;
  /** The subscription store, to share one between harnesses (two containers); a fresh one by default. */
  readonly subscriptions?: MemorySubscriptionStore;
}

export interface SocketHarness {
  readonly handler: SocketHandler;
  readonly proxy: ProxyRuntime;
  readonly subscriptions: MemorySubscriptionStore;
  readonly upstream: ScriptedUpstream;
  readonly now: { value: number };
  connect(
    id: string,
    request?: { query?: Record<string, string>; headers?: Record<string, string> },
  ): Promise<WebSocketResult>;
  send(id: string, body: string): Promise<WebSocketResult>;
  /** The reply's body parsed (undefined when the reply carries none). */
  call(id: string, body: unknown): Promise<unknown>;
  disconnect(id: string): Promise<WebSocketResult>;
  close(): void;
}

/** The sha256 of an API key, as the config lists it. */
export const keyHash = (key: string) => createHash("sha256").update(key).digest("hex");

/** Two keys for the socket's tests: `alice` unlimited, `slow` at 2 requests a minute. */
export const KEYS = {
  api_keys: [
    { name: "alice", sha256: keyHash("alice-key-123") },
    { name: "slow", sha256: keyHash("slow-key-1234"), requests_per_minute: 2 },
  ],
};

/** One JSON-RPC call. */
export const rpc = (id: unknown, method: string, params: unknown[] = []) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

/**
 * A harness per test, closed after it: `start` makes one, `connected` one whose connection
 * `c1` (or `id`) is already let in.
 */
export function harnessPerTest() {
  let current: SocketHarness | undefined;
  afterEach(() => {
    current?.close();
    current = undefined;
  });
  const start = async (options: SocketHarnessOptions = {}) => {
    current = await socketHarness(options);
    return current;
  };
  const connected = async (options: SocketHarnessOptions = {}, id = "c1") => {
    const harness = await start(options);
    expect((await harness.connect(id)).statusCode).toBe(200);
    return harness;
  };
  return { start, connected };
}

export async function socketHarness(options: SocketHarnessOptions = {}): Promise<SocketHarness> {
  const dir = mkdtempSync(join(tmpdir(), "socket-harness-"));
  const path = join(dir, "config.json");
  const config: ConfigInput = {
    ...options.config,
    networks: { net: { chain_id: 1, providers: [{ url: PROVIDER }], ...options.network } },
  };
  writeFileSync(path, JSON.stringify(config));
  const now = { value: 1_800_000_000_000 };
  const clock = () => now.value;
  const upstream = new ScriptedUpstream().script(
    PROVIDER,
    resultFor(
      (method, call) =>
        options.result?.(method, call.params) ??
        (
          {
            eth_blockNumber: `0x${HEAD.toString(16)}`,
            eth_chainId: "0x1",
            net_version: "1",
          } as Record<string, unknown>
        )[method] ??
        "0x0",
    ),
  );
  const subscriptions = options.subscriptions ?? new MemorySubscriptionStore(clock);
  const proxy = createProxyRuntime({
    configSource: createConfigSource({ kind: "file", path }),
    secrets: envSecretResolver({}),
    store: new MemoryStateStore(clock),
    upstream,
    clock,
    writeMetrics: () => undefined,
  });
  await proxy.current();
  let random = 0;
  const handler = createSocketHandler(
    createSocketRuntime({
      proxy,
      store: subscriptions,
      clock,
      // Distinct, predictable ids: the n-th subscription's id ends in n.
      randomBytes: (size) => {
        random++;
        return Uint8Array.from({ length: size }, (_, index) => (index === size - 1 ? random : 0));
      },
    }),
  );
  const context = { getRemainingTimeInMillis: () => 28_000 } as never;
  const base = (
    id: string,
    eventType: WebSocketEvent["requestContext"]["eventType"],
    routeKey: string,
  ) => ({
    routeKey,
    eventType,
    connectionId: id,
    stage: "net",
    connectedAt: now.value,
    requestTimeEpoch: now.value,
    requestId: `req-${id}`,
    domainName: "127.0.0.1",
    apiId: "local",
  });
  const send = (id: string, body: string) =>
    handler(
      { requestContext: base(id, "MESSAGE", "$default"), body, isBase64Encoded: false },
      context,
    );
  return {
    handler,
    proxy,
    subscriptions,
    upstream,
    now,
    connect: (id, request = {}) =>
      handler(
        {
          requestContext: base(id, "CONNECT", "$connect"),
          headers: { Host: "127.0.0.1", "Sec-WebSocket-Version": "13", ...request.headers },
          queryStringParameters: request.query ?? null,
          isBase64Encoded: false,
        },
        context,
      ),
    send,
    async call(id, body) {
      const reply = await send(id, typeof body === "string" ? body : JSON.stringify(body));
      return reply.body === undefined ? undefined : JSON.parse(reply.body);
    },
    disconnect: (id) =>
      handler(
        {
          requestContext: { ...base(id, "DISCONNECT", "$disconnect"), disconnectStatusCode: 1000 },
          isBase64Encoded: false,
        },
        context,
      ),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
