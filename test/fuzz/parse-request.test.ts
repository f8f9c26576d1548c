import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Call,
  errorResponse,
  type InvalidMember,
  isCall,
  type ParsedRequest,
  parseRequest,
  type RequestLimits,
} from "../../functions/core/jsonrpc/jsonrpc.ts";
import {
  assertNotPolluted,
  bytesAsString,
  callTextArb,
  deepJsonText,
  fuzzParams,
  hostileString,
  jsonText,
  jsonValue,
  methodName,
  prototypeSnapshot,
} from "./arbitraries.ts";

/**
 * parseRequest (functions/core/jsonrpc/jsonrpc.ts) against anything a caller can send: it never
 * throws, always answers one of the documented kinds, renders every error as valid JSON and
 * leaves the built-in prototypes alone.
 */

const roomy: RequestLimits = { maxBodyBytes: 1_048_576, maxBatch: 100 };
let pristine = "";

beforeAll(() => {
  pristine = prototypeSnapshot();
});
afterAll(() => assertNotPolluted(pristine));

function isValidIdValue(value: unknown): boolean {
  return value === null || typeof value === "string" || typeof value === "number";
}

/** The documented invariants of any result, whatever the input. */
function checkShape(body: string, parsed: ParsedRequest, limits: RequestLimits): void {
  switch (parsed.kind) {
    case "error": {
      expect([-32700, -32600]).toContain(parsed.code);
      expect(parsed.status).toBe(400);
      expect(parsed.message.length).toBeGreaterThan(0);
      const rendered = JSON.parse(errorResponse(parsed.rawId, parsed.code, parsed.message)) as {
        jsonrpc: string;
        id: unknown;
        error: { code: number; message: string };
      };
      expect(rendered.jsonrpc).toBe("2.0");
      expect(isValidIdValue(rendered.id)).toBe(true);
      expect(rendered.error).toEqual({ code: parsed.code, message: parsed.message });
      if (/over the limit/.test(parsed.message)) {
        expect(parsed.message).toMatch(/max_body_bytes|max_batch/);
      }
      break;
    }
    case "single":
      checkCall(parsed.call, 0);
      expect(parsed.call.raw).toBe(body);
      break;
    case "batch": {
      const value = JSON.parse(body) as unknown[];
      expect(Array.isArray(value)).toBe(true);
      expect(parsed.members.length).toBe(value.length);
      expect(parsed.members.length).toBeGreaterThan(0);
      expect(parsed.members.length).toBeLessThanOrEqual(limits.maxBatch);
      parsed.members.forEach((member, position) => {
        expect(member.position).toBe(position);
        if (isCall(member)) {
          checkCall(member, position);
          // The raw text of a member is the member, as the caller wrote it.
          expect(JSON.stringify(JSON.parse(member.raw))).toBe(JSON.stringify(value[position]));
        } else {
          checkInvalid(member);
        }
      });
      break;
    }
    default:
      throw new Error(`undocumented kind ${(parsed as { kind: unknown }).kind}`);
  }
}

function checkCall(call: Call, position: number): void {
  expect(call.position).toBe(position);
  expect(typeof call.method).toBe("string");
  expect(call.method.length).toBeGreaterThan(0);
  expect(
    call.params === undefined || (typeof call.params === "object" && call.params !== null),
  ).toBe(true);
  if (call.rawId !== null) expect(isValidIdValue(JSON.parse(call.rawId))).toBe(true);
  // What the gateway would answer for a denied call must be valid JSON too.
  JSON.parse(errorResponse(call.rawId ?? "null", -32601, `method ${call.method} is not allowed`));
}

function checkInvalid(member: InvalidMember): void {
  expect(member.message.length).toBeGreaterThan(0);
  const rendered = JSON.parse(errorResponse(member.rawId, -32600, member.message)) as {
    id: unknown;
  };
  expect(isValidIdValue(rendered.id)).toBe(true);
}

function parseAndCheck(body: string, limits: RequestLimits = roomy): ParsedRequest {
  let parsed: ParsedRequest | undefined;
  expect(() => {
    parsed = parseRequest(body, limits);
  }).not.toThrow();
  if (parsed === undefined) throw new Error("no result");
  checkShape(body, parsed, limits);
  return parsed;
}

describe("parseRequest never throws and answers a documented kind", () => {
  it("arbitrary strings (code points, syntax characters, lone surrogates)", () => {
    fc.assert(
      fc.property(hostileString(200), (body) => {
        parseAndCheck(body);
      }),
      fuzzParams(2000),
    );
  });

  it("random bytes decoded as UTF-8, Latin-1 and UTF-16 (invalid UTF-8 becomes U+FFFD)", () => {
    fc.assert(
      fc.property(bytesAsString, (body) => {
        parseAndCheck(body);
      }),
      fuzzParams(1000),
    );
  });

  it("arbitrary JSON values (fc.jsonValue), alone and as batch members", () => {
    fc.assert(
      fc.property(jsonValue(), fc.boolean(), (value, asBatch) => {
        const body = JSON.stringify(asBatch ? [value] : value);
        parseAndCheck(body);
      }),
      fuzzParams(1000),
    );
  });

  it("JSON text with hostile keys (__proto__, constructor, prototype, duplicates), escapes, huge numbers", () => {
    fc.assert(
      fc.property(jsonText, (body) => {
        parseAndCheck(body);
        assertNotPolluted(pristine);
      }),
      fuzzParams(1500),
    );
  });

  it("prototype-pollution payloads in calls and batches", () => {
    const payload = fc.constantFrom(
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","__proto__":{"polluted":1,"isAdmin":true}}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","constructor":{"prototype":{"polluted":1}}}',
      '{"__proto__":{"method":"eth_chainId","id":7}}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":{"__proto__":{"polluted":1}}}',
      '[{"__proto__":{"polluted":1}},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","prototype":{}}]',
      '{"jsonrpc":"2.0","id":{"__proto__":{"polluted":1}},"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":1,"method":"__proto__","params":{"constructor":{"prototype":{"a":1}}}}',
    );
    fc.assert(
      fc.property(payload, (body) => {
        const parsed = parseAndCheck(body);
        assertNotPolluted(pristine);
        if (parsed.kind === "single") {
          // The call's data is the caller's, not inherited from a prototype.
          expect(Object.getPrototypeOf(parsed.call)).toBe(Object.prototype);
        }
      }),
      fuzzParams(50),
    );
  });

  it("deep nesting, up to 12 000 levels, as the body and as params", () => {
    fc.assert(
      fc.property(deepJsonText, fc.boolean(), (deep, asParams) => {
        const body = asParams
          ? `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[${deep}]}`
          : deep;
        parseAndCheck(body);
      }),
      fuzzParams(60),
    );
  });

  it("bodies and batches right at the limits (one byte / one call under, at and over)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: -1, max: 1 }),
        fc.integer({ min: -2, max: 2 }),
        fc.constantFrom("ascii", "multibyte", "surrogate"),
        (calls, batchDelta, byteDelta, filler) => {
          const pad = filler === "ascii" ? "x" : filler === "multibyte" ? "é€😀" : "\ud800";
          const batch = Array.from({ length: calls }, (_, id) => ({
            jsonrpc: "2.0",
            id,
            method: "eth_getBalance",
            params: [pad.repeat(id % 5), "latest"],
          }));
          const body = JSON.stringify(batch);
          const bytes = Buffer.byteLength(body, "utf8");
          const limits = {
            maxBatch: Math.max(1, calls + batchDelta),
            maxBodyBytes: Math.max(1, bytes + byteDelta),
          };
          const parsed = parseAndCheck(body, limits);
          if (bytes > limits.maxBodyBytes) {
            expect(parsed.kind === "error" && parsed.status).toBe(400);
            expect(parsed.kind === "error" && parsed.message).toContain(
              String(limits.maxBodyBytes),
            );
          } else if (calls > limits.maxBatch) {
            expect(parsed.kind === "error" && parsed.status).toBe(400);
            expect(parsed.kind === "error" && parsed.message).toContain(String(limits.maxBatch));
          } else {
            expect(parsed.kind).toBe("batch");
          }
        },
      ),
      fuzzParams(300),
    );
  });

  it("huge arrays: 100 000 members against max_batch 100", () => {
    const body = `[${Array.from({ length: 100_000 }, (_, id) => `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`).join(",")}]`;
    const parsed = parseAndCheck(body, { maxBodyBytes: 10 * 1024 * 1024, maxBatch: 100 });
    expect(parsed.kind === "error" && parsed.status).toBe(400);
  });
});

describe("valid JSON-RPC requests are understood", () => {
  it("a single call comes back as `single` with its method, params and raw id", () => {
    fc.assert(
      fc.property(callTextArb, ({ spec, text }) => {
        const parsed = parseAndCheck(text);
        if (parsed.kind !== "single") throw new Error(`parsed as ${parsed.kind}`);
        expect(parsed.call.method).toBe(spec.method);
        expect(parsed.call.rawId === null).toBe(!spec.hasId);
        if (parsed.call.rawId !== null) {
          expect(JSON.stringify(JSON.parse(parsed.call.rawId))).toBe(JSON.stringify(spec.id));
        }
        if (spec.hasParams) {
          expect(JSON.stringify(parsed.call.params)).toBe(JSON.stringify(spec.params));
        } else {
          expect(parsed.call.params).toBeUndefined();
        }
      }),
      fuzzParams(1000),
    );
  });

  it("a batch comes back as `batch` with every method in the caller's order", () => {
    fc.assert(
      fc.property(
        fc.array(callTextArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.constantFrom("", " ", "\n", "\t\r\n"), { minLength: 13, maxLength: 13 }),
        (calls, ws) => {
          const body = `${ws[0]}[${calls.map(({ text }, i) => `${ws[i + 1]}${text}`).join(",")}]`;
          const parsed = parseAndCheck(body);
          if (parsed.kind !== "batch") throw new Error(`parsed as ${parsed.kind}`);
          expect(parsed.members.map((member) => isCall(member) && member.method)).toEqual(
            calls.map(({ spec }) => spec.method),
          );
          parsed.members.forEach((member, position) => {
            const spec = calls[position]?.spec;
            if (!isCall(member) || spec === undefined) throw new Error("not a call");
            expect(member.rawId === null).toBe(!spec.hasId);
            expect(JSON.stringify(JSON.parse(member.raw))).toBe(
              JSON.stringify(JSON.parse(calls[position]?.text ?? "")),
            );
          });
        },
      ),
      fuzzParams(400),
    );
  });
});

describe("regression: duplicate `id` members", () => {
  // JSON.parse keeps the LAST `id`; memberValueSpan (json-raw.ts), and so rawIdOf in
  // parseRequest, read the FIRST. `{"id":{"x":1},"id":1,"method":"eth_chainId"}` was taken as
  // a call whose raw id is `{"x":1}` (an object id, echoed to the caller), and in a batch the
  // upstream saw a different id than the gateway put there. Upstreams disagree on which
  // duplicate wins, so such a call is now refused.
  it("a call with two `id` members was read with the first; now it is refused with -32600", () => {
    fc.assert(
      fc.property(
        jsonValue({ maxDepth: 2 }),
        methodName,
        fc.boolean(),
        (firstId, method, asBatch) => {
          const call = `{"id":${JSON.stringify(firstId)},"jsonrpc":"2.0","id":1,"method":${JSON.stringify(method)}}`;
          const parsed = parseAndCheck(asBatch ? `[${call}]` : call);
          let refusal: { rawId: string | null; message: string };
          if (parsed.kind === "batch") {
            const [member] = parsed.members;
            if (member === undefined || isCall(member)) throw new Error("the call was accepted");
            refusal = member;
          } else if (parsed.kind === "error") {
            expect(parsed).toMatchObject({ status: 400, code: -32600 });
            refusal = parsed;
          } else {
            throw new Error("the call was accepted");
          }
          expect(parsed.kind).toBe(asBatch ? "batch" : "error");
          expect(refusal).toMatchObject({
            rawId: "null",
            message: 'invalid request: "id" appears twice',
          });
        },
      ),
      fuzzParams(200),
    );
  });
});
