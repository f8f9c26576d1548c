import { describe, expect, it } from "vitest";
import { type ConfigInput, configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, type Network } from "../../../functions/core/config/network-model.ts";
import { capabilitiesOf, runHistoryProbes } from "../../../functions/core/monitor/history-probe.ts";
import type { Telemetry } from "../../../functions/core/ports.ts";
import { boundOf } from "../../../functions/core/routing/history-routing.ts";
import type { NetworkState } from "../../../functions/core/routing/network-state.ts";
import { MemoryStateStore } from "../../support/memory-state-store.ts";
import { answer, ScriptedUpstream, type SentCall } from "../../support/scripted-upstream.ts";

/**
 * The monitor's history probe (docs/behaviour.md §16.3): when it runs, what it asks, what it
 * learns and forgets, and what it makes of an `eth_capabilities` answer, against scripted
 * providers and the in-memory store.
 */

const NOW = 1_800_000_000_000;
const HEAD = 100_000;
const URL = "http://node.test/";
const hex = (n: number) => `0x${n.toString(16)}`;

function network(provider: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const input: ConfigInput = {
    networks: { eth: { chain_id: 1, providers: [{ name: "p", url: URL, ...provider }], ...extra } },
  };
  const built = buildModel(configSchema.parse(input), (url) => url).networks.get("eth");
  if (!built) throw new Error("no network");
  return built;
}

const silent: Telemetry = {
  log: () => undefined,
  count: () => undefined,
  measure: () => undefined,
};

/** A node keeping state from `edge`; `capabilities`: its eth_capabilities result, or -32601. */
function node(
  edge: number,
  capabilities: unknown = null,
  refusal = "missing trie node 1a (path )",
) {
  return (request: { body: string }) => {
    const call = JSON.parse(request.body) as SentCall;
    const reply = (member: object) =>
      answer(JSON.stringify({ jsonrpc: "2.0", id: call.id, ...member }));
    if (call.method === "eth_capabilities") {
      return capabilities === null
        ? reply({ error: { code: -32601, message: "the method eth_capabilities does not exist" } })
        : reply({ result: capabilities });
    }
    const block = Number(call.params[1]);
    return block >= edge
      ? reply({ result: "0x0" })
      : reply({ error: { code: -32000, message: refusal } });
  };
}

async function probe(
  net: Network,
  script: ReturnType<typeof node>,
  store = new MemoryStateStore(() => NOW),
  at = NOW,
) {
  const upstream = new ScriptedUpstream().script(URL, script);
  const before = await store.readNetwork("eth");
  const state: NetworkState = {
    ...before,
    quorum: {
      head: HEAD,
      headTimestamp: at / 1000,
      members: ["p"],
      excluded: {},
      heads: {},
      computedAt: at,
    },
  };
  await runHistoryProbes(
    { upstream, store, clock: () => at, telemetry: silent, scrub: (text) => text },
    net,
    state,
    15,
  );
  const after = await store.readNetwork("eth");
  const methods = (upstream.calls.get(URL) ?? []).map((request) => {
    const call = JSON.parse(request.body) as SentCall;
    return call.method === "eth_getBalance" ? Number(call.params[1]) : call.method;
  });
  const view = { network: net, state: { ...after, quorum: state.quorum }, now: at };
  return { store, methods, after, bound: boundOf(net.providers[0] as never, "state", view) };
}

describe("the history probe (docs/behaviour.md §16.3)", () => {
  it("finds where a pruned node's state starts, and routing leaves out only what it lacks", async () => {
    const { after, bound, methods } = await probe(network(), node(HEAD - 127));
    expect(methods[0]).toBe("eth_capabilities");
    expect(methods.length).toBeLessThanOrEqual(25);
    expect(after.history.get("p")?.learned.get("state")).toMatchObject({
      refusedAt: HEAD - 128,
      from: HEAD - 127,
    });
    expect(bound).toMatchObject({ from: HEAD - 127, likelyFrom: HEAD - 127, source: "learned" });
  });

  it("an archive: one state read, nothing learned", async () => {
    const { after, bound, methods } = await probe(network(), node(0));
    expect(methods).toEqual(["eth_capabilities", 1]);
    expect(after.history.get("p")?.learned.size ?? 0).toBe(0);
    expect(bound).toMatchObject({ from: 0, source: null });
  });

  it("a configured archive that refuses old state: the lie caught, and it is asked last for those blocks", async () => {
    const { bound } = await probe(network({ archive: true }), node(HEAD - 500));
    expect(bound).toMatchObject({ from: 0, source: "config", likelyFrom: HEAD - 500 });
  });

  it("a lesson whose block is served now is forgotten", async () => {
    const store = new MemoryStateStore(() => NOW);
    await store.recordHistoryBound("eth", "p", "state", {
      from: 501,
      refusedAt: 500,
      at: NOW - 1000,
      until: NOW + 3_600_000,
    });
    const { after, methods } = await probe(network(), node(0), store);
    expect(methods).toContain(500);
    expect(after.history.get("p")?.learned.has("state")).toBe(false);
  });

  it("is not due again before probe_seconds; a lesson naming no block makes it due after a minute", async () => {
    const net = network();
    const first = await probe(net, node(HEAD - 127));
    const soon = await probe(net, node(HEAD - 127), first.store, NOW + 30_000);
    expect(soon.methods).toEqual([]);
    await first.store.recordHistoryBound("eth", "p", "state", {
      from: HEAD - 99,
      refusedAt: HEAD - 100,
      at: NOW + 40_000,
      until: NOW + 3_600_000,
    });
    const early = await probe(net, node(HEAD - 99), first.store, NOW + 50_000);
    expect(early.methods).toEqual([]);
    const due = await probe(net, node(HEAD - 99), first.store, NOW + 61_000);
    expect(due.methods.length).toBeGreaterThan(0);
    expect(due.bound).toMatchObject({ from: HEAD - 99, likelyFrom: HEAD - 99 });
  });

  it("probes off (probe_seconds 0): nothing is asked", async () => {
    const off = network({}, { history_bounds: { probe_seconds: 0 } });
    expect((await probe(off, node(5))).methods).toEqual([]);
  });

  it("a node without eth_capabilities is not asked for it again within the hour", async () => {
    const net = network();
    const first = await probe(net, node(0));
    expect(first.after.history.get("p")?.probe?.capabilities).toBe("unsupported");
    const later = await probe(net, node(0), first.store, NOW + 301_000);
    expect(later.methods).toEqual([1]);
  });
});

describe("what an eth_capabilities answer claims", () => {
  const ok = (result: unknown) => capabilitiesOf({ result }, HEAD);

  it("the execution-apis example: every resource from block 0, logs as a window", () => {
    expect(
      ok({
        state: { disabled: false, oldestBlock: "0x0" },
        logs: {
          disabled: false,
          oldestBlock: "0x0",
          deleteStrategy: { type: "window", retentionBlocks: "0x23dbb0" },
        },
        stateproofs: { disabled: true },
      }),
    ).toEqual({
      state: { from: 0, window: null, how: "capabilities" },
      logs: { from: 0, window: 0x23dbb0, how: "capabilities" },
      proofs: { from: null, window: null, how: "capabilities" },
    });
  });

  it.each([
    ["a string", "archive"],
    ["null", null],
    ["an array", [{ state: { oldestBlock: "0x0" } }]],
    ["a block past the head", { state: { oldestBlock: hex(HEAD + 1) } }],
    ["a number, not a quantity", { state: { oldestBlock: 0 } }],
    ["a quantity past 2^53", { state: { oldestBlock: "0xffffffffffffffff" } }],
    ["words", { state: { oldestBlock: "genesis" } }],
    ["no resource it knows", { tx: { oldestBlock: "0x0" } }],
  ])("garbage (%s) claims nothing", (_, result) => {
    expect(ok(result)).toBeNull();
  });

  it("a window of 0 or nonsense is no window", () => {
    expect(
      ok({
        state: {
          oldestBlock: "0x10",
          deleteStrategy: { type: "window", retentionBlocks: "0x0" },
        },
        logs: { oldestBlock: "0x10", deleteStrategy: { type: "window", retentionBlocks: 7 } },
      }),
    ).toEqual({
      state: { from: 16, window: null, how: "capabilities" },
      logs: { from: 16, window: null, how: "capabilities" },
    });
  });
});
