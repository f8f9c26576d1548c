import { setTimeout as sleep } from "node:timers/promises";
import type { AnvilNode } from "../../local/anvil.ts";
import type { Fault, FaultShim } from "../../local/fault-shim.ts";
import { BLOCK_TIME_SECONDS, SLOW_FAULT_MS } from "./config.ts";
import type { ProviderStatus } from "./observe.ts";
import type { OpKind } from "./traffic.ts";

/** What the http-429 scenario's answers ask for: longer than the chaos `rate_limit` base. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * The scenario matrix: one fault per scenario, applied to the primary (or to every provider
 * for "all down") while the traffic runs, then removed.
 */

export interface ScenarioContext {
  /** [primary, secondary, backup], each in front of its own anvil node. */
  readonly shims: readonly [FaultShim, FaultShim, FaultShim];
  readonly nodes: readonly [AnvilNode, AnvilNode, AnvilNode];
}

export interface HoldOptions {
  /** Flapping: on/off cycles, each `flapMs` on then `flapMs` off. */
  readonly flapCycles: number;
  readonly flapMs: number;
  /** All down: how long the outage lasts. */
  readonly outageMs: number;
  /** Traffic kept on the fault once the failover is seen. */
  readonly afterFailoverMs: number;
  readonly failoverTimeoutMs: number;
  /** Polls the status route until the primary's entry satisfies `check`; false on timeout. */
  waitForPrimary(check: (primary: ProviderStatus) => boolean, timeoutMs: number): Promise<boolean>;
}

export interface Scenario {
  readonly name: string;
  /** What is injected, for the report. */
  readonly fault: string;
  /** Every provider is faulted: no healthy provider remains during the fault. */
  readonly allDown?: boolean;
  /** Part of `--quick`. */
  readonly quick?: boolean;
  /**
   * An op sent (and recorded) the moment the fault is in force, before any monitor tick can
   * have seen it: makes the measurement of the detection window deterministic.
   */
  readonly sentinel?: OpKind;
  apply(ctx: ScenarioContext): Promise<void>;
  clear(ctx: ScenarioContext): Promise<void>;
  /**
   * Drives the fault phase itself (flapping, a fixed outage). Without it the runner holds the
   * fault until the failover is seen, then a little longer.
   */
  hold?(ctx: ScenarioContext, options: HoldOptions): Promise<void>;
}

const CLOUDFLARE_PAGE = (code: number) =>
  `<!DOCTYPE html>\n<html lang="en-US"><head><title>example.com | ${code}: Cloudflare error</title></head>` +
  `<body><div id="cf-error-details"><h1>Error ${code}</h1><p>Ray ID: 8f2c1e0b5a9d3c47</p>` +
  `<p>Performance &amp; security by Cloudflare</p></div></body></html>`;

const HTML = { "content-type": "text/html; charset=UTF-8" };

/** An eRPC proxy's error: every upstream exhausted, the leaves naming a capacity limit. */
export const ERPC_NESTED = {
  code: -32603,
  message: "failsafe retry exceeded: all upstream attempts failed",
  data: {
    code: "ErrFailsafeRetryExceeded",
    cause: {
      code: "ErrUpstreamsExhausted",
      message: "all upstream attempts failed",
      cause: [
        {
          code: "ErrUpstreamRequest",
          cause: {
            code: "ErrEndpointCapacityExceeded",
            message: "remote endpoint capacity exceeded",
          },
        },
        {
          code: "ErrUpstreamRequest",
          cause: { code: "ErrEndpointRequestTimeout", message: "remote endpoint request timeout" },
        },
      ],
    },
  },
};

/** A fault on the primary's shim, removed by passing everything through again. */
function onPrimary(
  name: string,
  fault: Fault,
  description: string,
  extra: Partial<Scenario> = {},
): Scenario {
  return {
    name,
    fault: description,
    apply: ({ shims }) => shims[0].setFault(fault),
    clear: ({ shims }) => shims[0].setFault(null),
    ...extra,
  };
}

/** The node stops mining; on recovery it catches up block by block (as a node that syncs). */
const laggingHead: Scenario = {
  name: "lagging-head",
  fault:
    "the primary's anvil stops mining (evm_setIntervalMining 0) and falls behind; then it catches up (evm_mine per missed second) and mines again",
  apply: async ({ nodes }) => {
    await nodes[0].rpc("evm_setIntervalMining", [0]);
  },
  clear: async ({ nodes }) => {
    const node = nodes[0];
    const head = await node.rpc<{ timestamp: string }>("eth_getBlockByNumber", ["latest", false]);
    const now = Math.floor(Date.now() / 1000);
    for (let at = Number.parseInt(head.timestamp, 16) + BLOCK_TIME_SECONDS; at <= now; at++) {
      await node.rpc("evm_mine", [at]);
    }
    await node.rpc("evm_setIntervalMining", [BLOCK_TIME_SECONDS]);
  },
  // Held until the quorum itself has the primary out as behind, not just until the first
  // null block from it made a request fail over.
  async hold(_ctx, options) {
    await options.waitForPrimary(
      (primary) => primary.quorum_reason === "behind",
      options.failoverTimeoutMs,
    );
    await sleep(options.afterFailoverMs);
  },
};

const flapping: Scenario = {
  name: "flapping",
  fault: "connection reset on the primary, switched on and off every 2 s",
  apply: ({ shims }) => shims[0].setFault({ kind: "refuse" }),
  clear: ({ shims }) => shims[0].setFault(null),
  async hold({ shims }, { flapCycles, flapMs }) {
    for (let cycle = 0; cycle < flapCycles; cycle++) {
      await sleep(flapMs);
      await shims[0].setFault(null);
      await sleep(flapMs);
      await shims[0].setFault({ kind: "refuse" });
    }
    await sleep(flapMs);
  },
};

const allDown: Scenario = {
  name: "all-down",
  fault: "every provider stops listening (connection refused), then listens again",
  allDown: true,
  quick: true,
  apply: async ({ shims }) => {
    await Promise.all(shims.map((shim) => shim.setFault({ kind: "down" })));
  },
  clear: async ({ shims }) => {
    await Promise.all(shims.map((shim) => shim.setFault(null)));
  },
  async hold(_ctx, { outageMs }) {
    await sleep(outageMs);
  },
};

export const SCENARIOS: readonly Scenario[] = [
  onPrimary("refuse", { kind: "refuse" }, "TCP reset on every request", { quick: true }),
  onPrimary("hang", { kind: "hang" }, "requests accepted, never answered (timeout)", {
    quick: true,
  }),
  onPrimary(
    "slow",
    { kind: "slow", ms: SLOW_FAULT_MS },
    `every answer delayed ${SLOW_FAULT_MS} ms (slow_response_ms 250, request_timeout_ms 500)`,
    { quick: true },
  ),
  onPrimary(
    "http-429",
    {
      kind: "http",
      status: 429,
      body: '{"error":"Too Many Requests"}',
      headers: { "content-type": "application/json", "retry-after": String(RETRY_AFTER_SECONDS) },
    },
    `HTTP 429 storm with Retry-After: ${RETRY_AFTER_SECONDS}`,
    { quick: true },
  ),
  onPrimary(
    "http-500-html",
    {
      kind: "http",
      status: 500,
      body: "<html><body><h1>500 Internal Server Error</h1></body></html>",
      headers: HTML,
    },
    "HTTP 500 with an HTML page",
  ),
  onPrimary(
    "http-503",
    {
      kind: "http",
      status: 503,
      body: "Service Unavailable",
      headers: { "content-type": "text/plain" },
    },
    "HTTP 503 Service Unavailable",
  ),
  ...[520, 521, 522, 523, 524].map((code) =>
    onPrimary(
      `cloudflare-${code}`,
      { kind: "http", status: code, body: CLOUDFLARE_PAGE(code), headers: HTML },
      `HTTP ${code} Cloudflare HTML error page`,
      code === 522 ? { quick: true } : {},
    ),
  ),
  onPrimary(
    "rpc-32429",
    {
      kind: "jsonrpc_error",
      code: -32429,
      message: "Your app has exceeded its compute units per second capacity",
    },
    "JSON-RPC error -32429 (compute units capacity) in a 200 answer",
  ),
  onPrimary(
    "rpc-32005",
    {
      kind: "jsonrpc_error",
      code: -32005,
      message: "daily request count exceeded, request rate limited",
    },
    "JSON-RPC error -32005 (rate limited) in a 200 answer",
  ),
  onPrimary(
    "erpc-nested",
    { kind: "jsonrpc_error", ...ERPC_NESTED },
    "eRPC -32603 whose data.cause chain ends in capacity-exceeded and timeout leaves",
    { quick: true },
  ),
  onPrimary(
    "truncate",
    { kind: "truncate" },
    "the real answer with its full Content-Length, but only the first half of the body, then the connection closes",
  ),
  onPrimary(
    "truncated-json",
    {
      kind: "http",
      status: 200,
      body: '{"jsonrpc":"2.0","id":1,"result":{"number":"0x1b4","hash":"0x8e38b4dbf6b11fcc3b9dee84fb79',
      headers: { "content-type": "application/json" },
    },
    "HTTP 200, complete framing, a JSON body cut off mid-object",
  ),
  onPrimary("malformed", { kind: "malformed" }, "HTTP 200 with a body that is not JSON"),
  onPrimary(
    "text-result",
    { kind: "result", value: "You've been rate limited, please slow down" },
    'a text string in `result` ("You\'ve been rate limited, …") for every call',
    { quick: true },
  ),
  onPrimary(
    "stuck-head",
    { kind: "stuck_head" },
    "the head (eth_blockNumber, latest block) frozen at the block of the fault time",
    { quick: true },
  ),
  laggingHead,
  onPrimary(
    "wrong-chain",
    { kind: "chain_id", id: 1 },
    "eth_chainId answers 1 (mainnet) instead of 31337",
    {
      quick: true,
      sentinel: "chainId",
    },
  ),
  flapping,
  allDown,
];
