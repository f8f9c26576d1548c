import { describe, expect, it } from "vitest";
import { hedgeTimer, wait } from "../../functions/adapters/wait.ts";
import type { ChainHead } from "../../functions/core/chain/chain-head.ts";
import { type ConfigInput, configSchema } from "../../functions/core/config/config-schema.ts";
import { buildModel } from "../../functions/core/config/network-model.ts";
import { HEALTHY } from "../../functions/core/health/health.ts";
import type { Telemetry } from "../../functions/core/ports.ts";
import { Gateway } from "../../functions/core/request/gateway.ts";
import { whyNotCandidate } from "../../functions/core/routing/selection.ts";
import { StateCache } from "../../functions/core/routing/state-cache.ts";
import { GuardCounts } from "../../functions/core/status/guards.ts";
import { gatewayHarness, type HarnessNetwork } from "../support/gateway-harness.ts";
import { MemoryStateStore } from "../support/memory-state-store.ts";
import { resultFor, ScriptedUpstream } from "../support/scripted-upstream.ts";

/**
 * Hostile callers against the short path of a lone `eth_blockNumber` the served head answers:
 * every request here gets what the full pipeline gave it before the short path existed (the
 * same expectations hold on the pipeline without it), and a served-head answer never calls a
 * provider.
 */

const NOW = 1_800_000_000_000;
/** head_cache_ms 250: a publication counts once 250 + 250 ms old. */
const DELAY = 500;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const P3 = "http://p3.test/";

type Providers = ConfigInput["networks"][string]["providers"];

const three: Providers = [
  { name: "p1", url: P1, priority: 3 },
  { name: "p2", url: P2, priority: 2 },
  { name: "p3", url: P3, priority: 1 },
];

const recentHead = (): ChainHead => ({
  latest: { number: 100, hash: null },
  safe: null,
  finalized: null,
  served: { block: 102, at: NOW - DELAY },
  previousServed: null,
  updatedAt: NOW - 1_000,
  reorgSeenAt: 0,
});

function harness(providers: Providers, overrides: HarnessNetwork = {}) {
  const counts: string[] = [];
  const telemetry: Telemetry = {
    log: () => undefined,
    count: (name) => counts.push(name),
    measure: () => undefined,
  };
  // The clock stands still: answers take no time here.
  const { gateway, store, upstream, network, rpc } = gatewayHarness({
    providers,
    network: overrides,
    now: NOW,
    upstream: () => new ScriptedUpstream(() => undefined),
    deps: { telemetry },
  });
  for (const url of [P1, P2, P3])
    upstream.script(
      url,
      resultFor(() => "0x1"),
    );
  store.setHead("net", recentHead());
  const upstreamCalls = () => [P1, P2, P3].map((url) => upstream.callsTo(url));
  return { gateway, store, network, upstreamCalls, counts, rpc };
}

const served = (rawId: string) => `{"jsonrpc":"2.0","id":${rawId},"result":"0x66"}`;

describe("the short path of a lone eth_blockNumber, attacked by its caller", () => {
  it.each([
    ["a string id with escapes", '"a\\"b\\\\\\u00e9\\n"'],
    ["a number id beyond 2^53, as written", "123456789012345678901234567890"],
    ["a number id with an exponent JavaScript cannot hold", "1e400"],
    ["a fractional id written with a trailing zero", "1.50"],
    ["minus zero", "-0"],
    ["an explicit null id", "null"],
    ["an empty string id", '""'],
  ])("%s is echoed byte for byte", async (_name, rawId) => {
    const h = harness(three);
    const response = await h.rpc(`{"jsonrpc":"2.0","id":${rawId},"method":"eth_blockNumber"}`);
    expect(response).toMatchObject({ status: 200, body: served(rawId) });
    expect(h.upstreamCalls()).toEqual([0, 0, 0]);
  });

  it.each([
    ["params absent", '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}'],
    ["params an object", '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":{"a":1}}'],
    ["params with junk", '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[1,"x"]}'],
    [
      "params null (no params, as nodes read it)",
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":null}',
    ],
    [
      "members in another order, spaces around",
      ' { "method" : "eth_blockNumber" , "id" : 1, "jsonrpc" : "2.0" } ',
    ],
  ])("%s: the served head answers", async (_name, body) => {
    const h = harness(three);
    expect(await h.rpc(body)).toMatchObject({ status: 200, body: served("1") });
    expect(h.upstreamCalls()).toEqual([0, 0, 0]);
  });

  it.each([
    [
      "an object id",
      '{"jsonrpc":"2.0","id":{"a":1},"method":"eth_blockNumber"}',
      400,
      "id must be",
    ],
    ["an array id", '{"jsonrpc":"2.0","id":[1],"method":"eth_blockNumber"}', 400, "id must be"],
    ["a boolean id", '{"jsonrpc":"2.0","id":true,"method":"eth_blockNumber"}', 400, "id must be"],
    ["a duplicate id", '{"jsonrpc":"2.0","id":1,"id":2,"method":"eth_blockNumber"}', 400, "twice"],
    [
      "a duplicate method hiding another one",
      '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","method":"eth_blockNumber"}',
      400,
      "twice",
    ],
    ["jsonrpc 1.0", '{"jsonrpc":"1.0","id":1,"method":"eth_blockNumber"}', 400, "jsonrpc must"],
    [
      "params a string",
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":"x"}',
      400,
      "params must",
    ],
    [
      "params a number",
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":7}',
      400,
      "params must",
    ],
    ["no jsonrpc", '{"id":1,"method":"eth_blockNumber"}', 400, '"jsonrpc": "2.0" is missing'],
    [
      "a lone surrogate",
      '{"jsonrpc":"2.0","id":"\\ud800","method":"eth_blockNumber"}',
      400,
      "surrogate",
    ],
    ["bad JSON", '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"', 400, "not valid JSON"],
    ["a bare string", '"eth_blockNumber"', 400, "expected a JSON-RPC object"],
  ])("%s is refused, no provider called", async (_name, body, status, words) => {
    const h = harness(three);
    const response = await h.rpc(body);
    expect(response.status).toBe(status);
    expect(JSON.parse(response.body).error.message).toContain(words);
    expect(h.upstreamCalls()).toEqual([0, 0, 0]);
  });

  it("a method name that only looks like it (other case, padding) is not the short path's: it goes to a provider", async () => {
    const h = harness(three);
    const response = await h.rpc('{"jsonrpc":"2.0","id":1,"method":"ETH_BLOCKNUMBER"}');
    expect(JSON.parse(response.body).result).toBe("0x1");
    expect(h.upstreamCalls()).toEqual([1, 0, 0]);
  });

  it("a batch of one is a batch: an array answer, the served head still answering", async () => {
    const h = harness(three);
    const response = await h.rpc('[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}]');
    expect(response).toMatchObject({ status: 200, body: `[${served("1")}]` });
  });

  it("a notification: 204, no body, counted as a request", async () => {
    const h = harness(three);
    const response = await h.rpc('{"jsonrpc":"2.0","method":"eth_blockNumber"}');
    expect(response).toMatchObject({ status: 204, body: "", cacheClass: "realtime" });
    expect(h.counts).toEqual(["requests"]);
  });

  it("an unknown network is 404 before any short path", async () => {
    const h = harness(three);
    const response = await h.gateway.handleRpc("__proto__", '{"id":1,"method":"eth_blockNumber"}');
    expect(response.status).toBe(404);
  });

  it("without diagnostic headers, none; the cache class stays realtime with the cache off", async () => {
    const h = harness(three, { diagnostic_headers: false, cache: false });
    const response = await h.rpc('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}');
    expect(response).toMatchObject({
      status: 200,
      headers: { "content-type": "application/json" },
      cacheClass: "realtime",
    });
    expect(Object.keys(response.headers)).toEqual(["content-type"]);
  });
});

describe("the short path of a lone eth_blockNumber, against the method rules", () => {
  it.each([
    ["methods_allow without it", { methods_allow: ["eth_call"] }],
    ["methods_deny naming it by a wildcard", { methods_deny: ["eth_block*"] }],
    ["methods_deny of everything", { methods_deny: ["*"] }],
  ])("%s: refused as not allowed, no provider called", async (_name, overrides) => {
    const h = harness(three, overrides);
    const response = await h.rpc('{"jsonrpc":"2.0","id":9,"method":"eth_blockNumber"}');
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: "2.0",
      id: 9,
      error: { code: -32601, message: "method eth_blockNumber is not allowed by this gateway" },
    });
    expect(h.upstreamCalls()).toEqual([0, 0, 0]);
  });

  it("every provider's methods_allow leaves it out: not served", async () => {
    const h = harness(three.map((provider) => ({ ...provider, methods_allow: ["eth_call"] })));
    const response = await h.rpc('{"jsonrpc":"2.0","id":9,"method":"eth_blockNumber"}');
    expect(JSON.parse(response.body).error.message).toBe(
      "method eth_blockNumber is not served by any provider of net",
    );
  });

  it.each([
    [
      "blacklisted",
      (h: ReturnType<typeof harness>) =>
        h.store.setHealth("net", "p3", {
          ...HEALTHY,
          blacklistedUntil: NOW + 60_000,
          reason: "timeout",
        }),
      "blacklisted",
    ],
    [
      "out of quorum",
      (h: ReturnType<typeof harness>) =>
        h.store.setQuorum("net", {
          head: 100,
          headTimestamp: NOW / 1000 - 1,
          members: ["p1", "p2"],
          excluded: { p3: "behind" },
          heads: {},
          computedAt: NOW - 1_000,
        }),
      "out_of_quorum",
    ],
  ])(
    "the only provider that serves it is %s: the served head still answers (it would be an emergency attempt), no provider called",
    async (_name, setUp, why) => {
      const h = harness([
        { name: "p1", url: P1, methods_deny: ["eth_blockNumber"] },
        { name: "p2", url: P2, methods_deny: ["eth_blockNumber"] },
        { name: "p3", url: P3 },
      ]);
      setUp(h);
      const state = await h.store.readNetwork("net");
      const context = {
        network: h.network,
        state,
        now: NOW,
        checkIntervalSeconds: 15,
        demoted: new Set<string>(),
      };
      const p3 = h.network.providers.find((provider) => provider.name === "p3");
      if (p3 === undefined) throw new Error("no p3");
      expect(whyNotCandidate(p3, "eth_blockNumber", context)).toBe(why);
      const response = await h.rpc('{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber"}');
      expect(response).toMatchObject({ status: 200, body: served("5") });
      expect(h.upstreamCalls()).toEqual([0, 0, 0]);
    },
  );
});

describe("the short path across containers whose copies of the state differ in age", () => {
  it("two containers over one store, a chain growing a block a second, callers alternating every 37 ms for 30 s: the number never goes back nor passes the chain, and the short path answers part of them", async () => {
    let now = NOW;
    const clock = () => now;
    const store = new MemoryStateStore(clock);
    store.setHead("net", {
      ...recentHead(),
      served: { block: 100, at: NOW - 10_000 },
      updatedAt: NOW,
    });
    const chainHead = () => 100 + Math.floor((now - NOW) / 1000);
    const upstream = new ScriptedUpstream(() => undefined);
    // The served head's poll asks for the latest block (docs/behaviour.md §10.2).
    for (const url of [P1, P2, P3])
      upstream.script(
        url,
        resultFor((method) =>
          method === "eth_getBlockByNumber"
            ? { number: `0x${chainHead().toString(16)}`, hash: `0x${"ab".repeat(32)}` }
            : `0x${chainHead().toString(16)}`,
        ),
      );
    const telemetry: Telemetry = {
      log: () => undefined,
      count: () => undefined,
      measure: () => undefined,
    };
    const model = buildModel(
      configSchema.parse({
        networks: { net: { chain_id: 1, block_time_seconds: 1, providers: three } },
      }),
      (url) => url,
    );
    const container = () =>
      new Gateway({
        model: () => model,
        upstream,
        store,
        cache: new StateCache({
          store,
          clock,
          telemetry,
          ttlMs: () => 1000,
          headTtlMs: () => model.networks.get("net")?.settings.head_cache_ms ?? 250,
        }),
        clock,
        random: () => 0.5,
        wait,
        hedgeTimer,
        telemetry,
        scrub: (text) => text,
        scrubAnswer: (text) => text,
        guards: new GuardCounts(telemetry),
      });
    const containers = [container(), container()];
    let highest = 0;
    let backwards = 0;
    let beyond = 0;
    let short = 0;
    let calls = 0;
    for (let step = 0; now < NOW + 30_000; step++) {
      now += 37;
      // Containers take turns unevenly, so their copies of the state are of different ages.
      const gateway = containers[step % 3 === 0 ? 1 : 0];
      const response = await gateway?.handleRpc(
        "net",
        `{"jsonrpc":"2.0","id":${step},"method":"eth_blockNumber"}`,
      );
      await new Promise((resolve) => setImmediate(resolve));
      const number = Number.parseInt(JSON.parse(response?.body ?? "{}").result, 16);
      calls++;
      if (response?.headers["x-gateway-attempts"] === "0") short++;
      if (number < highest) backwards++;
      if (number > chainHead()) beyond++;
      highest = Math.max(highest, number);
    }
    expect({ backwards, beyond }).toEqual({ backwards: 0, beyond: 0 });
    expect(highest).toBeGreaterThan(120);
    expect(short / calls).toBeGreaterThan(0.1);
  });
});
