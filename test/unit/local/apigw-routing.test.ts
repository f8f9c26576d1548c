import { describe, expect, it } from "vitest";
import { decodeHttpApiPath } from "../../../local/apigw-event.ts";
import { routerFor } from "../../../local/apigw-routing.ts";

/** How the emulator picks an HTTP API route and decodes the path it hands the function. */

describe("route matching", () => {
  const route = routerFor([
    "GET /status",
    "GET /{network}/status",
    "GET /{proxy+}",
    "POST /{proxy+}",
    "POST /",
    "ANY /any/{id}",
    "GET /any/{id}",
    "GET /a/{b}/{rest+}",
    "$default",
  ]);

  it.each([
    ["POST", "/ethereum", { routeKey: "POST /{proxy+}", pathParameters: { proxy: "ethereum" } }],
    ["POST", "/", { routeKey: "POST /" }],
    ["GET", "/status", { routeKey: "GET /status" }],
    ["get", "/status", { routeKey: "GET /status" }],
    ["GET", "/x/status", { routeKey: "GET /{network}/status", pathParameters: { network: "x" } }],
    ["GET", "//status", { routeKey: "GET /{proxy+}", pathParameters: { proxy: "/status" } }],
    ["GET", "/x/status/", { routeKey: "GET /{proxy+}", pathParameters: { proxy: "x/status/" } }],
    ["GET", "/any/7", { routeKey: "GET /any/{id}", pathParameters: { id: "7" } }],
    ["PUT", "/any/7", { routeKey: "ANY /any/{id}", pathParameters: { id: "7" } }],
    ["PUT", "/any/", { routeKey: "$default" }],
    [
      "GET",
      "/a/b/c/d",
      { routeKey: "GET /a/{b}/{rest+}", pathParameters: { b: "b", rest: "c/d" } },
    ],
    ["GET", "/a/b/", { routeKey: "GET /{proxy+}", pathParameters: { proxy: "a/b/" } }],
    ["GET", "/", { routeKey: "$default" }],
    ["DELETE", "/ethereum", { routeKey: "$default" }],
  ])("routes %s %s to %j", (method, path, expected) => {
    expect(route(method, path)).toEqual(expected);
  });

  it("answers null without $default when nothing matches", () => {
    expect(routerFor(["GET /status"])("GET", "/other")).toBeNull();
    expect(routerFor(["GET /{proxy+}"])("GET", "/")).toBeNull();
  });
});

describe("path decoding", () => {
  it.each([
    ["/ethereum", "/ethereum"],
    ["/a b/é", "/a b/é"],
    ["/a?b", "/a"],
    ["/a%3Fb", "/a"],
    ["/a%2Fb", "/a/b"],
    ["/%252F", "//"],
    ["/%2525", "/%"],
    ["/%25zz", undefined],
    ["/%zz", undefined],
    ["/", "/"],
  ])("hands the function %j as %j", (raw, decoded) => {
    expect(decodeHttpApiPath(raw)).toBe(decoded);
  });
});
