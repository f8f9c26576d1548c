import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../infra/gateway-stack.ts";
import { type Synthesized, synthGateway } from "./synth.ts";

/**
 * Which requests reach the proxy Lambda in AWS. Locally the API Gateway emulator hands every
 * request to the handler (a `$default` route), so the end-to-end tests of routing (preflight
 * without a key, an unknown route answered 404 -32600, GET mode without a params segment, a
 * wrong HTTP method answered 405) prove the deployed behaviour only where the stack routes the
 * same requests to the handler. This test reads the stack's routes (`ROUTES` and the
 * synthesized template) and matches each request as API Gateway HTTP API does, so it tells
 * when the stack and the emulator differ.
 */

interface RouteKey {
  readonly method: string;
  readonly path: string;
}

interface Cors {
  readonly AllowOrigins?: string[];
  readonly AllowHeaders?: string[];
  readonly AllowMethods?: string[];
}

let synth: Synthesized;
let routeKeys: string[];
let cors: Cors | undefined;

beforeAll(() => {
  synth = synthGateway("dev");
  const resources = synth.template.toJSON().Resources as Record<
    string,
    { Type: string; Properties: Record<string, unknown> }
  >;
  const ofType = (type: string) =>
    Object.values(resources).filter((resource) => resource.Type === type);
  routeKeys = ofType("AWS::ApiGatewayV2::Route").map((route) => String(route.Properties.RouteKey));
  cors = ofType("AWS::ApiGatewayV2::Api")[0]?.Properties.CorsConfiguration as Cors | undefined;
});
afterAll(() => rmSync(synth.outdir, { recursive: true, force: true }));

function parseRouteKey(key: string): RouteKey | "$default" {
  if (key === "$default") return key;
  const [method = "", path = ""] = key.split(" ");
  return { method, path };
}

/** API Gateway HTTP API matching: `{name}` is one segment, `{name+}` the rest (one or more). */
function pathMatches(template: string, path: string): boolean {
  const want = template.split("/").filter((part) => part !== "");
  const got = path.split("/").filter((part) => part !== "");
  for (const [index, part] of want.entries()) {
    if (/^\{[^}]+\+\}$/.test(part)) return got.length > index;
    const segment = got[index];
    if (segment === undefined) return false;
    if (!/^\{[^}]+\}$/.test(part) && part !== segment) return false;
  }
  return got.length === want.length;
}

/** Whether the deployed API hands this request to the proxy Lambda, as the emulator does. */
function reachesHandler(method: string, path: string): boolean {
  return routeKeys.map(parseRouteKey).some((route) => {
    if (route === "$default") return true;
    return (route.method === "ANY" || route.method === method) && pathMatches(route.path, path);
  });
}

/** A preflight is answered as the emulator answers it: by a route, or by the API's CORS. */
function preflightAnswered(path: string): boolean {
  if (reachesHandler("OPTIONS", path)) return true;
  return (
    (cors?.AllowOrigins?.length ?? 0) > 0 &&
    (cors?.AllowHeaders ?? []).some((header) => header.toLowerCase() === "x-api-key")
  );
}

describe("route matching as API Gateway does it", () => {
  it.each<[string, string, boolean]>([
    ["/{network}", "/devnet", true],
    ["/{network}", "/devnet/status", false],
    ["/{network}", "/", false],
    ["/{network}/get/{method}/{params}", "/devnet/get/eth_chainId/%5B%5D", true],
    ["/{network}/get/{method}/{params}", "/devnet/get/eth_chainId", false],
    ["/status", "/status", true],
    ["/status", "/devnet", false],
    ["/{proxy+}", "/devnet/what/ever", true],
    ["/{proxy+}", "/devnet", true],
    ["/{proxy+}", "/", false],
    ["/{network}/{rest+}", "/devnet/get/eth_chainId", true],
  ])("%s against %s: %s", (template, path, expected) => {
    expect(pathMatches(template, path)).toBe(expected);
  });
});

describe("the stack's routes", () => {
  it("are ROUTES, each on the proxy Lambda", () => {
    expect([...routeKeys].sort()).toEqual(
      ROUTES.map((route) => `${route.method} ${route.path}`).sort(),
    );
  });

  it.each([
    ["POST", "/devnet"],
    ["GET", "/devnet/get/eth_chainId/%5B%5D"],
    ["GET", "/devnet/status"],
    ["GET", "/status"],
    ["GET", "/health"],
  ])("%s %s reaches the handler, in AWS as locally", (method, path) => {
    expect(reachesHandler(method, path)).toBe(true);
  });
});

// bug: the stack registers five exact routes while the emulator sends everything to the
// handler, so these requests get API Gateway's bare 404 in AWS but the handler's answer
// locally (issue 15 item 8). Each row turns red once the stack routes it like the emulator.
describe("requests that reach the handler locally but not in AWS", () => {
  it.fails("a CORS preflight without a key (OPTIONS /devnet) is answered", () => {
    expect(preflightAnswered("/devnet")).toBe(true);
  });

  it.fails("GET mode without a params segment (GET /devnet/get/eth_chainId)", () => {
    expect(reachesHandler("GET", "/devnet/get/eth_chainId")).toBe(true);
  });

  it.fails("an unknown route, answered 404 -32600 (POST /devnet/what/ever)", () => {
    expect(reachesHandler("POST", "/devnet/what/ever")).toBe(true);
  });

  it.fails("a wrong HTTP method, answered 405 (GET /devnet)", () => {
    expect(reachesHandler("GET", "/devnet")).toBe(true);
  });
});
