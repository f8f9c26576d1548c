import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createUpstream,
  type UpstreamClient,
} from "../../../functions/adapters/upstream/upstream.ts";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, type Provider } from "../../../functions/core/config/network-model.ts";
import { applyProbeFail, cooldownPolicy, HEALTHY } from "../../../functions/core/health/health.ts";
import { chainIdOf, latestBlock } from "../../../functions/core/monitor/upstream-calls.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type Fault, type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";

/**
 * The monitor judges its checks and probes with the live traffic's classifier
 * (docs/behaviour.md §4): a rate-limited provider is reported as rate-limited, not dead, and a
 * failed probe blacklists it for what its failure was. Real anvil behind a fault shim, the
 * real upstream client.
 */

let node: AnvilNode;
let shim: FaultShim;
let upstream: UpstreamClient;
let provider: Provider;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  shim = await startFaultShim(node.url);
  upstream = createUpstream();
  const model = buildModel(
    configSchema.parse({
      networks: { devnet: { chain_id: 31337, providers: [{ url: shim.url }] } },
    }),
    (url) => url,
  );
  const first = model.networks.get("devnet")?.providers[0];
  if (first === undefined) throw new Error("no provider");
  provider = first;
}, 60_000);

afterAll(async () => {
  await upstream?.close();
  await shim?.close();
  await node?.stop();
});

const options = () => ({
  upstream,
  timeoutMs: 500,
  maxResponseBytes: 1_000_000,
  scrub: (text: string) => text,
});

describe("the monitor's checks, judged as live traffic is", () => {
  it.each<[string, Fault, { error: string; reason?: string; retryAfter?: string }]>([
    [
      "regression: a 429 was reported as a dead provider ('HTTP 429')",
      { kind: "http", status: 429, body: "Too Many Requests", headers: { "retry-after": "5" } },
      { error: "rate_limit: HTTP 429", reason: "rate_limit", retryAfter: "5" },
    ],
    [
      "a Cloudflare 522 page",
      { kind: "http", status: 522, body: "<html>522</html>" },
      { error: "http: HTTP 522", reason: "timeout" },
    ],
    [
      "a rate limit inside a JSON-RPC error",
      { kind: "jsonrpc_error", code: -32005, message: "daily request count exceeded" },
      { error: expect.stringMatching(/^rate_limit: /) as unknown as string, reason: "quota" },
    ],
    [
      "null for the latest block",
      { kind: "result", value: null },
      {
        error: "no_result: eth_getBlockByNumber returned no result where a value is required",
        reason: "transient",
      },
    ],
    [
      "a hang",
      { kind: "hang" },
      { error: expect.stringMatching(/^timeout: /) as unknown as string, reason: "timeout" },
    ],
  ])("%s", async (_name, fault, expected) => {
    await shim.setFault(fault);
    expect(await latestBlock(options(), provider)).toEqual(expected);
  });

  it("a healthy provider's head and chain id", async () => {
    await shim.setFault(null);
    const head = await latestBlock(options(), provider);
    expect(head).toMatchObject({ number: expect.any(Number), timestamp: expect.any(Number) });
    expect(await chainIdOf(options(), provider)).toBe(31337);
  });
});

describe("a failed probe blacklists for what its failure was", () => {
  const policy = cooldownPolicy(
    configSchema.parse({ networks: { a: { chain_id: 1, providers: [{ url: "http://x.test" }] } } }),
  );
  const expired = {
    ...HEALTHY,
    strikes: 1,
    reason: "timeout" as const,
    probeGated: true,
    version: 3,
  };
  const record = { at: 0, result: "fail" as const, detail: "no answer: rate_limit: HTTP 429" };

  it.each([
    ["rate_limit", "rate_limit"],
    [undefined, "timeout"],
  ] as const)("judged %s → blacklisted for %s", (failedWith, reason) => {
    expect(applyProbeFail(expired, record, 0, policy, failedWith).reason).toBe(reason);
  });
});
