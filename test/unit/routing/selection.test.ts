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
  effectivePriority,
  explainRouting,
  rankProviders,
  type SelectionContext,
} from "../../../functions/core/routing/selection.ts";

const NOW = 1_700_000_000_000;

function network(providers: ConfigInput["networks"][string]["providers"]): Network {
  const config = configSchema.parse({ networks: { eth: { chain_id: 1, providers } } });
  const built = buildModel(config, (url) => url).networks.get("eth");
  if (!built) throw new Error("no network");
  return built;
}

function stateWith(
  health: Record<string, Partial<ProviderHealth>>,
  extra: Partial<NetworkState> = {},
): NetworkState {
  return {
    ...EMPTY_NETWORK_STATE,
    providers: new Map(Object.entries(health).map(([name, h]) => [name, { ...HEALTHY, ...h }])),
    ...extra,
  };
}

function context(
  net: Network,
  state: NetworkState = EMPTY_NETWORK_STATE,
  demoted: string[] = [],
): SelectionContext {
  return { network: net, state, now: NOW, checkIntervalSeconds: 15, demoted: new Set(demoted) };
}

/** A deterministic random source cycling through the given values. */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
}

const order = (
  net: Network,
  state: NetworkState,
  method = "eth_call",
  body = "",
  random = sequence(0.5),
) =>
  attemptOrder(rankProviders(net.providers, body, random), method, context(net, state)).map(
    (slot) => `${slot.provider.name}${slot.emergency ? "!" : ""}`,
  );

describe("priority and priority_match (docs/behaviour.md §3.3)", () => {
  const net = network([
    { name: "a", url: "http://a.test", priority: 2 },
    {
      name: "logs",
      url: "http://logs.test",
      priority: 1,
      priority_match: { eth_getLogs: 99, eth_call: 5 },
    },
  ]);
  it.each([
    ['{"method":"eth_chainId"}', "a", 2, "logs", 1],
    ['{"method":"eth_getLogs"}', "logs", 99, "a", 2],
    ['[{"method":"eth_call"},{"method":"eth_getLogs"}]', "logs", 99, "a", 2],
    // Every matching key counts, the highest wins, whichever is written first.
    ['[{"method":"eth_getLogs"},{"method":"eth_call"}]', "logs", 99, "a", 2],
  ])("body %s → %s first", (body, first, firstPriority, second, secondPriority) => {
    const ranked = rankProviders(net.providers, body, sequence(0.5));
    expect(ranked.map((p) => p.name)).toEqual([first, second]);
    expect(ranked.map((p) => effectivePriority(p, body))).toEqual([firstPriority, secondPriority]);
  });
});

describe("rankProviders: primaries before backups, then priority (docs/behaviour.md §3)", () => {
  // Every backup outranks every primary by priority, and some draws favour the backups.
  const net = network([
    { name: "low", url: "http://low.test", priority: 1 },
    { name: "backup-high", url: "http://bh.test", backup: true, priority: 9 },
    { name: "high", url: "http://high.test", priority: 2 },
    { name: "backup-low", url: "http://bl.test", backup: true, priority: 5 },
  ]);
  it.each([[[0.5]], [[0.1, 0.9, 0.2, 0.8]], [[0.01, 0.99, 0.01, 0.99]]])(
    "whatever the weighted draw (%j)",
    (draws) => {
      expect(rankProviders(net.providers, "", sequence(...draws)).map((p) => p.name)).toEqual([
        "high",
        "low",
        "backup-high",
        "backup-low",
      ]);
    },
  );

  it("within one priority and one draw, the configured order", () => {
    const tied = network([
      { name: "x", url: "http://x.test" },
      { name: "y", url: "http://y.test" },
      { name: "z", url: "http://z.test" },
    ]);
    expect(rankProviders(tied.providers, "", sequence(0.5)).map((p) => p.name)).toEqual([
      "x",
      "y",
      "z",
    ]);
    // Whatever order they are handed in.
    const reversed = [...tied.providers].reverse();
    expect(rankProviders(reversed, "", sequence(0.5)).map((p) => p.name)).toEqual(["x", "y", "z"]);
  });

  it("a priority_match raising a backup above every primary still leaves it after them", () => {
    const matched = network([
      { name: "primary", url: "http://p.test", priority: 1 },
      {
        name: "logs-backup",
        url: "http://lb.test",
        backup: true,
        priority_match: { eth_getLogs: 99 },
      },
    ]);
    const body = '{"method":"eth_getLogs"}';
    expect(rankProviders(matched.providers, body, sequence(0.5)).map((p) => p.name)).toEqual([
      "primary",
      "logs-backup",
    ]);
  });
});

describe("tiebreak_weight: weighted random within a tier", () => {
  it("a weight-2 provider serves about twice the traffic of a weight-1 one", () => {
    const net = network([
      { name: "heavy", url: "http://h.test", tiebreak_weight: 2 },
      { name: "light", url: "http://l.test", tiebreak_weight: 1 },
    ]);
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let heavy = 0;
    const draws = 30_000;
    for (let i = 0; i < draws; i++) {
      if (rankProviders(net.providers, "", random)[0]?.name === "heavy") heavy++;
    }
    expect(heavy / draws).toBeGreaterThan(0.63);
    expect(heavy / draws).toBeLessThan(0.7);
  });
});

describe("candidates, backups and emergency use (docs/behaviour.md §3)", () => {
  const net = network([
    { name: "p1", url: "http://p1.test", priority: 3 },
    { name: "p2", url: "http://p2.test", priority: 2 },
    { name: "b", url: "http://b.test", backup: true, priority: 9 },
  ]);
  const blacklisted = (until = NOW + 60_000): Partial<ProviderHealth> => ({
    reason: "connection",
    blacklistedUntil: until,
    probeGated: true,
    strikes: 1,
  });
  const awaiting: Partial<ProviderHealth> = {
    reason: "connection",
    blacklistedUntil: NOW - 1,
    probeGated: true,
    strikes: 1,
  };
  const quorum = (members: string[]) => ({
    quorum: {
      head: 10,
      headTimestamp: 1,
      members,
      excluded: {},
      heads: {},
      computedAt: NOW - 1000,
    },
  });

  it.each<[string, NetworkState, string[]]>([
    ["all healthy: tiers, then the backup last", stateWith({}), ["p1", "p2", "b"]],
    [
      "p1 blacklisted: p2, backup, then p1 in emergency",
      stateWith({ p1: blacklisted() }),
      ["p2", "b", "p1!"],
    ],
    ["p1 awaiting probe gets no traffic", stateWith({ p1: awaiting }), ["p2", "b", "p1!"]],
    [
      "every primary out: backup alone is a candidate",
      stateWith({ p1: blacklisted(NOW + 5000), p2: blacklisted(NOW + 1000) }),
      ["b", "p2!", "p1!"],
    ],
    [
      "nothing is a candidate: earliest expiry first",
      stateWith({
        p1: blacklisted(NOW + 5000),
        p2: blacklisted(NOW + 1000),
        b: blacklisted(NOW + 3000),
      }),
      ["p2!", "b!", "p1!"],
    ],
    ["out of quorum is no candidate", stateWith({}, quorum(["p2", "b"])), ["p2", "b", "p1!"]],
    [
      "a stale quorum snapshot fails open",
      stateWith(
        {},
        {
          quorum: {
            head: 1,
            headTimestamp: 1,
            members: [],
            excluded: {},
            heads: {},
            computedAt: NOW - 46_000,
          },
        },
      ),
      ["p1", "p2", "b"],
    ],
    [
      "capability blacklist for this method only",
      stateWith({}, { capabilities: new Map([["p1", new Map([["eth_call", NOW + 1000]])]]) }),
      ["p2", "b", "p1!"],
    ],
  ])("%s", (_name, state, expected) => {
    expect(order(net, state)).toEqual(expected);
  });

  it("a capability blacklist for another method does not matter", () => {
    const state = stateWith(
      {},
      { capabilities: new Map([["p1", new Map([["trace_block", NOW + 1000]])]]) },
    );
    expect(order(net, state, "eth_call")).toEqual(["p1", "p2", "b"]);
  });

  it("traffic returns to the primary as soon as it is a candidate again", () => {
    const state = stateWith({ p1: blacklisted(NOW + 1000), p2: blacklisted(NOW + 1000) });
    expect(order(net, state)[0]).toBe("b");
    const later = { ...context(net, state), now: NOW + 1000 };
    const afterExpiry = stateWith({ p1: { ...blacklisted(NOW + 1000), probeGated: false } });
    expect(
      attemptOrder(rankProviders(net.providers, "", sequence(0.5)), "eth_call", {
        ...later,
        state: afterExpiry,
      })[0]?.provider.name,
    ).toBe("p1");
  });

  it("a lone provider is always tried", () => {
    const lone = network([{ name: "only", url: "http://only.test" }]);
    expect(order(lone, stateWith({ only: blacklisted() }))).toEqual(["only!"]);
  });

  it("a provider that does not serve a method is never tried", () => {
    const net2 = network([
      { name: "full", url: "http://f.test", priority: 1 },
      { name: "lite", url: "http://l.test", priority: 5, methods_deny: ["debug_*"] },
    ]);
    expect(order(net2, stateWith({}), "debug_traceTransaction")).toEqual(["full"]);
    expect(order(net2, stateWith({}), "eth_call")).toEqual(["lite", "full"]);
  });

  it("the active provider is the first candidate, the backup when every primary is out", () => {
    expect(activeProvider(net, context(net, stateWith({})))?.name).toBe("p1");
    expect(
      activeProvider(net, context(net, stateWith({ p1: blacklisted(), p2: blacklisted() })))?.name,
    ).toBe("b");
    expect(
      activeProvider(
        net,
        context(net, stateWith({ p1: blacklisted(), p2: blacklisted(), b: blacklisted() })),
      ),
    ).toBeNull();
  });
});

describe("force-rotate: a provider this container demoted", () => {
  // With no backup configured, force-rotate demotes the provider in this container: it goes
  // after every other primary candidate, whatever their priority, and before the backups.
  const demotedOrder = (
    providers: ConfigInput["networks"][string]["providers"],
    demoted: string[],
    state: NetworkState = stateWith({}),
  ) => {
    const net = network(providers);
    // The first draw of the weighted choice picks the first provider of a tier.
    const ranked = rankProviders(net.providers, "", sequence(0));
    return attemptOrder(ranked, "eth_call", context(net, state, demoted)).map(
      (slot) => `${slot.provider.name}${slot.emergency ? "!" : ""}`,
    );
  };
  const sameTier = [
    { name: "a", url: "http://a.test", priority: 2 },
    { name: "b", url: "http://b.test", priority: 2 },
  ];
  const tiers = [
    { name: "p1", url: "http://p1.test", priority: 3 },
    { name: "p2", url: "http://p2.test", priority: 2 },
    { name: "p3", url: "http://p3.test", priority: 1 },
  ];
  const backup = { name: "k", url: "http://k.test", backup: true, priority: 9 };

  it.each<[string, ConfigInput["networks"][string]["providers"], string[], string[]]>([
    ["two in one tier, nobody demoted", sameTier, [], ["a", "b"]],
    ["two in one tier: the demoted one goes second", sameTier, ["a"], ["b", "a"]],
    ["two in one tier, then a backup", [...sameTier, backup], ["a"], ["b", "a", "k"]],
    ["across tiers: after every lower tier", tiers, ["p1"], ["p2", "p3", "p1"]],
    ["across tiers, from the middle tier", tiers, ["p2"], ["p1", "p3", "p2"]],
    ["across tiers: before the backups", [...tiers, backup], ["p1"], ["p2", "p3", "p1", "k"]],
    ["every primary demoted: in priority order", tiers, ["p1", "p2", "p3"], ["p1", "p2", "p3"]],
    ["the lowest tier demoted changes nothing", tiers, ["p3"], ["p1", "p2", "p3"]],
  ])("%s", (_name, providers, demoted, expected) => {
    expect(demotedOrder(providers, demoted)).toEqual(expected);
  });

  it("a demoted provider that is also blacklisted is tried only in emergency use", () => {
    const state = stateWith({
      p1: { reason: "connection", blacklistedUntil: NOW + 60_000, probeGated: true, strikes: 1 },
    });
    expect(demotedOrder(tiers, ["p1", "p2"], state)).toEqual(["p3", "p2", "p1!"]);
  });
});

describe("log queries and providers' log ranges (docs/behaviour.md §12)", () => {
  const net = network([
    { name: "narrow", url: "http://narrow.test", priority: 3, max_logs_range: 1_000 },
    { name: "learned", url: "http://learned.test", priority: 2 },
    { name: "wide", url: "http://wide.test", priority: 1 },
  ]);
  const learned = stateWith(
    {},
    { logsRanges: new Map([["learned", { value: 5_000, until: NOW + 60_000 }]]) },
  );
  const expired = stateWith(
    {},
    { logsRanges: new Map([["learned", { value: 5_000, until: NOW - 1 }]]) },
  );
  const orderFor = (state: NetworkState, span: number | null) =>
    explainRouting(
      rankProviders(net.providers, "", sequence(0.5)),
      "eth_getLogs",
      context(net, state),
      "",
      null,
      span,
    ).map((entry) => `${entry.provider.name}:${entry.slot}`);

  it.each<[string, NetworkState, number | null, string[]]>([
    [
      "a span every range covers",
      learned,
      1_000,
      ["narrow:candidate", "learned:candidate", "wide:candidate"],
    ],
    [
      "over the configured range",
      learned,
      1_001,
      ["learned:candidate", "wide:candidate", "narrow:limited"],
    ],
    [
      "over the learned range too",
      learned,
      5_001,
      ["wide:candidate", "narrow:limited", "learned:limited"],
    ],
    [
      "an expired learned range is unknown",
      expired,
      5_001,
      ["learned:candidate", "wide:candidate", "narrow:limited"],
    ],
    ["not a log query", learned, null, ["narrow:candidate", "learned:candidate", "wide:candidate"]],
  ])("%s", (_, state, span, expected) => {
    expect(orderFor(state, span)).toEqual(expected);
  });

  it("says why a provider is limited", () => {
    const entry = explainRouting(
      net.providers,
      "eth_getLogs",
      context(net, learned),
      "",
      null,
      2_000,
    ).find((e) => e.slot === "limited");
    expect(entry?.reason).toBe(
      "takes log queries of at most 1000 blocks (max_logs_range), this one spans 2000; tried after those that can",
    );
  });
});
