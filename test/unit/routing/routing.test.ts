import { describe, expect, it } from "vitest";
import { type ConfigInput, configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, type Network } from "../../../functions/core/config/network-model.ts";
import { HEALTHY, type ProviderHealth } from "../../../functions/core/health/health.ts";
import {
  EMPTY_NETWORK_STATE,
  type NetworkState,
} from "../../../functions/core/routing/network-state.ts";
import {
  activeProvider,
  attemptOrder,
  configuredOrder,
  explainRouting,
  type SelectionContext,
} from "../../../functions/core/routing/selection.ts";

/**
 * The routing explanation (docs/behaviour.md §3): one function says, per provider, its slot
 * and why. The attempt order and the active provider derive from it, so they are checked
 * against it here too.
 */

const NOW = 1_800_000_000_000;
const iso = (ms: number) => new Date(ms).toISOString();

function network(providers: ConfigInput["networks"][string]["providers"]): Network {
  const config = configSchema.parse({ networks: { eth: { chain_id: 1, providers } } });
  const built = buildModel(config, (url) => url).networks.get("eth");
  if (!built) throw new Error("no network");
  return built;
}

const net = network([
  { name: "a", url: "http://a.test", priority: 2 },
  { name: "b", url: "http://b.test", priority: 1, priority_match: { eth_getLogs: 9 } },
  { name: "c", url: "http://c.test", priority: 1, methods_deny: ["trace_*"] },
  { name: "bk", url: "http://bk.test", backup: true },
]);

const blacklisted = (reason: ProviderHealth["reason"], until: number): ProviderHealth => ({
  ...HEALTHY,
  strikes: 1,
  reason,
  blacklistedUntil: until,
  probeGated: true,
  version: 1,
});

function state(
  health: Record<string, ProviderHealth> = {},
  extra: Partial<NetworkState> = {},
): NetworkState {
  return { ...EMPTY_NETWORK_STATE, providers: new Map(Object.entries(health)), ...extra };
}

function context(s: NetworkState, demoted: string[] = []): SelectionContext {
  return { network: net, state: s, now: NOW, checkIntervalSeconds: 15, demoted: new Set(demoted) };
}

const explain = (s: NetworkState, method = "eth_call", body = "", demoted: string[] = []) =>
  explainRouting(configuredOrder(net), method, context(s, demoted), body).map(
    ({ provider, slot, reason }) => [provider.name, slot, reason],
  );

describe("explainRouting: each provider's slot and reason", () => {
  it.each<[string, NetworkState, string, string, string[], string[][]]>([
    [
      "all healthy: primaries by priority, the backup on standby",
      state(),
      "eth_call",
      "",
      [],
      [
        ["a", "candidate", "priority 2"],
        ["b", "candidate", "priority 1"],
        ["c", "candidate", "priority 1"],
        ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
      ],
    ],
    [
      "priority_match names the key that raised the priority",
      state(),
      "eth_getLogs",
      '{"method":"eth_getLogs"}',
      [],
      [
        ["a", "candidate", "priority 2"],
        ["b", "candidate", 'priority 9 from priority_match "eth_getLogs"'],
        ["c", "candidate", "priority 1"],
        ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
      ],
    ],
    [
      "a demoted provider goes after every other primary, before the backup",
      state(),
      "eth_call",
      "",
      ["a"],
      [
        ["b", "candidate", "priority 1"],
        ["c", "candidate", "priority 1"],
        [
          "a",
          "demoted",
          "demoted in this container after unclassified errors in a row (force-rotate)",
        ],
        ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
      ],
    ],
    [
      "a method a provider is configured not to serve skips it",
      state(),
      "trace_block",
      "",
      [],
      [
        ["a", "candidate", "priority 2"],
        ["b", "candidate", "priority 1"],
        ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
        ["c", "skipped", "configured not to serve trace_block (methods_deny / methods_allow)"],
      ],
    ],
    [
      "every primary out: the backup in use, the others in emergency by earliest expiry",
      state({
        a: blacklisted("rate_limit", NOW + 300_000),
        b: blacklisted("timeout", NOW + 60_000),
        c: { ...blacklisted("connection", NOW - 1), version: 2 },
      }),
      "eth_call",
      "",
      [],
      [
        ["bk", "candidate", "backup in use: no primary is a candidate; priority 1"],
        [
          "c",
          "emergency",
          "awaiting the monitor's probe after a connection cooldown; tried only when no candidate answers",
        ],
        [
          "b",
          "emergency",
          `blacklisted (timeout) until ${iso(NOW + 60_000)}; tried only when no candidate answers`,
        ],
        [
          "a",
          "emergency",
          `blacklisted (rate_limit) until ${iso(NOW + 300_000)}; tried only when no candidate answers`,
        ],
      ],
    ],
  ])("%s", (_name, s, method, body, demoted, expected) => {
    expect(explain(s, method, body, demoted)).toEqual(expected);
  });

  it("out of quorum and capability blacklists name their reasons", () => {
    const s = state(
      {},
      {
        quorum: {
          head: 100,
          headTimestamp: 1000,
          members: ["a", "c", "bk"],
          excluded: { b: "behind" },
          heads: {},
          computedAt: NOW - 1000,
        },
        capabilities: new Map([["a", new Map([["eth_call", NOW + 5000]])]]),
      },
    );
    expect(explain(s)).toEqual([
      ["c", "candidate", "priority 1"],
      ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
      // No expiry ranks before any expiry.
      ["b", "emergency", "out of quorum (behind); tried only when no candidate answers"],
      [
        "a",
        "emergency",
        `does not serve eth_call (capability blacklist until ${iso(NOW + 5000)}); tried only when no candidate answers`,
      ],
    ]);
  });

  it("a provider the quorum snapshot does not know at all is out of quorum as no_answer", () => {
    const s = state(
      {},
      {
        quorum: {
          head: 100,
          headTimestamp: 1000,
          members: ["a", "c", "bk"],
          excluded: {},
          heads: {},
          computedAt: NOW - 1000,
        },
      },
    );
    expect(explain(s).find(([name]) => name === "b")).toEqual([
      "b",
      "emergency",
      "out of quorum (no_answer); tried only when no candidate answers",
    ]);
  });

  it("in emergency, providers with no expiry ahead keep the configured order, a lapsed one too", () => {
    // a's blacklist lapses exactly now (awaiting its probe); b is out of quorum.
    const s = state(
      { a: blacklisted("timeout", NOW) },
      {
        quorum: {
          head: 100,
          headTimestamp: 1000,
          members: ["c", "bk"],
          excluded: { b: "behind" },
          heads: {},
          computedAt: NOW - 1000,
        },
      },
    );
    expect(explain(s).map(([name, slot]) => `${name}:${slot}`)).toEqual([
      "c:candidate",
      "bk:backup",
      "a:emergency",
      "b:emergency",
    ]);
  });

  it("the priority reason names the priority_match key that set the priority", () => {
    const matched = network([
      { name: "m", url: "http://m.test", priority_match: { eth_call: 3, eth_getLogs: 7 } },
    ]);
    const body = '[{"method":"eth_call"},{"method":"eth_getLogs"}]';
    const [entry] = explainRouting(matched.providers, "eth_call", context(state()), body);
    expect(entry?.reason).toBe('priority 7 from priority_match "eth_getLogs"');
  });

  it("block-aware: a provider that cannot have reached the call's block goes after those that can, before emergency", () => {
    const s = state({ a: blacklisted("timeout", NOW + 60_000) });
    const reachable = (provider: string) => ({ b: 99, c: 100 })[provider] ?? null;
    const routed = (block: number | null) =>
      explainRouting(configuredOrder(net), "eth_call", { ...context(s), reachable }, "", block).map(
        ({ provider, slot, reason }) => [provider.name, slot, reason],
      );
    expect(routed(100)).toEqual([
      ["c", "candidate", "priority 1"],
      ["bk", "backup", "backup: tried after the primaries while a primary is a candidate"],
      [
        "b",
        "behind",
        "cannot have reached block 100 yet (known head 99); tried after those that can",
      ],
      [
        "a",
        "emergency",
        `blacklisted (timeout) until ${iso(NOW + 60_000)}; tried only when no candidate answers`,
      ],
    ]);
    // At the block a provider reached, or with no block, nobody is behind.
    expect(routed(99).map(([name, slot]) => `${name}:${slot}`)).toEqual([
      "b:candidate",
      "c:candidate",
      "bk:backup",
      "a:emergency",
    ]);
    expect(routed(null).map(([name, slot]) => `${name}:${slot}`)).toEqual(
      routed(99).map(([name, slot]) => `${name}:${slot}`),
    );
    expect(
      attemptOrder(configuredOrder(net), "eth_call", { ...context(s), reachable }, 100).map(
        (slot) => slot.provider.name,
      ),
    ).toEqual(["c", "bk", "b", "a"]);
  });

  it("the configured order: primaries by priority, then tiebreak_weight, then as written; backups last", () => {
    const configured = network([
      { name: "bk", url: "http://bk.test", backup: true, priority: 9 },
      { name: "light", url: "http://l.test", priority: 2, tiebreak_weight: 1 },
      { name: "first", url: "http://f.test", priority: 1 },
      { name: "heavy", url: "http://h.test", priority: 2, tiebreak_weight: 3 },
      { name: "second", url: "http://s.test", priority: 1 },
      { name: "top", url: "http://t.test", priority: 5 },
    ]);
    const expected = ["top", "heavy", "light", "first", "second", "bk"];
    expect(configuredOrder(configured).map((provider) => provider.name)).toEqual(expected);
    const reversed = { ...configured, providers: [...configured.providers].reverse() };
    expect(configuredOrder(reversed).map((provider) => provider.name)).toEqual(expected);
  });

  it("the active provider: a demoted one while it is the only candidate; never one not serving eth_blockNumber", () => {
    expect(activeProvider(net, context(state(), ["a", "b", "c"]))?.name).toBe("a");
    const noHeads = network([
      { name: "archive", url: "http://x.test", priority: 5, methods_deny: ["eth_blockNumber"] },
      { name: "plain", url: "http://p.test", priority: 1 },
    ]);
    expect(activeProvider(noHeads, { ...context(state()), network: noHeads })?.name).toBe("plain");
  });

  it("the attempt order and the active provider are the explanation's order", () => {
    const s = state({ a: blacklisted("timeout", NOW + 60_000) });
    const ctx = context(s);
    const explained = explainRouting(configuredOrder(net), "eth_call", ctx);
    expect(attemptOrder(configuredOrder(net), "eth_call", ctx)).toEqual(
      explained
        .filter((entry) => entry.slot !== "skipped")
        .map((entry) => ({ provider: entry.provider, emergency: entry.slot === "emergency" })),
    );
    expect(activeProvider(net, ctx)?.name).toBe("b");
  });
});
