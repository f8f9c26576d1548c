import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, parseConfig } from "../../../functions/core/config/network-model.ts";

/**
 * A network's `consensus` block (docs/behaviour.md §17, docs/config-reference.md): off by
 * default, its defaults, and a clear error, with its JSON path, for each way it can be wrong.
 */

const providers = [
  { url: "https://a.example" },
  { url: "https://b.example" },
  { url: "https://c.example" },
];
const withConsensus = (consensus: unknown, list: unknown[] = providers) => ({
  networks: { eth: { chain_id: 1, providers: list, consensus } },
});
const problems = (config: unknown) => {
  const parsed = parseConfig(config);
  return parsed.ok ? [] : parsed.problems.map((p) => `${p.path}: ${p.message}`);
};

describe("the consensus config", () => {
  it("is off unless a network names it", () => {
    const model = buildModel(
      configSchema.parse({ networks: { eth: { chain_id: 1, providers } } }),
      (u) => u,
    );
    expect(model.networks.get("eth")?.consensus).toBeNull();
  });

  it("has its defaults: agreement 2, ask one more on a dispute, no extra ignored fields, 3 minorities in 10 min sit out 30 min", () => {
    const model = buildModel(
      configSchema.parse(withConsensus({ methods: ["eth_getBalance"] })),
      (u) => u,
    );
    expect(model.networks.get("eth")?.consensus).toEqual({
      methods: ["eth_getBalance"],
      agreement: 2,
      on_dispute: "ask_more",
      ignore_fields: {},
      minority_limit: 3,
      minority_window_seconds: 600,
      sit_out_seconds: 1800,
    });
  });

  it.each<[string, unknown, unknown[] | undefined, string]>([
    [
      "no methods",
      { methods: [] },
      undefined,
      "networks.eth.consensus.methods: list the methods whose answers need agreement",
    ],
    [
      "a write",
      { methods: ["eth_sendRawTransaction"] },
      undefined,
      "networks.eth.consensus.methods[0]: eth_sendRawTransaction is not a read: only reads can be asked of several providers",
    ],
    [
      "a read about no block",
      { methods: ["eth_gasPrice"] },
      undefined,
      "networks.eth.consensus.methods[0]: eth_gasPrice is not about a block or a hash: honest providers need not agree on it",
    ],
    [
      "a method outside the catalogue",
      { methods: ["foo_bar"] },
      undefined,
      "networks.eth.consensus.methods[0]: foo_bar is not in the method catalogue: consensus needs to know where its block is",
    ],
    [
      "more agreement than providers",
      { methods: ["eth_call"], agreement: 3 },
      providers.slice(0, 2),
      "networks.eth.consensus.agreement: agreement 3 needs at least 3 providers; this network has 2",
    ],
    [
      "agreement of one",
      { methods: ["eth_call"], agreement: 1 },
      undefined,
      "networks.eth.consensus.agreement: Too small: expected number to be >=2",
    ],
    [
      "an unknown dispute rule",
      { methods: ["eth_call"], on_dispute: "first" },
      undefined,
      'networks.eth.consensus.on_dispute: Invalid option: expected one of "ask_more"|"error"',
    ],
    [
      "ignored fields of a method not listed",
      { methods: ["eth_call"], ignore_fields: { eth_getLogs: ["*.x"] } },
      undefined,
      "networks.eth.consensus.ignore_fields.eth_getLogs: eth_getLogs is not in consensus.methods: its ignored fields would never be read",
    ],
    [
      "a path that is no path",
      { methods: ["eth_call"], ignore_fields: { eth_call: ["a..b"] } },
      undefined,
      "networks.eth.consensus.ignore_fields.eth_call[0]: a path is names and * joined by dots, e.g. logs.*.blockTimestamp",
    ],
    [
      "a misspelt key",
      { methods: ["eth_call"], agreemnt: 2 },
      undefined,
      'networks.eth.consensus: unknown key(s) "agreemnt": check the spelling against docs/config-reference.md',
    ],
  ])("refuses %s, naming it", (_, consensus, list, expected) => {
    expect(problems(withConsensus(consensus, list))).toContain(expected);
  });

  it("takes every read about a block or a hash, and an inconsistent cooldown", () => {
    const methods = [
      "eth_getBalance",
      "eth_call",
      "eth_getLogs",
      "eth_getTransactionReceipt",
      "eth_getBlockByNumber",
      "eth_getBlockByHash",
      "eth_getStorageAt",
      "eth_getCode",
      "eth_getBlockReceipts",
    ];
    expect(
      problems(withConsensus({ methods, ignore_fields: { eth_getLogs: ["*.data"] } })),
    ).toEqual([]);
    expect(
      configSchema.parse({ networks: { eth: { chain_id: 1, providers } } }).cooldown_seconds
        .inconsistent,
    ).toBe(300);
  });
});
