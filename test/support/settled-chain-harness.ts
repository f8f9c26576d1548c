import type { ChainHead } from "../../functions/core/chain/chain-head.ts";
import type { UpstreamRequest } from "../../functions/core/ports.ts";
import type { GatewayDeps } from "../../functions/core/request/gateway.ts";
import { everyoneInQuorum, gatewayHarness, type HarnessProviders } from "./gateway-harness.ts";
import { MemoryTransactionLedger } from "./memory-ledger.ts";
import { answer, resultFor, type SentCall } from "./scripted-upstream.ts";

/**
 * The pipeline on a settled chain, for attacks on what callers are told about known blocks:
 * the served head at 120 (safe 110, finalized 100, 12 s blocks), published 5 s ago and so
 * answered, every provider a quorum member there, and a transaction ledger. Scripted upstream,
 * in-memory state, a test clock.
 */

export const SETTLED_NOW = 1_800_000_000_000;

const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

const SETTLED_HEAD: ChainHead = {
  latest: { number: 120, hash: hash(120) },
  safe: { number: 110, hash: hash(110) },
  finalized: { number: 100, hash: hash(100) },
  served: { block: 120, at: SETTLED_NOW - 5_000 },
  previousServed: null,
  updatedAt: SETTLED_NOW - 5_000,
  reorgSeenAt: 0,
};

export const P1 = "http://p1.test/";
export const P2 = "http://p2.test/";

/** Two providers, `p1` first. */
export const TWO_PROVIDERS: HarnessProviders = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];

/** A node whose answer to each call is `reply(call)`. */
export const replying = (reply: (call: SentCall) => unknown) => resultFor((_, call) => reply(call));

/** A node that answers every call with `error`, as anvil answers a call whose code reverts. */
export const failingWith = (error: unknown) => (request: UpstreamRequest) => {
  const parsed = JSON.parse(request.body) as SentCall | SentCall[];
  const one = (call: SentCall) => JSON.stringify({ jsonrpc: "2.0", id: call.id, error });
  return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
};

/** `outcomes`: each attempt's outcome as request stats get it (failing often reads them). */
export function settledChainHarness(providers: HarnessProviders, deps: Partial<GatewayDeps> = {}) {
  const outcomes: Array<{ provider: string; ok: boolean }> = [];
  const harness = gatewayHarness({
    providers,
    network: { block_time_seconds: 12 },
    now: SETTLED_NOW,
    deps: {
      ledger: new MemoryTransactionLedger(),
      recordOutcome: (_, provider, ok) => outcomes.push({ provider, ok }),
      ...deps,
    },
  });
  const { gateway, store } = harness;
  store.setHead("net", SETTLED_HEAD);
  everyoneInQuorum(store, providers, {
    head: 120,
    timestamp: SETTLED_NOW / 1000 - 5,
    computedAt: SETTLED_NOW - 5_000,
  });
  return {
    ...harness,
    outcomes,
    /** The answer with its body parsed. */
    rpc: async (body: string) => {
      const response = await gateway.handleRpc("net", body);
      return {
        ...response,
        json: JSON.parse(response.body) as { result?: unknown; error?: unknown },
      };
    },
    /** The answer as the caller gets it, unparsed (a JSON.parse would lose ids such as 1e400). */
    gatewayRpc: (body: string) => gateway.handleRpc("net", body),
  };
}
