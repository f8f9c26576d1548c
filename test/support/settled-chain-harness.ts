import type { ChainHead } from "../../functions/core/chain/chain-head.ts";
import type { GatewayDeps } from "../../functions/core/request/gateway.ts";
import { everyoneInQuorum, gatewayHarness, type HarnessProviders } from "./gateway-harness.ts";
import { MemoryTransactionLedger } from "./memory-ledger.ts";

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

export function settledChainHarness(providers: HarnessProviders, deps: Partial<GatewayDeps> = {}) {
  const harness = gatewayHarness({
    providers,
    network: { block_time_seconds: 12 },
    now: SETTLED_NOW,
    deps: { ledger: new MemoryTransactionLedger(), ...deps },
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
