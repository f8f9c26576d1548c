import { describe, expect, it } from "vitest";
import {
  configSchema,
  DEFAULT_METHODS_DENY,
} from "../../../functions/core/config/config-schema.ts";
import {
  buildModel,
  deriveProviderName,
  parseConfig,
} from "../../../functions/core/config/network-model.ts";
import { resolveUrlTemplate } from "../../../functions/core/config/placeholders.ts";
import {
  makeScrubber,
  makeSecretScrubber,
  redactUrl,
  secretPartsOf,
} from "../../../functions/core/config/redact.ts";
import { cacheControlFor, getModeBody, matchRoute } from "../../../functions/core/http/routes.ts";
import type { AnswerClass } from "../../../functions/core/request/vocabulary.ts";

describe("config: invictus configs load unchanged, defaults filled", () => {
  it("the invictus README example", () => {
    const result = parseConfig({
      check_interval_seconds: 30,
      networks: {
        ethereum: {
          chain_id: 1,
          providers: [{ url: "https://eth.llamarpc.com", priority: 2, tiebreak_weight: 1 }],
          block_majority_divider: 1,
        },
      },
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const model = buildModel(result.config, (url) => url);
    const eth = model.networks.get("ethereum");
    expect(eth?.providers[0]?.name).toBe("llamarpc");
    expect(eth?.settings).toMatchObject({
      max_attempts: 3,
      request_timeout_ms: 10_000,
      request_deadline_ms: 25_000,
      max_batch: 100,
      max_body_bytes: 1_048_576,
      max_response_bytes: 6_000_000,
      max_blacklist_minutes: 30,
      methods_deny: [...DEFAULT_METHODS_DENY],
    });
    expect(eth?.settings.cooldown_seconds.rate_limit).toBe(300);
    expect(eth?.settings.quorum.failing_often.min_requests).toBe(20);
  });

  it("a network overrides a nested default without losing the others", () => {
    const config = configSchema.parse({
      cooldown_seconds: { rate_limit: 10 },
      networks: {
        a: {
          chain_id: 1,
          providers: [{ url: "http://x.test" }],
          cooldown_seconds: { timeout: 5 },
          quorum: { failing_often: { min_requests: 3 } },
        },
      },
    });
    const settings = buildModel(config, (url) => url).networks.get("a")?.settings;
    expect(settings?.cooldown_seconds).toMatchObject({
      rate_limit: 10,
      timeout: 5,
      connection: 120,
    });
    expect(settings?.quorum.failing_often).toMatchObject({ min_requests: 3, window_seconds: 300 });
  });

  it.each([
    [
      "unknown key",
      { networks: { a: { chain_id: 1, providers: [{ url: "http://x.test", prio: 1 }] } } },
      "networks.a.providers[0]",
      "unknown key",
    ],
    [
      "duplicate name",
      {
        networks: {
          a: {
            chain_id: 1,
            providers: [
              { name: "x", url: "http://x.test" },
              { name: "x", url: "http://y.test" },
            ],
          },
        },
      },
      "networks.a.providers[1].name",
      "duplicate",
    ],
    [
      "only backups",
      { networks: { a: { chain_id: 1, providers: [{ url: "http://x.test", backup: true }] } } },
      "networks.a.providers",
      "backup",
    ],
    [
      "weight 0",
      {
        networks: { a: { chain_id: 1, providers: [{ url: "http://x.test", tiebreak_weight: 0 }] } },
      },
      "networks.a.providers[0].tiebreak_weight",
      "greater than 0",
    ],
    [
      "bad URL",
      { networks: { a: { chain_id: 1, providers: [{ url: "not a url" }] } } },
      "networks.a.providers[0].url",
      "URL",
    ],
    [
      "bad placeholder",
      { networks: { a: { chain_id: 1, providers: [{ url: "https://x.test/${lower}" }] } } },
      "networks.a.providers[0].url",
      "placeholder",
    ],
    [
      "placeholder in host",
      { networks: { a: { chain_id: 1, providers: [{ url: "https://${HOST}.test/" }] } } },
      "networks.a.providers[0].url",
      "host",
    ],
    [
      "placeholder in host after credentials",
      { networks: { a: { chain_id: 1, providers: [{ url: "https://user@${HOST}.test/" }] } } },
      "networks.a.providers[0].url",
      "host",
    ],
    [
      "regression: an unclosed placeholder (was accepted and sent to the provider as literal text)",
      { networks: { a: { chain_id: 1, providers: [{ url: "https://x.test/v2/${KEY" }] } } },
      "networks.a.providers[0].url",
      "unclosed placeholder",
    ],
    [
      "reserved network name",
      { networks: { status: { chain_id: 1, providers: [{ url: "http://x.test" }] } } },
      "networks.status",
      "network name",
    ],
    [
      "no providers",
      { networks: { a: { chain_id: 1, providers: [] } } },
      "networks.a.providers",
      "at least one provider",
    ],
  ])("%s is reported at its path", (_name, value, path, message) => {
    const result = parseConfig(value);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toContainEqual(
      expect.objectContaining({ path, message: expect.stringContaining(message) }),
    );
  });

  it("regression: a placeholder in the URL's credentials (user:${PASSWORD}@, as basic-auth providers hand out) was refused as standing in the host, leaving the password to be committed in plain text; now it resolves, encoded, into the credentials", () => {
    const template = "https://user:${NODE_PASSWORD}@nd-123.p2pify.com/rpc";
    const result = parseConfig({
      networks: { a: { chain_id: 1, providers: [{ url: template }] } },
    });
    expect(result.ok ? [] : result.problems).toEqual([]);
    expect(deriveProviderName(template)).toBe("p2pify");
    const resolved = resolveUrlTemplate(template, new Map([["NODE_PASSWORD", "p@ss:w/rd?#"]]));
    expect(typeof resolved).toBe("string");
    const url = new URL(resolved as string);
    expect([url.hostname, url.pathname, decodeURIComponent(url.password)]).toEqual([
      "nd-123.p2pify.com",
      "/rpc",
      "p@ss:w/rd?#",
    ]);
    expect(redactUrl(resolved as string)).toBe("https://nd-123.p2pify.com/rpc");
  });

  it.each(["https://x.test?key=${KEY}", "https://${USER}:${PASSWORD}@x.test"])(
    "regression: %s was refused as a placeholder in the host; now it is accepted",
    (url) => {
      const result = parseConfig({ networks: { a: { chain_id: 1, providers: [{ url }] } } });
      expect(result.ok ? [] : result.problems).toEqual([]);
    },
  );

  it.each([
    ["https://eth.llamarpc.com", "llamarpc"],
    ["https://www.example.org/rpc", "example"],
    ["http://127.0.0.1:8546", "127.0.0.1:8546"],
    ["http://localhost:9000/x", "localhost:9000"],
    ["https://eth-mainnet.g.alchemy.com/v2/${KEY}", "alchemy"],
  ])("name derived from %s is %s", (url, name) => {
    expect(deriveProviderName(url)).toBe(name);
  });

  it("derived names that collide get a suffix from their URL, not their position", () => {
    const config = configSchema.parse({
      networks: {
        a: {
          chain_id: 1,
          providers: [{ url: "https://a.llamarpc.com" }, { url: "https://b.llamarpc.com" }],
        },
      },
    });
    expect(
      buildModel(config, (u) => u)
        .networks.get("a")
        ?.providers.map((p) => p.name),
    ).toEqual([
      expect.stringMatching(/^llamarpc-[0-9a-f]{6}$/),
      expect.stringMatching(/^llamarpc-[0-9a-f]{6}$/),
    ]);
  });
});

describe("a provider URL's secret parts, scrubbed like secret values", () => {
  it.each([
    [
      "https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161",
      ["9aa3d95b3bc440fa88ea12eaa4456161"],
    ],
    ["https://q.example/rpc?format=json&apikey=QK-77f0e2c1d9a8", ["QK-77f0e2c1d9a8"]],
    ["https://node-user:pw1@basic.example/", ["pw1"]],
    ["https://x.example/rpc/1234?chain=5", []],
    ["http://127.0.0.1:8546", []],
    ["https://rpc.ankr.com/eth", []],
  ])("%s → %j", (url, parts) => {
    expect(secretPartsOf(url)).toEqual(parts);
  });

  it('regression: a chain id of 8 digits in a provider URL (Sepolia\'s 11155111) was taken for a key, so net_version answered "***" and every log line naming the chain id was masked (local stack); now a number is not a key', () => {
    expect(
      secretPartsOf(
        "https://api.pimlico.io/v2/11155111/rpc?chain=11155420&apikey=pim_AbCdEf123456",
      ),
    ).toEqual(["pim_AbCdEf123456"]);
  });
});

describe("redaction: origin kept, key-like parts masked", () => {
  it.each([
    [
      "https://eth-mainnet.g.alchemy.com/v2/AbCdEf0123456789xyzKEY",
      "https://eth-mainnet.g.alchemy.com/v2/***",
    ],
    [
      "https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161",
      "https://mainnet.infura.io/v3/***",
    ],
    [
      "https://rpc.example.com/?apikey=secret123&chain=1",
      "https://rpc.example.com?apikey=***&chain=***",
    ],
    ["https://user:pass@rpc.example.com/eth", "https://rpc.example.com/eth"],
    ["https://eth.llamarpc.com", "https://eth.llamarpc.com"],
    ["http://127.0.0.1:8545/", "http://127.0.0.1:8545"],
    ["https://x.quiknode.pro/abc123def456/", "https://x.quiknode.pro/***/"],
    ["not a url", "***"],
  ])("%s → %s", (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });

  it("a secret that looks like a word is masked: redaction works from the template", () => {
    const config = configSchema.parse({
      networks: {
        a: { chain_id: 1, providers: [{ url: "https://rpc.test/rpc/${WORD_KEY}?k=${Q}" }] },
      },
    });
    const values = new Map([
      ["WORD_KEY", "s3cr3t-token"],
      ["Q", "x"],
    ]);
    const provider = buildModel(config, (url) =>
      url.replace(/\$\{(\w+)\}/g, (_, name: string) => values.get(name) ?? ""),
    ).networks.get("a")?.providers[0];
    expect(provider?.url).toBe("https://rpc.test/rpc/s3cr3t-token?k=x");
    expect(provider?.redactedUrl).toBe("https://rpc.test/rpc/***?k=***");
  });

  it("answers to callers lose secret values only", () => {
    const scrubAnswer = makeSecretScrubber(["s3cr3t+key/9"]);
    expect(
      scrubAnswer('{"error":{"message":"bad key s3cr3t+key/9 at /rpc/s3cr3t%2Bkey%2F9"}}'),
    ).toBe('{"error":{"message":"bad key *** at /rpc/***"}}');
    const text = '{"jsonrpc":"2.0","id":1,"result":"0x1"}';
    expect(makeSecretScrubber([])(text)).toBe(text);
  });

  it("scrubs resolved URLs and secrets from free text", () => {
    const scrub = makeScrubber(
      [{ resolved: "https://rpc.test/v2/SECRETKEY123", redacted: "https://rpc.test/v2/***" }],
      ["SECRETKEY123"],
    );
    expect(scrub("failed: https://rpc.test/v2/SECRETKEY123 and SECRETKEY123 again")).toBe(
      "failed: https://rpc.test/v2/*** and *** again",
    );
  });
});

describe("routes of docs/behaviour.md §2", () => {
  it.each([
    ["POST", "/ethereum", { kind: "rpc", network: "ethereum" }],
    ["GET", "/ethereum/status", { kind: "status", network: "ethereum" }],
    ["GET", "/status", { kind: "status", network: null }],
    ["GET", "/health", { kind: "health" }],
    ["OPTIONS", "/ethereum", { kind: "preflight" }],
    ["GET", "/ethereum", { kind: "method_not_allowed", allow: "POST" }],
    ["POST", "/status", { kind: "method_not_allowed", allow: "GET" }],
    ["GET", "/", { kind: "not_found" }],
    ["GET", "/a/b/c", { kind: "not_found" }],
    [
      "GET",
      "/ethereum/get/eth_blockNumber",
      { kind: "get", network: "ethereum", method: "eth_blockNumber", params: "[]" },
    ],
    [
      "GET",
      "/ethereum/get/eth_getBalance/%5B%220x77%22%2C%22latest%22%5D",
      { kind: "get", network: "ethereum", method: "eth_getBalance", params: '["0x77","latest"]' },
    ],
    [
      "GET",
      "/ethereum/get/eth_call/[%22a/b%22]",
      { kind: "get", network: "ethereum", method: "eth_call", params: '["a/b"]' },
    ],
    ["GET", "/ethereum/get/eth_call/%E0%A4%A", { kind: "get", params: "%E0%A4%A" }],
    ["GET", '/ethereum/get/eth_call/["100%"]', { kind: "get", params: '["100%"]' }],
    ["GET", "/%E0%A4%A/status", { kind: "bad_path" }],
  ])("%s %s", (method, path, route) => {
    expect(matchRoute(method, path)).toMatchObject(route);
  });

  it.each([
    ["eth_blockNumber", "[]", true],
    ["eth_getBalance", '["0x1","latest"]', true],
    ["eth_x", "{}", false],
    ["eth_x", "[", false],
    ["bad method!", "[]", false],
  ])("GET mode %s %s", (method, params, ok) => {
    expect("body" in getModeBody(method, params)).toBe(ok);
  });

  it.each<[AnswerClass, number, { blockTimeSeconds: number; keyed: boolean }, string]>([
    [
      "immutable",
      200,
      { blockTimeSeconds: 12, keyed: false },
      "public, max-age=31536000, immutable",
    ],
    [
      "immutable",
      200,
      { blockTimeSeconds: 12, keyed: true },
      "private, max-age=31536000, immutable",
    ],
    ["unfinalized", 200, { blockTimeSeconds: 12, keyed: false }, "public, max-age=12"],
    ["realtime", 200, { blockTimeSeconds: 2.5, keyed: false }, "public, max-age=2"],
    ["realtime", 200, { blockTimeSeconds: 0.25, keyed: true }, "private, max-age=1"],
    ["never", 200, { blockTimeSeconds: 12, keyed: false }, "no-store"],
    ["immutable", 502, { blockTimeSeconds: 12, keyed: false }, "no-store"],
    ["realtime", 429, { blockTimeSeconds: 12, keyed: false }, "no-store"],
  ])("Cache-Control for a %s answer, HTTP %i, %o", (answerClass, status, options, header) => {
    expect(cacheControlFor(answerClass, status, options)).toBe(header);
  });
});
