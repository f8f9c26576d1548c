import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../functions/core/config/network-model.ts";
import { HEALTHY } from "../../../functions/core/health/health.ts";
import { NO_LOG_CHECKS } from "../../../functions/core/request/logs/checks/logs-check-state.ts";
import { EMPTY_NETWORK_STATE } from "../../../functions/core/routing/network-state.ts";
import type { GatewayEvent } from "../../../functions/core/status/events.ts";
import {
  type NetworkStatus,
  networkStatus,
  type StatusInput,
} from "../../../functions/core/status/status.ts";

/**
 * The status JSON is a stable interface (docs/behaviour.md §2): monitoring and scripts read it,
 * so fields may be added but never renamed or dropped. This pins every field's name and the
 * values for a known state.
 */

const NOW = 1_800_000_000_000;

const config = configSchema.parse({
  networks: {
    eth: {
      chain_id: 1,
      providers: [
        { name: "main", url: "https://main.example.com/v3/0123456789abcdef0123", priority: 2 },
        { name: "second", url: "https://second.example.com/rpc" },
        { name: "spare", url: "https://spare.example.com/", backup: true },
      ],
    },
  },
});
const model = buildModel(config, (url) => url);
const network = model.networks.get("eth");
if (network === undefined) throw new Error("no network");

function status(events: readonly GatewayEvent[] = []): NetworkStatus {
  return networkStatus({ ...statusInput(), events });
}

function statusInput(): StatusInput {
  return {
    model,
    network: network as NonNullable<typeof network>,
    now: NOW,
    configSource: { kind: "bundled", loaded_at: new Date(NOW - 60_000).toISOString() },
    state: {
      ...EMPTY_NETWORK_STATE,
      providers: new Map([
        [
          "main",
          {
            ...HEALTHY,
            strikes: 2,
            reason: "rate_limit",
            blacklistedUntil: NOW + 120_000,
            probeGated: true,
            version: 3,
          },
        ],
      ]),
      quorum: {
        head: 1000,
        headTimestamp: 1_799_999_990,
        members: ["main", "second", "spare"],
        excluded: {},
        heads: {
          main: { number: 1000, timestamp: 1_799_999_990 },
          second: { number: 998, timestamp: 1_799_999_966 },
          spare: { number: 1000, timestamp: 1_799_999_990 },
        },
        computedAt: NOW - 5_000,
      },
      monitorTickAt: NOW - 5_000,
      batchLimits: new Map(),
      logsRanges: new Map(),
    },
    stats: () => ({
      window_seconds: 300,
      requests: 10,
      errors: 1,
      latency_ms: { p50: 20, p95: 80 },
    }),
  };
}

describe("the status JSON", () => {
  it("keeps every field of a network, by name", () => {
    expect(Object.keys(status()).sort()).toEqual(
      [
        "active_provider",
        "cache",
        "chain_id",
        "config_source",
        "events",
        "guards",
        "monitor",
        "network",
        "providers",
        "providers_left_out",
        "quorum",
        "served_head",
      ].sort(),
    );
  });

  it("regression: a provider at block 0 (a new devnet) showed no head; now 0, and null only with no head at all", () => {
    const input = statusInput();
    const quorum = input.state.quorum as NonNullable<typeof input.state.quorum>;
    const atGenesis = networkStatus({
      ...input,
      state: {
        ...input.state,
        quorum: {
          ...quorum,
          heads: { main: { number: 0, timestamp: 1_799_999_990 } },
        },
      },
    });
    const heads = Object.fromEntries(atGenesis.providers.map((p) => [p.name, p.head.number]));
    expect(heads).toMatchObject({ main: 0, second: null });
  });

  it("shows this container's answer cache by class: hits, misses and their ratio", () => {
    expect(status().cache).toEqual({
      enabled: true,
      classes: {
        immutable: { hits: 0, misses: 0, ratio: null },
        unfinalized: { hits: 0, misses: 0, ratio: null },
        realtime: { hits: 0, misses: 0, ratio: null },
        never: { hits: 0, misses: 0, ratio: null },
      },
    });
    const counted = networkStatus({
      ...statusInput(),
      cacheClasses: {
        immutable: { hits: 3, misses: 1, ratio: 0.75 },
        unfinalized: { hits: 0, misses: 2, ratio: 0 },
        realtime: { hits: 0, misses: 0, ratio: null },
        never: { hits: 0, misses: 5, ratio: 0 },
      },
    });
    expect(counted.cache.classes.immutable).toEqual({ hits: 3, misses: 1, ratio: 0.75 });
    expect(Object.keys(counted.cache).sort()).toEqual(["classes", "enabled"]);
  });

  it("keeps every field of a provider, by name, with the routing explanation", () => {
    const [main] = status().providers;
    expect(Object.keys(main ?? {}).sort()).toEqual(
      [
        "backup",
        "blacklist",
        "capability_blacklists",
        "consensus",
        "head",
        "history",
        "in_quorum",
        "last_probe",
        "limits",
        "log_checks",
        "name",
        "priority",
        "quorum_detail",
        "quorum_reason",
        "routing",
        "state",
        "stats",
        "strikes",
        "url",
      ].sort(),
    );
  });

  it("shows the state, lag, blacklist and routing of each provider", () => {
    const result = status();
    expect(result.active_provider).toBe("second");
    expect(result.monitor).toEqual({
      last_tick_at: new Date(NOW - 5_000).toISOString(),
      stale: false,
    });
    expect(
      result.providers.map((p) => ({
        name: p.name,
        url: p.url,
        state: p.state,
        lag: p.head.lag_seconds,
        blacklist: p.blacklist,
        routing: p.routing,
      })),
    ).toEqual([
      {
        name: "main",
        url: "https://main.example.com/v3/***",
        state: "blacklisted",
        lag: 0,
        blacklist: { reason: "rate_limit", until: new Date(NOW + 120_000).toISOString() },
        routing: {
          slot: "emergency",
          reason: `blacklisted (rate_limit) until ${new Date(NOW + 120_000).toISOString()}; tried only when no candidate answers`,
        },
      },
      {
        name: "second",
        url: "https://second.example.com/rpc",
        state: "healthy",
        lag: 24,
        blacklist: null,
        routing: { slot: "candidate", reason: "priority 1" },
      },
      {
        name: "spare",
        url: "https://spare.example.com",
        state: "healthy",
        lag: 0,
        blacklist: null,
        routing: {
          slot: "backup",
          reason: "backup: tried after the primaries while a primary is a candidate",
        },
      },
    ]);
  });
});

describe("the status JSON's events", () => {
  const event = (index: number): GatewayEvent => ({
    network: "eth",
    at: NOW - index * 1000,
    provider: index % 2 === 0 ? "main" : null,
    kind: "blacklisted",
    reason: "rate_limit",
    detail: `incident ${index}`,
  });

  it("lists each event with exactly at, provider, kind, reason and detail, as given (newest first)", () => {
    const [first, second] = status([event(0), event(1)]).events;
    expect(first).toEqual({
      at: new Date(NOW).toISOString(),
      provider: "main",
      kind: "blacklisted",
      reason: "rate_limit",
      detail: "incident 0",
    });
    expect(second?.provider).toBeNull();
    expect(Object.keys(first ?? {}).sort()).toEqual(["at", "detail", "kind", "provider", "reason"]);
  });

  it("shows at most 100 events, the first 100 given", () => {
    const events = status(Array.from({ length: 150 }, (_, index) => event(index))).events;
    expect(events).toHaveLength(100);
    expect(events.at(-1)?.detail).toBe("incident 99");
  });

  it("is an empty list without events", () => {
    expect(status().events).toEqual([]);
  });
});

describe("the log-answer checks on the status JSON", () => {
  it("shows each provider's counts from this container, zeros for one the checks have not met", () => {
    const counts = {
      missing_data: 3,
      bloom_false_positives: 1,
      bloom_unresolved: 0,
      reach_failures: 2,
      headers_asked: 40,
      receipts_asked: 4,
    };
    const shown = networkStatus({ ...statusInput(), logChecks: new Map([["main", counts]]) });
    expect(shown.providers.map((provider) => [provider.name, provider.log_checks])).toEqual([
      ["main", counts],
      ["second", NO_LOG_CHECKS],
      ["spare", NO_LOG_CHECKS],
    ]);
  });
});

describe("read consensus on the status JSON", () => {
  it("null on a network without consensus", () => {
    expect(status().providers.map((provider) => provider.consensus)).toEqual([null, null, null]);
  });

  it("each provider's counts from this container, and from the shared health its minority within the window and its sit-out", () => {
    const withConsensus = buildModel(
      configSchema.parse({
        networks: {
          eth: {
            ...config.networks.eth,
            consensus: { methods: ["eth_getBalance"], minority_window_seconds: 600 },
          },
        },
      }),
      (url) => url,
    ).networks.get("eth");
    if (withConsensus === undefined) throw new Error("no network");
    const input = statusInput();
    const shown = networkStatus({
      ...input,
      network: withConsensus,
      state: {
        ...input.state,
        providers: new Map([
          [
            "main",
            { ...HEALTHY, consensus: { count: 0, since: NOW - 1000, sitOutUntil: NOW + 60_000 } },
          ],
          ["second", { ...HEALTHY, consensus: { count: 2, since: NOW - 1000, sitOutUntil: 0 } }],
          [
            "spare",
            { ...HEALTHY, consensus: { count: 2, since: NOW - 700_000, sitOutUntil: NOW - 1 } },
          ],
        ]),
      },
      consensus: new Map([["main", { agreed: 1, minority: 3, disputed: 1 }]]),
    });
    expect(shown.providers.map((provider) => [provider.name, provider.consensus])).toEqual([
      [
        "main",
        {
          agreed: 1,
          minority: 3,
          disputed: 1,
          minority_recent: 0,
          sit_out_until: new Date(NOW + 60_000).toISOString(),
        },
      ],
      ["second", { agreed: 0, minority: 0, disputed: 0, minority_recent: 2, sit_out_until: null }],
      ["spare", { agreed: 0, minority: 0, disputed: 0, minority_recent: 0, sit_out_until: null }],
    ]);
  });
});
