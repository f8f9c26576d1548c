import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../functions/core/chain/chain-head.ts";
import {
  cacheControlFor,
  getModeBody,
  matchRoute,
  type Route,
} from "../../functions/core/http/routes.ts";
import { classifyAnswer, planCall } from "../../functions/core/request/cache/cache-class.ts";
import { matchingKey } from "../../functions/proxy/api.ts";
import {
  bytesAsString,
  deepText,
  fuzzParams,
  hostileString,
  jsonText,
  methodName,
} from "./arbitraries.ts";

/** matchRoute / getModeBody (functions/core/http/routes.ts) and matchingKey on anything. */

/** A chain position with a finalized block, so calls about blocks may be cached. */
const HEAD: ChainHead = {
  latest: { number: 200, hash: `0x${"2".repeat(64)}` },
  safe: { number: 180, hash: `0x${"18".repeat(32)}` },
  finalized: { number: 150, hash: `0x${"15".repeat(32)}` },
  served: { block: 200, at: 0 },
  previousServed: null,
  updatedAt: 0,
  reorgSeenAt: 0,
};
const TIMING = { blockTimeSeconds: 12, keyed: false };

const KINDS = new Set<Route["kind"]>([
  "rpc",
  "get",
  "status",
  "health",
  "preflight",
  "bad_path",
  "not_found",
  "method_not_allowed",
]);

const httpMethod = fc.oneof(
  fc.constantFrom(
    "GET",
    "POST",
    "OPTIONS",
    "PUT",
    "DELETE",
    "HEAD",
    "PATCH",
    "get",
    "post",
    "Options",
  ),
  hostileString(10),
);

/** Path segments that matter: route words, traversal, broken and double percent-encoding, URLs. */
const segment = fc.oneof(
  fc.constantFrom(
    "devnet",
    "get",
    "status",
    "health",
    "eth_chainId",
    "..",
    ".",
    "",
    "%",
    "%2",
    "%zz",
    "%ED%A0%80",
    "%E0%A4%A",
    "%C0%AF",
    "%2F",
    "%252F",
    "%00",
    "http%3A%2F%2Fevil.example",
    "http:",
    "%5B%5D",
    "[]",
    "%5B%22latest%22%5D",
  ),
  hostileString(8),
  fc.webSegment(),
);

const path = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.array(segment, { maxLength: 7 }).map((parts) => `/${parts.join("/")}`),
  },
  { weight: 2, arbitrary: hostileString(60) },
  { weight: 1, arbitrary: bytesAsString },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom("/a", "/%41", "/..", "/devnet/get/eth_call/", "%"),
        fc.integer({ min: 1000, max: 40_000 }),
      )
      .map(([unit, times]) => unit.repeat(times)),
  },
);

function route(method: string, rawPath: string): Route {
  let result: Route | undefined;
  expect(() => {
    result = matchRoute(method, rawPath);
  }).not.toThrow();
  if (result === undefined) throw new Error("no route");
  expect(KINDS.has(result.kind)).toBe(true);
  return result;
}

describe("matchRoute never throws", () => {
  it("arbitrary methods and paths (bytes, % sequences, .., very long)", () => {
    fc.assert(
      fc.property(httpMethod, path, (method, rawPath) => {
        const result = route(method, rawPath);
        const verb = method.toUpperCase();
        const segments = rawPath.split("/").filter((part) => part !== "");
        const [first, second] = segments;
        if (verb === "OPTIONS") expect(result.kind).toBe("preflight");
        switch (result.kind) {
          case "preflight":
            expect(verb).toBe("OPTIONS");
            break;
          case "rpc":
            expect(verb).toBe("POST");
            expect(segments.length).toBe(1);
            expect(result.network).toBe(decodeURIComponent(first ?? ""));
            break;
          case "health":
            expect(verb).toBe("GET");
            expect(segments).toEqual(["health"]);
            break;
          case "status":
            expect(verb).toBe("GET");
            if (result.network === null) expect(segments).toEqual(["status"]);
            else {
              expect(segments).toEqual([first, "status"]);
              expect(result.network).toBe(decodeURIComponent(first ?? ""));
            }
            break;
          case "get": {
            expect(verb).toBe("GET");
            expect(second).toBe("get");
            expect(segments.length).toBeGreaterThanOrEqual(3);
            expect(typeof result.params).toBe("string");
            let built: ReturnType<typeof getModeBody> | undefined;
            expect(() => {
              built = getModeBody(result.method, result.params);
            }).not.toThrow();
            if (built === undefined) throw new Error("getModeBody returned nothing");
            if ("body" in built) {
              const call = JSON.parse(built.body) as { method: string; params: unknown };
              expect(call.method).toBe(result.method);
              expect(Array.isArray(call.params)).toBe(true);
            } else {
              expect(built.error).toMatch(/^GET mode: /);
            }
            break;
          }
          case "bad_path":
            expect(result.message).toMatch(/not valid URL encoding/);
            expect(segments.some((segment) => !decodes(segment))).toBe(true);
            break;
          case "method_not_allowed":
            expect(["GET", "POST"]).toContain(result.allow);
            expect(verb).not.toBe(result.allow);
            break;
          case "not_found": {
            // Only paths of no known shape: nothing, or a second segment that is neither
            // `status` (alone) nor `get` followed by a method.
            const status = segments.length === 2 && second === "status";
            const get = second === "get" && segments.length >= 3;
            expect(segments.length === 0 || (segments.length >= 2 && !status && !get)).toBe(true);
            break;
          }
        }
      }),
      fuzzParams(2000),
    );
  });

  it("GET mode paths built from any method and any URL-encoded params text", () => {
    fc.assert(
      fc.property(
        methodName,
        fc.oneof(
          jsonText,
          hostileString(40),
          fc.jsonValue().map((value) => JSON.stringify(value)),
        ),
        fc.boolean(),
        (method, params, encode) => {
          const encodedParams = encode ? encodeURIComponentLoose(params) : params;
          const result = route(
            "GET",
            `/devnet/get/${encodeURIComponentLoose(method)}/${encodedParams}`,
          );
          // An encoded method is one non-empty segment: the path is always GET mode.
          if (result.kind !== "get") throw new Error(`routed as ${result.kind}`);
          expect(result.network).toBe("devnet");
          expect(result.method).toBe(method);
          if (encodedParams.split("/").every((part) => part === "")) {
            expect(result.params).toBe("[]");
          } else if (encode) {
            expect(result.params).toBe(params.toWellFormed());
          } else {
            // Not encoded: decoded when it decodes, else taken as is.
            expect(result.params).toBe(decodes(params) ? decodeURIComponent(params) : params);
          }
          const built = getModeBody(result.method, result.params);
          if ("body" in built) {
            const call = JSON.parse(built.body) as { method: string; params: unknown };
            expect(call.method).toBe(method);
            expect(Array.isArray(call.params)).toBe(true);
          } else {
            expect(built.error).toMatch(/^GET mode: /);
          }
          // Errors and failures are never cached, whatever the method and params.
          const sentParams =
            "body" in built ? (JSON.parse(built.body) as { params: unknown }).params : [];
          const plan = planCall(result.method, sentParams, HEAD);
          const error = { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "x" } };
          const answerClass = classifyAnswer(plan, error, HEAD).class;
          expect(answerClass).toBe("never");
          expect(cacheControlFor(answerClass, 200, TIMING)).toBe("no-store");
          expect(cacheControlFor("immutable", 502, TIMING)).toBe("no-store");
        },
      ),
      fuzzParams(1500),
    );
  });
});

describe("getModeBody never throws", () => {
  it("arbitrary method and params texts", () => {
    fc.assert(
      fc.property(
        fc.oneof(methodName, hostileString(140)),
        fc.oneof(jsonText, hostileString(80), bytesAsString),
        (method, params) => {
          const built = getModeBody(method, params);
          if ("body" in built) {
            const call = JSON.parse(built.body) as {
              jsonrpc: string;
              method: string;
              params: unknown;
            };
            expect(call.jsonrpc).toBe("2.0");
            expect(call.method).toBe(method);
            expect(Array.isArray(call.params)).toBe(true);
          } else {
            // Refused only for a method that is no method name, or params that are no array.
            expect(built.error).toMatch(/^GET mode: /);
            expect(!/^[A-Za-z][A-Za-z0-9_]{0,127}$/.test(method) || !isJsonArrayText(params)).toBe(
              true,
            );
          }
        },
      ),
      fuzzParams(1500),
    );
  });

  // getModeBody re-serialised the parsed params with JSON.stringify, which is recursive and
  // threw RangeError ("Maximum call stack size exceeded") at a few thousand levels; handleEvent
  // did not catch it, so the runtime answered 500 "internal gateway error".
  it("regression: deeply nested params (20 000 – 50 000 levels) threw; now the params text is spliced in as is", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 20_000, max: 50_000 }),
        fc.constantFrom("array", "object", "mixed") as fc.Arbitrary<"array" | "object" | "mixed">,
        (depth, shape) => {
          const params = `[${deepText(depth, shape)}]`;
          expect(getModeBody("eth_call", params)).toEqual({
            body: `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${params}}`,
          });
        },
      ),
      fuzzParams(5),
    );
  });
});

describe("matchingKey", () => {
  const known = "k3y-ä€😀-known";
  const hash = createHash("sha256").update(known, "utf8").digest("hex");
  const other = createHash("sha256").update("another key", "utf8").digest("hex");

  it("never throws on a key of any length or content, and accepts only the right key", () => {
    const key = fc.oneof(
      fc.constant(undefined),
      fc.constant(known),
      fc.constant(`${known} `),
      hostileString(300),
      bytesAsString,
      fc.integer({ min: 0, max: 70_000 }).map((length) => "k".repeat(length)),
    );
    fc.assert(
      fc.property(key, fc.constantFrom([hash], [other, hash], [other]), (candidate, hashes) => {
        let accepted: boolean | undefined;
        expect(() => {
          accepted =
            matchingKey(
              candidate,
              hashes.map((sha256) => ({ sha256 })),
            ) !== null;
        }).not.toThrow();
        expect(accepted).toBe(candidate === known && hashes.includes(hash));
      }),
      fuzzParams(1000),
    );
  });

  it("matches nothing, and never throws, when no key is configured", () => {
    fc.assert(
      fc.property(fc.option(hostileString(40), { nil: undefined }), (candidate) => {
        expect(matchingKey(candidate, [])).toBeNull();
      }),
      fuzzParams(200),
    );
  });
});

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

function isJsonArrayText(text: string): boolean {
  try {
    return Array.isArray(JSON.parse(text));
  } catch {
    return false;
  }
}

/** encodeURIComponent that does not throw on lone surrogates (they become U+FFFD first). */
function encodeURIComponentLoose(text: string): string {
  return encodeURIComponent(text.toWellFormed());
}
