import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel, parseConfig } from "../../../functions/core/config/network-model.ts";

/**
 * The config keys of history-aware routing (docs/behaviour.md §16.1, config-reference.md):
 * per provider `archive` and `history`, per network `history_bounds`, validated by the schema.
 */

const network = (provider: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  networks: {
    eth: { chain_id: 1, providers: [{ url: "https://a.example", ...provider }], ...extra },
  },
});

describe("history config keys", () => {
  it("archive keeps every resource from block 0; a history key overrides it for its resource", () => {
    const config = configSchema.parse(
      network({ archive: true, history: { bodies_from: 15537393, logs_blocks: 500000 } }),
    );
    const provider = buildModel(config, (url) => url).networks.get("eth")?.providers[0];
    expect(provider?.history).toEqual({
      state: { from: 0, blocks: null },
      proofs: { from: 0, blocks: null },
      bodies: { from: 15537393, blocks: null },
      receipts: { from: 0, blocks: null },
      logs: { from: null, blocks: 500000 },
    });
  });

  it("says nothing by default, and history_bounds defaults to probes every 5 min, lessons kept 1 h", () => {
    const config = configSchema.parse(network({}));
    const eth = buildModel(config, (url) => url).networks.get("eth");
    expect(Object.values(eth?.providers[0]?.history ?? {})).toEqual([null, null, null, null, null]);
    expect(eth?.settings.history_bounds).toEqual({ probe_seconds: 300, learned_ttl_seconds: 3600 });
  });

  it("a network's history_bounds overrides the top level's, key by key", () => {
    const config = configSchema.parse({
      history_bounds: { probe_seconds: 60, learned_ttl_seconds: 600 },
      ...network({}, { history_bounds: { probe_seconds: 0 } }),
    });
    expect(buildModel(config, (url) => url).networks.get("eth")?.settings.history_bounds).toEqual({
      probe_seconds: 0,
      learned_ttl_seconds: 600,
    });
  });

  it.each([
    ["an unknown history key", network({ history: { state_depth: 128 } }), "providers[0].history"],
    ["a window of 0 blocks", network({ history: { state_blocks: 0 } }), "history.state_blocks"],
    ["a negative block", network({ history: { logs_from: -1 } }), "history.logs_from"],
    ["archive that is not a boolean", network({ archive: "yes" }), "archive"],
    [
      "a learned bound kept under a minute",
      network({}, { history_bounds: { learned_ttl_seconds: 5 } }),
      "history_bounds.learned_ttl_seconds",
    ],
    [
      "a probe interval over a day",
      network({}, { history_bounds: { probe_seconds: 100000 } }),
      "history_bounds.probe_seconds",
    ],
  ])("refuses %s, naming its path", (_, input, path) => {
    const parsed = parseConfig(input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.problems.map((problem) => problem.path).join(" ")).toContain(path);
  });
});
