import { describe, expect, it } from "vitest";
import { configSchema, type ProviderConfig } from "../../../functions/core/config/config-schema.ts";
import { buildModel, nameProviders } from "../../../functions/core/config/network-model.ts";

/**
 * A provider's name keys its strikes, blacklists and stats in DynamoDB, so it must not depend
 * on where the provider sits in the file: reordering providers must leave every name as it was.
 */

const providers = (...entries: Array<string | { url: string; name?: string }>): ProviderConfig[] =>
  configSchema.parse({
    networks: {
      a: {
        chain_id: 1,
        providers: entries.map((entry) => (typeof entry === "string" ? { url: entry } : entry)),
      },
    },
  }).networks.a?.providers ?? [];

/** Names by URL, so two orders can be compared. */
const namesByUrl = (list: ProviderConfig[]): Record<string, string> => {
  const names = nameProviders(list);
  return Object.fromEntries(list.map((provider, index) => [provider.url, names[index] ?? ""]));
};

describe("provider names", () => {
  it("a derived name unique in its network is the bare host label", () => {
    expect(
      nameProviders(providers("https://eth.llamarpc.com", "https://rpc.ankr.com/eth")),
    ).toEqual(["llamarpc", "ankr"]);
  });

  it.each<{ name: string; urls: Array<string | { url: string; name?: string }> }>([
    {
      name: "two hosts of one provider",
      urls: ["https://a.llamarpc.com", "https://b.llamarpc.com", "https://rpc.ankr.com/eth"],
    },
    {
      name: "one host, keys that differ only in the placeholder (same redacted form)",
      urls: [
        "https://eth-mainnet.g.alchemy.com/v2/${KEY_ONE}",
        "https://eth-mainnet.g.alchemy.com/v2/${KEY_TWO}",
        "https://eth-mainnet.g.alchemy.com/v2/${KEY_THREE}",
      ],
    },
    {
      name: "a derived name that an explicit name takes",
      urls: [{ url: "https://x.test/rpc", name: "llamarpc" }, "https://eth.llamarpc.com"],
    },
  ])("regression: reordering providers kept every name ($name)", ({ urls }) => {
    const forward = namesByUrl(providers(...urls));
    const backward = namesByUrl(providers(...[...urls].reverse()));
    expect(backward).toEqual(forward);
    expect(new Set(Object.values(forward)).size).toBe(urls.length);
  });

  it("colliding derived names carry a 6-hex suffix after the label", () => {
    const names = nameProviders(providers("https://a.llamarpc.com", "https://b.llamarpc.com"));
    for (const name of names) expect(name).toMatch(/^llamarpc-[0-9a-f]{6}$/);
    expect(names[0]).not.toBe(names[1]);
  });

  it("the suffix is a fingerprint of the redacted URL: rotating a key in the path keeps the name", () => {
    const before = nameProviders(
      providers("https://x.quiknode.pro/abc123def456ghi/", "https://y.quiknode.pro/rpc"),
    );
    const after = nameProviders(
      providers("https://x.quiknode.pro/zzz999yyy888xxx/", "https://y.quiknode.pro/rpc"),
    );
    expect(after).toEqual(before);
  });

  it("exact duplicates are told apart by -2 (they are interchangeable)", () => {
    const names = nameProviders(providers("https://a.test/rpc", "https://a.test/rpc"));
    expect(names[1]).toBe(`${names[0]}-2`);
  });

  it("an explicit name is kept as written", () => {
    expect(
      nameProviders(
        providers({ url: "https://a.llamarpc.com", name: "main" }, "https://b.llamarpc.com"),
      ),
    ).toEqual(["main", "llamarpc"]);
  });

  it("the model uses the same names", () => {
    const config = configSchema.parse({
      networks: {
        a: {
          chain_id: 1,
          providers: [{ url: "https://b.llamarpc.com" }, { url: "https://a.llamarpc.com" }],
        },
      },
    });
    const model = buildModel(config, (url) => url);
    expect(model.networks.get("a")?.providers.map((provider) => provider.name)).toEqual(
      nameProviders(config.networks.a?.providers ?? []),
    );
  });
});
