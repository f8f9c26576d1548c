import { describe, expect, it } from "vitest";
import { type ConfigInput, configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, type Network } from "../../../functions/core/config/network-model.ts";
import { HEALTHY } from "../../../functions/core/health/health.ts";
import type { HistoryProbe, ProviderHistory } from "../../../functions/core/history/bounds.ts";
import { historyNeedOf } from "../../../functions/core/history/resources.ts";
import { unavailableEverywhere } from "../../../functions/core/history/unavailable.ts";
import {
  EMPTY_NETWORK_STATE,
  type NetworkState,
} from "../../../functions/core/routing/network-state.ts";
import {
  attemptOrder,
  explainRouting,
  type SelectionContext,
} from "../../../functions/core/routing/selection.ts";

/**
 * History-aware routing (docs/behaviour.md §16.2): the bound in force per provider and resource
 * (config, then learned, then probed), which call needs what, and the `history` slot of the
 * routing explanation.
 */

const NOW = 1_800_000_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const HEAD = 10_000;

function network(
  providers: ConfigInput["networks"][string]["providers"],
  extra: Partial<ConfigInput["networks"][string]> = {},
): Network {
  const config = configSchema.parse({ networks: { eth: { chain_id: 1, providers, ...extra } } });
  const built = buildModel(config, (url) => url).networks.get("eth");
  if (!built) throw new Error("no network");
  return built;
}

function context(
  net: Network,
  history: Record<string, ProviderHistory> = {},
  extra: Partial<NetworkState> = {},
): SelectionContext {
  const state: NetworkState = {
    ...EMPTY_NETWORK_STATE,
    quorum: {
      head: HEAD,
      headTimestamp: NOW / 1000,
      members: net.providers.map((provider) => provider.name),
      excluded: {},
      heads: {},
      computedAt: NOW,
    },
    history: new Map(Object.entries(history)),
    ...extra,
  };
  return { network: net, state, now: NOW, checkIntervalSeconds: 15, demoted: new Set() };
}

const learned = (from: number, until = NOW + 60_000): ProviderHistory => ({
  learned: new Map([["state", { from, refusedAt: from - 1, at: NOW - 1000, until }]]),
  probe: null,
});

const probed = (resources: HistoryProbe["resources"], at = NOW - 1000): ProviderHistory => ({
  learned: new Map(),
  probe: { at, capabilities: "supported", capabilitiesAt: at, resources, detail: "" },
});

const balance = (block: string) => historyNeedOf("eth_getBalance", ["0x00", block]);

function slots(net: Network, ctx: SelectionContext, block: string) {
  return explainRouting(net.providers, "eth_getBalance", ctx, "", null, null, balance(block)).map(
    (entry) => `${entry.provider.name}:${entry.slot}`,
  );
}

describe("what a call needs (docs/behaviour.md §16.2)", () => {
  it.each([
    ["eth_getBalance", ["0x00", "0x64"], { resource: "state", block: 100 }],
    ["eth_call", [{}, { blockNumber: "0x64" }], { resource: "state", block: 100 }],
    ["eth_getBalance", ["0x00", "earliest"], { resource: "state", block: 0 }],
    // regression: EIP-1898's {blockNumber: "earliest"} walked every full node each time.
    ["eth_getBalance", ["0x00", { blockNumber: "earliest" }], { resource: "state", block: 0 }],
    ["eth_call", [{}, { blockNumber: "latest" }], null],
    ["eth_getBalance", ["0x00", "latest"], null],
    ["eth_getProof", ["0x00", [], "0x64"], { resource: "proofs", block: 100 }],
    ["eth_getBlockByNumber", ["0x64", false], { resource: "bodies", block: 100 }],
    ["eth_getBlockReceipts", ["0x64"], { resource: "receipts", block: 100 }],
    ["eth_getLogs", [{ fromBlock: "0x64", toBlock: "0xc8" }], { resource: "logs", block: 100 }],
    // A trace re-executes a block on its parent's state.
    ["trace_block", ["0x64"], { resource: "state", block: 99 }],
    ["debug_traceBlockByNumber", ["0x0"], { resource: "state", block: 0 }],
    ["eth_getHeaderByNumber", ["0x64"], null],
    ["eth_getTransactionReceipt", [`0x${"ab".repeat(32)}`], null],
    ["eth_blockNumber", [], null],
  ])("%s %j → %j", (method, params, need) => {
    expect(historyNeedOf(method, params)).toEqual(need);
  });

  it("a block named by hash needs the number the gateway knows for it, else nothing", () => {
    const hash = `0x${"cd".repeat(32)}`;
    const params = [{ to: "0x00" }, { blockHash: hash }];
    expect(historyNeedOf("eth_call", params)).toBeNull();
    expect(historyNeedOf("eth_call", params, (h) => (h === hash ? 42 : null))).toEqual({
      resource: "state",
      block: 42,
    });
  });
});

describe("the bound in force: config, then learned, then probed (docs/behaviour.md §16.1)", () => {
  const net = network([
    { name: "archive", url: "http://a.test", archive: true },
    { name: "window", url: "http://w.test", history: { state_blocks: 128 } },
    { name: "from", url: "http://f.test", history: { state_from: 500, logs_blocks: 1000 } },
    { name: "open", url: "http://o.test" },
  ]);

  it("archive keeps all; a window moves with the head; unknown keeps all", () => {
    expect(slots(net, context(net), "0x0")).toEqual([
      "archive:candidate",
      "open:candidate",
      "window:history",
      "from:history",
    ]);
    expect(slots(net, context(net), `0x${(HEAD - 127).toString(16)}`)).toEqual([
      "archive:candidate",
      "window:candidate",
      "from:candidate",
      "open:candidate",
    ]);
    expect(slots(net, context(net), `0x${(HEAD - 128).toString(16)}`)).toContain("window:history");
  });

  it("a learned bound is in force until it expires; over the config it only makes the claim doubtful", () => {
    const ctx = context(net, { open: learned(2000), archive: learned(9000) });
    expect(slots(net, ctx, "0x64")).toEqual([
      "archive:pruned",
      "window:history",
      "from:history",
      "open:history",
    ]);
    const expired = context(net, { open: learned(2000, NOW - 1) });
    expect(slots(net, expired, "0x64")).toContain("open:candidate");
  });

  it("a refusal naming no oldest block leaves the blocks above it in doubt, up to the recent ones", () => {
    const ctx = context(net, { open: learned(2000) });
    const at = (block: number) =>
      slots(net, ctx, hex(block)).find((slot) => slot.startsWith("open"));
    expect(at(1999)).toBe("open:history");
    expect(at(2000)).toBe("open:pruned");
    expect(at(HEAD - 32)).toBe("open:pruned");
    expect(at(HEAD - 31)).toBe("open:candidate");
    const entry = explainRouting(
      net.providers,
      "eth_getBalance",
      ctx,
      "",
      null,
      null,
      balance(hex(5000)),
    ).find((each) => each.provider.name === "open");
    expect(entry?.reason).toMatch(
      /^likely does not keep state at block 5000: refused state at block 1999 .*: likely keeps only recent state, its oldest block unknown; tried after those that may$/,
    );
  });

  it("a refusal naming its oldest block, or a later probe's proof, leaves nothing in doubt", () => {
    const named: ProviderHistory = {
      learned: new Map([
        ["state", { from: 936, refusedAt: 5, at: NOW - 1000, until: NOW + 60_000 }],
      ]),
      probe: null,
    };
    expect(slots(net, context(net, { open: named }), hex(936))).toContain("open:candidate");
    expect(slots(net, context(net, { open: named }), hex(935))).toContain("open:history");
    const proved: ProviderHistory = {
      ...probed({ state: { from: 2500, window: null, how: "balance" } }, NOW - 500),
      learned: learned(2000).learned,
    };
    expect(slots(net, context(net, { open: proved }), hex(2500))).toContain("open:candidate");
    expect(slots(net, context(net, { open: proved }), hex(2499))).toContain("open:pruned");
    // A proof older than the lesson proves nothing about it.
    const older: ProviderHistory = {
      ...probed({ state: { from: 2500, window: null, how: "balance" } }, NOW - 5000),
      learned: learned(2000).learned,
    };
    expect(slots(net, context(net, { open: older }), hex(2500))).toContain("open:pruned");
  });

  it("regression: a provider naming an oldest block among the recent ones (or claiming so in eth_capabilities) left itself out of recent calls unasked; the recent blocks are always asked", () => {
    const bogus: ProviderHistory = {
      learned: new Map([
        ["state", { from: HEAD - 1, refusedAt: 500, at: NOW - 1000, until: NOW + 60_000 }],
      ]),
      probe: null,
    };
    expect(slots(net, context(net, { open: bogus }), hex(HEAD - 20))).toContain("open:candidate");
    expect(slots(net, context(net, { open: bogus }), hex(HEAD - 40))).toContain("open:history");
    const disabled = probed({ state: { from: null, window: null, how: "capabilities" } });
    expect(slots(net, context(net, { open: disabled }), hex(HEAD))).toContain("open:candidate");
    expect(slots(net, context(net, { open: disabled }), hex(HEAD - 40))).toContain("open:history");
  });

  it("a state read served is a proof, not a claim: it leaves nothing out", () => {
    const served = probed({ state: { from: 2500, window: null, how: "balance" } });
    expect(slots(net, context(net, { open: served }), hex(5))).toContain("open:candidate");
  });

  it("learned beats probed: a provider whose eth_capabilities claims archive but refused is left out", () => {
    const liar: ProviderHistory = {
      ...probed({ state: { from: 0, window: null, how: "capabilities" } }),
      learned: learned(5000).learned,
    };
    expect(slots(net, context(net, { open: liar }), "0x64")).toContain("open:history");
  });

  it("a probe stands for three probe intervals, and not at all with probes off", () => {
    const claim = { state: { from: 3000, window: null, how: "capabilities" as const } };
    expect(slots(net, context(net, { open: probed(claim) }), "0x64")).toContain("open:history");
    const old = probed(claim, NOW - 3 * 300_000 - 1);
    expect(slots(net, context(net, { open: old }), "0x64")).toContain("open:candidate");
    const off = network([{ name: "open", url: "http://o.test" }], {
      history_bounds: { probe_seconds: 0 },
    });
    expect(slots(off, context(off, { open: probed(claim) }), "0x64")).toEqual(["open:candidate"]);
  });

  it("a probed window and a disabled resource", () => {
    const window = probed({ state: { from: 0, window: 64, how: "capabilities" } });
    expect(slots(net, context(net, { open: window }), `0x${(HEAD - 100).toString(16)}`)).toContain(
      "open:history",
    );
    const none = probed({ logs: { from: null, window: null, how: "capabilities" } });
    // Older than the recent blocks, which every provider is asked for whatever it claims.
    const logs = historyNeedOf("eth_getLogs", [{ fromBlock: "0x2000", toBlock: "0x2010" }]);
    const entry = explainRouting(
      net.providers,
      "eth_getLogs",
      context(net, { open: none }),
      "",
      null,
      null,
      logs,
    ).find((each) => each.provider.name === "open");
    expect(entry?.slot).toBe("history");
    expect(entry?.reason).toContain(`keeps it from block ${HEAD - 31}, probed: serves no logs`);
  });
});

describe("proofs need the state they prove", () => {
  it("regression: a full node that refused state was asked for a proof at an older block (and refused it); the state's bound binds proofs too", () => {
    const net = network([
      { name: "full", url: "http://f.test", history: { state_blocks: 64 } },
      { name: "open", url: "http://o.test" },
    ]);
    const proof = (block: number) =>
      explainRouting(
        net.providers,
        "eth_getProof",
        context(net, { open: learned(2000) }),
        "",
        null,
        null,
        historyNeedOf("eth_getProof", ["0x00", [], hex(block)]),
      ).map((entry) => `${entry.provider.name}:${entry.slot}`);
    expect(proof(100)).toEqual(["full:history", "open:history"]);
    expect(proof(5000)).toEqual(["open:pruned", "full:history"]);
    expect(proof(HEAD)).toEqual(["full:candidate", "open:candidate"]);
  });
});

describe("the history slot in the routing explanation (docs/behaviour.md §3.7, §16.2)", () => {
  const net = network([
    { name: "full1", url: "http://f1.test", priority: 2, history: { state_blocks: 64 } },
    { name: "full2", url: "http://f2.test", priority: 2, history: { state_blocks: 64 } },
    { name: "archive", url: "http://a.test", backup: true, archive: true },
  ]);

  it("names the bound and its source; the backup alone keeping the block serves this call", () => {
    const entries = explainRouting(
      net.providers,
      "eth_getBalance",
      context(net),
      "",
      null,
      null,
      balance("0x64"),
    );
    expect(entries.map((entry) => entry.slot)).toEqual(["candidate", "history", "history"]);
    expect(entries[0]?.reason).toMatch(
      /^backup in use for this call: no primary candidate keeps block 100/,
    );
    expect(entries[1]?.reason).toBe(
      `does not keep state at block 100: keeps it from block ${HEAD - 63}, config: configured (state_blocks 64)`,
    );
    const order = attemptOrder(
      net.providers,
      "eth_getBalance",
      context(net),
      null,
      null,
      balance("0x64"),
    );
    expect(order.map((slot) => slot.provider.name)).toEqual(["archive"]);
  });

  it("a recent block keeps the primaries first and the backup standing by", () => {
    const entries = explainRouting(
      net.providers,
      "eth_getBalance",
      context(net),
      "",
      null,
      null,
      balance(`0x${HEAD.toString(16)}`),
    );
    expect(entries.map((entry) => `${entry.provider.name}:${entry.slot}`)).toEqual([
      "full1:candidate",
      "full2:candidate",
      "archive:backup",
    ]);
  });

  it("a blacklisted archive that keeps the block is still tried (emergency); a full node is not", () => {
    const ctx = context(
      net,
      {},
      {
        providers: new Map([
          [
            "archive",
            { ...HEALTHY, strikes: 1, blacklistedUntil: NOW + 60_000, reason: "timeout" },
          ],
        ]),
      },
    );
    const order = attemptOrder(net.providers, "eth_getBalance", ctx, null, null, balance("0x64"));
    expect(order.map((slot) => `${slot.provider.name}${slot.emergency ? "!" : ""}`)).toEqual([
      "archive!",
    ]);
  });

  it("nobody keeps the block: the clear error, with the oldest block kept", () => {
    const fulls = network([
      { name: "full1", url: "http://f1.test", history: { state_blocks: 64 } },
      { name: "full2", url: "http://f2.test", history: { state_from: 9000 } },
    ]);
    const need = balance("0x64");
    if (need === null) throw new Error("no need");
    expect(
      attemptOrder(fulls.providers, "eth_getBalance", context(fulls), null, null, need),
    ).toEqual([]);
    const text = unavailableEverywhere("7", fulls, "eth_getBalance", need, context(fulls));
    expect(JSON.parse(text ?? "null")).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32000,
        message: `state at block 0x64 is not available on any provider of eth; the oldest kept is block 0x2328`,
        data: { resource: "state", block: "0x64", oldest_available: "0x2328" },
      },
    });
    // One whose edge is in doubt (a refusal naming no oldest block): the oldest kept is unknown.
    const learning = network([
      { name: "full1", url: "http://f1.test", history: { state_blocks: 64 } },
      { name: "open", url: "http://o.test" },
    ]);
    const doubtful = context(learning, { open: learned(9000) });
    const worded = JSON.parse(
      unavailableEverywhere("7", learning, "eth_getBalance", need, doubtful) ?? "null",
    );
    expect(worded.error.message).toBe(
      "state at block 0x64 is not available on any provider of eth",
    );
    expect(worded.error.data.oldest_available).toBeNull();
    // A provider that may keep it (nothing known): no such error.
    const mixed = network([
      { name: "full1", url: "http://f1.test", history: { state_blocks: 64 } },
      { name: "open", url: "http://o.test" },
    ]);
    expect(unavailableEverywhere("7", mixed, "eth_getBalance", need, context(mixed))).toBeNull();
  });
});
