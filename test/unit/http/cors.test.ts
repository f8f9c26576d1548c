import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import {
  allowedOrigin,
  corsOriginProblem,
  corsResponseHeaders,
  isPreflight,
  preflightHeaders,
} from "../../../functions/core/http/cors.ts";

const APP = "https://app.example.com";
const OTHER = "https://evil.example.net";
const LISTED = [APP, "http://localhost:3000"];

describe("allowedOrigin", () => {
  it.each([
    ["any origin, browser request", ["*"], APP, "*"],
    ["any origin, no Origin header", ["*"], undefined, "*"],
    ["listed origin", LISTED, APP, APP],
    ["second listed origin", LISTED, "http://localhost:3000", "http://localhost:3000"],
    ["unlisted origin", LISTED, OTHER, null],
    ["origin differing only in port", LISTED, "http://localhost:3001", null],
    ["origin differing only in scheme", LISTED, "http://app.example.com", null],
    ["no Origin header with a list", LISTED, undefined, null],
    ["empty Origin header", LISTED, "", null],
  ] as const)("%s", (_name, origins, origin, expected) => {
    expect(allowedOrigin(origins, origin)).toBe(expected);
  });
});

describe("corsResponseHeaders", () => {
  it("allows any origin and exposes the gateway's diagnostic headers", () => {
    expect(corsResponseHeaders(["*"], APP)).toEqual({
      "access-control-allow-origin": "*",
      "access-control-expose-headers":
        "x-gateway-provider,x-gateway-attempts,x-gateway-cache,x-gateway-head",
    });
  });

  it("echoes a listed origin and says the answer varies by origin", () => {
    expect(corsResponseHeaders(LISTED, APP)).toEqual({
      vary: "origin",
      "access-control-allow-origin": APP,
      "access-control-expose-headers":
        "x-gateway-provider,x-gateway-attempts,x-gateway-cache,x-gateway-head",
    });
  });

  it("gives an unlisted origin nothing but the vary header", () => {
    expect(corsResponseHeaders(LISTED, OTHER)).toEqual({ vary: "origin" });
  });
});

describe("preflight", () => {
  it.each([
    ["OPTIONS with Origin and Access-Control-Request-Method", "OPTIONS", true, true, true],
    ["lower-case method", "options", true, true, true],
    ["OPTIONS without Origin", "OPTIONS", false, true, false],
    ["OPTIONS without Access-Control-Request-Method", "OPTIONS", true, false, false],
    ["GET with both headers", "GET", true, true, false],
  ] as const)("%s", (_name, method, withOrigin, withRequestMethod, expected) => {
    const headers = {
      ...(withOrigin ? { origin: APP } : {}),
      ...(withRequestMethod ? { "access-control-request-method": "POST" } : {}),
    };
    expect(isPreflight(method, headers)).toBe(expected);
  });

  it("answers an allowed origin with methods, headers and max age", () => {
    expect(preflightHeaders(LISTED, APP)).toEqual({
      vary: "origin",
      "access-control-allow-origin": APP,
      "access-control-expose-headers":
        "x-gateway-provider,x-gateway-attempts,x-gateway-cache,x-gateway-head",
      "access-control-allow-methods": "GET,POST,OPTIONS",
      "access-control-allow-headers": "content-type,x-api-key",
      "access-control-max-age": "86400",
    });
  });

  it("answers an unlisted origin without any CORS header", () => {
    expect(preflightHeaders(LISTED, OTHER)).toEqual({ vary: "origin" });
  });
});

describe("cors_origins in the config", () => {
  const network = { chain_id: 1, providers: [{ url: "https://rpc.example.com" }] };
  const parse = (cors_origins: unknown) =>
    configSchema.safeParse({ networks: { ethereum: network }, cors_origins });

  it('defaults to ["*"]', () => {
    const parsed = configSchema.parse({ networks: { ethereum: network } });
    expect(parsed.cors_origins).toEqual(["*"]);
  });

  it.each([[["*"]], [[APP]], [[APP, "http://localhost:3000", "https://app.example.com:8443"]]])(
    "accepts %j",
    (origins) => {
      expect(parse(origins).success).toBe(true);
    },
  );

  it.each([
    ["an empty list", [], "at least one origin"],
    ["* with others", ["*", APP], "use it alone"],
    ["a path", ["https://app.example.com/app"], 'use "https://app.example.com"'],
    ["a trailing slash", ["https://app.example.com/"], 'use "https://app.example.com"'],
    ["upper case", ["https://App.Example.com"], 'use "https://app.example.com"'],
    ["a default port", ["https://app.example.com:443"], 'use "https://app.example.com"'],
    ["a wildcard host", ["https://*.example.com"], "wildcards"],
    ["another scheme", ["ftp://files.example.com"], "https:// or http://"],
    ["no scheme", ["app.example.com"], "not an origin"],
  ])("refuses %s with a fix", (_name, origins, hint) => {
    const parsed = parse(origins);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message).join("\n")).toContain(hint);
  });

  it("names the bad entry", () => {
    expect(corsOriginProblem("https://app.example.com/x")).toContain('"https://app.example.com/x"');
  });
});
