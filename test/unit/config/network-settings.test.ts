import { describe, expect, it } from "vitest";
import { configSchema, settingsSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../functions/core/config/network-model.ts";

/**
 * A network's settings are merged without the schema (a config prepared at build time never
 * builds it): the merge must be exactly what the settings schema makes of the same values.
 */
const provider = { url: "https://a.example" };

describe("a network's settings", () => {
  it.each([
    ["no overrides", {}, {}],
    [
      "overrides in the network, nested ones partial",
      { max_attempts: 5, quorum: { failing_often: { min_requests: 40 } } },
      {
        max_attempts: 2,
        methods_allow: ["eth_*"],
        cooldown_seconds: { rate_limit: 10 },
        quorum: { max_lag_seconds: 20, failing_often: { window_seconds: 60 } },
        hedge: { max_ratio: 0 },
        probe: { timeout_ms: 1000 },
        events: { max_kept: 200 },
        history_bounds: { probe_seconds: 0 },
      },
    ],
    ["top-level methods_allow and cache off", { methods_allow: ["eth_call"], cache: false }, {}],
  ])("%s: the settings schema's output for the merged values", (_, top, network) => {
    const config = configSchema.parse({
      ...top,
      networks: { a: { chain_id: 1, providers: [provider], ...network } },
    });

    const settings = buildModel(config, (url) => url).networks.get("a")?.settings;

    expect(settings).toStrictEqual(settingsSchema.parse(settings));
    expect(Object.keys(settings ?? {})).toEqual(Object.keys(settingsSchema.parse(settings)));
  });
});
