import { createHash } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import fc from "fast-check";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_METHODS_DENY } from "../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import {
  bytesAsString,
  callTextArb,
  deepJsonText,
  deepText,
  fuzzParams,
  hostileString,
  jsonText,
  methodName,
} from "./arbitraries.ts";

/**
 * handleEvent through a real proxy runtime: the local stack (dynalite state store, undici
 * upstream) in front of one anvil node. Events are built by hand, so they can be anything a
 * Lambda could be handed, including shapes API Gateway never sends.
 */

const CHAIN_ID = 31337;
const NETWORK = "fuzznet";
const API_KEY = "fuzz-key-0123456789";
const ALLOWED_STATUS = new Set([200, 204, 400, 401, 404, 405, 413, 502]);
/** No answer may take longer than this; the config bounds an upstream attempt to 2 s. */
const ANSWER_BOUND_MS = 15_000;

let node: AnvilNode;
let open: LocalStack;
let keyed: LocalStack;
const agent = new Agent({ keepAliveTimeout: 1000 });

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  const config = (apiKeys: Array<{ name: string; sha256: string }>) => ({
    max_body_bytes: 8192,
    max_batch: 8,
    request_timeout_ms: 2000,
    request_deadline_ms: 4000,
    api_keys: apiKeys,
    // anvil_* and friends change the devnet (or mine forever); no real provider has them.
    methods_deny: [
      ...DEFAULT_METHODS_DENY,
      "anvil_*",
      "evm_*",
      "hardhat_*",
      "eth_send*",
      "eth_sign*",
      "debug_*",
      "trace_*",
      "ots_*",
    ],
    networks: { [NETWORK]: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: node.url }] } },
  });
  [open, keyed] = await Promise.all([
    startLocalStack({ config: config([]) }),
    startLocalStack({
      config: config([
        { name: "fuzz", sha256: createHash("sha256").update(API_KEY, "utf8").digest("hex") },
      ]),
    }),
  ]);
}, 60_000);

afterAll(async () => {
  await agent.close();
  await Promise.all([open?.close(), keyed?.close()]);
  await node?.stop();
});

// ---------------------------------------------------------------------------------------
// Events

/** Calls anvil answers with a result, so answers pass through the id splicing. */
const servedCall = fc
  .tuple(
    fc.constantFrom(
      ["eth_chainId", "[]"],
      ["eth_blockNumber", "[]"],
      ["net_version", "[]"],
      ["eth_getBlockByNumber", '["latest",false]'],
      ["eth_getBalance", '["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","latest"]'],
    ),
    fc.oneof(
      fc.integer().map(String),
      fc.constant('"x"'),
      fc.constant("null"),
      fc.constant("1e400"),
    ),
  )
  .map(
    ([[method, params], id]) =>
      `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`,
  );

const bodyText = fc.oneof(
  { weight: 3, arbitrary: servedCall },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.oneof(
          servedCall,
          callTextArb.map(({ text }) => text),
        ),
        { minLength: 1, maxLength: 9 },
      )
      .map((calls) => `[${calls.join(",")}]`),
  },
  { weight: 5, arbitrary: callTextArb.map(({ text }) => text) },
  {
    weight: 3,
    arbitrary: fc
      .array(callTextArb, { minLength: 1, maxLength: 10 })
      .map((calls) => `[${calls.map(({ text }) => text).join(",")}]`),
  },
  { weight: 2, arbitrary: jsonText },
  { weight: 2, arbitrary: hostileString(120) },
  { weight: 2, arbitrary: bytesAsString },
  {
    weight: 1,
    arbitrary: deepJsonText
      .filter((text) => text.length < 8000)
      .map((deep) => `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[${deep}]}`),
  },
  {
    // Right at max_body_bytes (8192).
    weight: 1,
    arbitrary: fc.integer({ min: 8100, max: 8300 }).map((size) => {
      const head = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["';
      return `${head}${"x".repeat(Math.max(0, size - head.length - 3))}"]}`;
    }),
  },
);

const body = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ body: undefined, isBase64Encoded: false }) },
  { weight: 6, arbitrary: bodyText.map((text) => ({ body: text, isBase64Encoded: false })) },
  {
    weight: 2,
    arbitrary: bodyText.map((text) => ({
      body: Buffer.from(text, "utf8").toString("base64"),
      isBase64Encoded: true,
    })),
  },
  {
    // Random bytes, base64 flag on or off; and text that is not base64 at all with the flag on.
    weight: 2,
    arbitrary: fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.boolean()).map(([bytes, flag]) => ({
      body: flag ? Buffer.from(bytes).toString("base64") : Buffer.from(bytes).toString("latin1"),
      isBase64Encoded: flag,
    })),
  },
  {
    weight: 1,
    arbitrary: hostileString(60).map((text) => ({ body: text, isBase64Encoded: true })),
  },
);

const getParams = fc.oneof(
  fc.constantFrom(
    "",
    "%5B%5D",
    "[]",
    '["latest",false]',
    "%5B%22latest%22%2Cfalse%5D",
    "%",
    "[",
    "null",
  ),
  fc.jsonValue({ maxDepth: 2 }).map((value) => encodeURIComponent(JSON.stringify(value))),
  hostileString(30),
);

const anyPath = fc.oneof(
  fc.constantFrom(
    `/${NETWORK}`,
    `/${NETWORK}/status`,
    "/status",
    "/health",
    "/",
    "",
    "/nope",
    "/__proto__",
    "/constructor/status",
    "/http%3A%2F%2F127.0.0.1%3A1",
    `/${NETWORK}/../status`,
    `/${NETWORK}/get`,
    "/%zz",
    `/${NETWORK}/get/%zz/[]`,
    "//health",
    `/${NETWORK}/status/extra`,
  ),
  hostileString(40),
  fc.array(hostileString(6), { maxLength: 5 }).map((parts) => `/${parts.join("/")}`),
  fc.integer({ min: 1, max: 20_000 }).map((n) => `/${"a/".repeat(n)}`),
);

const anyMethod = fc.oneof(
  fc.constantFrom("POST", "GET", "OPTIONS", "PUT", "DELETE", "HEAD", "post", "Get"),
  hostileString(8),
);

/** Mostly the real routes with their methods (so requests reach the upstream), else anything. */
const target = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ method: "POST", path: `/${NETWORK}` }) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(methodName, getParams)
      .map(([method, params]) => ({ method: "GET", path: `/${NETWORK}/get/${method}/${params}` })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(`/${NETWORK}/status`, "/status", "/health")
      .map((path) => ({ method: "GET", path })),
  },
  { weight: 3, arbitrary: fc.record({ method: anyMethod, path: anyPath }) },
);

const headerName = fc.oneof(
  fc.constantFrom(
    "accept",
    "Accept",
    "ACCEPT",
    "x-api-key",
    "X-Api-Key",
    "content-type",
    "x-forwarded-host",
    "x-forwarded-for",
    "host",
    "__proto__",
    "constructor",
  ),
  hostileString(12),
);

const headerValue = fc.oneof(
  fc.constantFrom(
    "text/html",
    "application/json",
    "text/html, */*",
    API_KEY,
    "http://127.0.0.1:1/evil",
    "",
  ),
  hostileString(40),
  fc.integer({ min: 10_000, max: 200_000 }).map((length) => "h".repeat(length)),
);

const eventArb = fc.record({
  keyed: fc.oneof(
    { weight: 3, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  target,
  body,
  headers: fc.option(fc.dictionary(headerName, headerValue, { maxKeys: 6 }), { nil: undefined }),
  query: fc.option(
    fc.dictionary(
      fc.oneof(fc.constantFrom("key", "url", "upstream", "__proto__"), hostileString(6)),
      fc.oneof(fc.constantFrom(API_KEY, "http://127.0.0.1:1/"), hostileString(20)),
      { maxKeys: 3 },
    ),
    { nil: undefined },
  ),
  context: fc.oneof(
    { weight: 12, arbitrary: fc.constant("full") },
    { weight: 1, arbitrary: fc.constantFrom("no-http", "no-method", "none", "null-http") },
  ),
  rawPathMissing: fc.oneof(
    { weight: 9, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
});

type EventSpec = typeof eventArb extends fc.Arbitrary<infer T> ? T : never;

function buildEvent(spec: EventSpec): APIGatewayProxyEventV2 {
  const { method, path } = spec.target;
  const http = {
    method,
    path,
    protocol: "HTTP/1.1",
    sourceIp: "127.0.0.1",
    userAgent: "fuzz",
  };
  const requestContext: Record<string, unknown> | undefined =
    spec.context === "none"
      ? undefined
      : spec.context === "no-http"
        ? { requestId: "fuzz" }
        : spec.context === "null-http"
          ? { requestId: "fuzz", http: null }
          : spec.context === "no-method"
            ? { requestId: "fuzz", http: { path } }
            : { requestId: "fuzz", http };
  const event: Record<string, unknown> = {
    version: "2.0",
    routeKey: "$default",
    rawQueryString: "",
    isBase64Encoded: spec.body.isBase64Encoded,
  };
  if (!spec.rawPathMissing) event.rawPath = path;
  if (requestContext !== undefined) event.requestContext = requestContext;
  if (spec.headers !== undefined) event.headers = spec.headers;
  if (spec.query !== undefined) event.queryStringParameters = spec.query;
  if (spec.body.body !== undefined) event.body = spec.body.body;
  return event as unknown as APIGatewayProxyEventV2;
}

// ---------------------------------------------------------------------------------------
// What every answer must look like

const STACK_TRACE = [/\n\s+at /, / {4}at /, /\.ts:\d/, /node_modules/, /\bat [\w.<>]+ \(/];

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

function isRpcResponse(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const member = value as Record<string, unknown>;
  if (member.jsonrpc !== "2.0" || !Object.hasOwn(member, "id")) return false;
  const hasResult = Object.hasOwn(member, "result");
  const hasError = Object.hasOwn(member, "error");
  if (hasResult === hasError) return false;
  if (!hasError) return true;
  const error = member.error as { code?: unknown; message?: unknown } | null;
  return (
    typeof error === "object" &&
    error !== null &&
    Number.isInteger(error.code) &&
    typeof error.message === "string"
  );
}

function header(result: APIGatewayProxyStructuredResultV2, name: string): string | undefined {
  const value = result.headers?.[name];
  return value === undefined ? undefined : String(value);
}

/** Checks one answer; returns a label for fast-check statistics. */
function checkAnswer(result: APIGatewayProxyStructuredResultV2, describeEvent: string): string {
  const status = result.statusCode ?? 200;
  expect(ALLOWED_STATUS.has(status), `status ${status} for ${describeEvent}`).toBe(true);
  for (const [name, value] of Object.entries(result.headers ?? {})) {
    expect(["string", "number", "boolean"], `header ${name}`).toContain(typeof value);
  }
  // Upstreams come from the config only: the one provider, or none.
  for (const name of (header(result, "x-gateway-provider") ?? "").split(",")) {
    expect(["", "anvil"]).toContain(name);
  }
  const text = result.body ?? "";
  expect(typeof text).toBe("string");
  for (const pattern of STACK_TRACE) {
    expect(pattern.test(text), `stack-trace-like ${pattern} in ${text.slice(0, 300)}`).toBe(false);
  }
  if (status === 204) {
    // A CORS preflight, or notifications only (a lone one or a batch of them): no body.
    expect(text).toBe("");
    return "204 no content";
  }
  const contentType = header(result, "content-type") ?? "";
  if (contentType.startsWith("text/html")) {
    expect(status).toBe(200);
    expect(text.startsWith("<!doctype html>")).toBe(true);
    return "200 status page";
  }
  expect(contentType).toBe("application/json");
  // Notifications only get 204 (above): no JSON answer is ever empty.
  expect(text).not.toBe("");
  const value = JSON.parse(text) as unknown;
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    if (object.status === "ok" && Object.keys(object).length === 1) return "200 health";
    if (Array.isArray(object.networks)) return "200 status (all)";
    if (typeof object.network === "string" && Array.isArray(object.providers)) return "200 status";
  }
  if (Array.isArray(value)) {
    expect(value.length).toBeGreaterThan(0);
    for (const member of value) expect(isRpcResponse(member), JSON.stringify(member)).toBe(true);
    return `${status} batch`;
  }
  expect(isRpcResponse(value), text.slice(0, 300)).toBe(true);
  const error = (value as { error?: { code: number } }).error;
  if (status !== 200) {
    expect(error, `HTTP ${status} without a JSON-RPC error`).toBeDefined();
    if (status === 502) expect(error?.code).toBe(-32603);
    if (status === 401) expect(error?.code).toBe(-32001);
    if (status === 413) expect(error?.code).toBe(-32600);
  }
  return `${status} ${error ? `error ${error.code}` : "result"}`;
}

// ---------------------------------------------------------------------------------------

describe("handleEvent through a real runtime (dynalite, undici, anvil)", () => {
  it("any event gets an allowed status, a JSON-RPC (or status/health) body, no stack trace, in bounded time", async () => {
    const labels = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(eventArb, async (spec) => {
        const stack = spec.keyed ? keyed : open;
        const event = buildEvent(spec);
        const what = `${spec.target.method} ${spec.target.path.slice(0, 80)} body=${String(spec.body.body).slice(0, 80)}`;
        const result = await within(stack.runtime.handle(event, 29_000), ANSWER_BOUND_MS, what);
        const label = checkAnswer(result, what);
        labels.set(label, (labels.get(label) ?? 0) + 1);
        if (process.env.FUZZ_STATS && label.startsWith("502"))
          console.error("502:", what, result.body);
      }),
      fuzzParams(500),
    );
    if (process.env.FUZZ_STATS) console.error(JSON.stringify([...labels].sort()));
    // The run must actually reach the upstream, not only the gateway's own errors.
    const served = [...labels.entries()].filter(([label]) =>
      /^200 (result|batch|error -32)/.test(label),
    );
    expect(served.length, JSON.stringify([...labels])).toBeGreaterThan(0);
    expect(labels.has("401 error -32001")).toBe(true);
  }, 120_000);

  it("bodies of random bytes through the API Gateway emulator (it sets the base64 flag)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 400 }),
        fc.constantFrom(`/${NETWORK}`, `/${NETWORK}/get/eth_chainId/%5B%5D`, "/status", "/x"),
        fc.constantFrom("POST", "GET", "OPTIONS", "PUT"),
        async (bytes, target, method) => {
          const response = await within(
            request(`${open.url}${target}`, {
              dispatcher: agent,
              method: method as "POST",
              headers: { "content-type": "application/octet-stream" },
              body: method === "GET" ? undefined : Buffer.from(bytes),
            }),
            ANSWER_BOUND_MS,
            target,
          );
          const text = await response.body.text();
          if (method === "OPTIONS" || method === "PUT") {
            // No route takes these methods (and this OPTIONS is no preflight): API Gateway's
            // own 404, as in AWS.
            expect([response.statusCode, text]).toEqual([404, '{"message":"Not Found"}']);
            return;
          }
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(response.headers)) {
            if (typeof value === "string") headers[name] = value;
          }
          checkAnswer({ statusCode: response.statusCode, headers, body: text }, target);
        },
      ),
      fuzzParams(80),
    );
  }, 60_000);
});

/** A hand-built event: a request to the open stack. */
function simpleEvent(method: string, path: string, body?: string): APIGatewayProxyEventV2 {
  return buildEvent({
    keyed: false,
    target: { method, path },
    body: { body, isBase64Encoded: false },
    headers: undefined,
    query: undefined,
    context: "full",
    rawPathMissing: false,
  });
}

/** The gateway's own refusal of a body over max_body_bytes (8 192 here): nothing goes upstream. */
function expectOverBodyLimit(status: number, headers: Record<string, unknown>, text: string): void {
  expect(status, text).toBe(400);
  expect(JSON.parse(text)).toMatchObject({ jsonrpc: "2.0", error: { code: -32600 } });
  expect(text).toContain("max_body_bytes");
  expect(headers["x-gateway-attempts"]).toBeUndefined();
}

describe("regressions", () => {
  // GET mode re-serialised params with a recursive JSON.stringify (routes.ts getModeBody);
  // deep params threw RangeError, handleEvent did not catch it, and the runtime answered 500.
  it("GET mode with params 20 000 levels deep answered 500; now 400 -32600 (over max_body_bytes)", async () => {
    const deep = `[${deepText(20_000, "array")}]`;
    const result = await open.runtime.handle(
      simpleEvent("GET", `/${NETWORK}/get/eth_call/${deep}`),
      29_000,
    );
    checkAnswer(result, "deep GET");
    expectOverBodyLimit(result.statusCode ?? 200, result.headers ?? {}, result.body ?? "");
  });

  it("the same through HTTP, 4 500 levels in a 9 KB URL: 400 -32600", async () => {
    const depth = 4500;
    const response = await request(
      `${open.url}/${NETWORK}/get/eth_call/${"[".repeat(depth)}${"]".repeat(depth)}`,
      { dispatcher: agent },
    );
    expectOverBodyLimit(response.statusCode, response.headers, await response.body.text());
  });

  const withinLimit = `/${NETWORK}/get/eth_call/[${deepText(3_000, "array")}]`;

  it("GET mode with params 3 000 levels deep, within the body limit: -32600 with the caller's id", async () => {
    const result = await open.runtime.handle(simpleEvent("GET", withinLimit), 29_000);
    checkAnswer(result, "deep GET within the limit");
    expect([200, 400]).toContain(result.statusCode);
    expect(JSON.parse(result.body ?? "")).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32600 },
    });
  });

  // Nesting no node accepts was forwarded to every provider (anvil answers -32600 itself, a WAF
  // in front of a provider may drop the connection); max_json_depth refuses it before anything
  // goes upstream.
  it("regression: GET mode with absurdly nested params is refused by the gateway: 400, no upstream attempt", async () => {
    const result = await open.runtime.handle(simpleEvent("GET", withinLimit), 29_000);
    expect(result.statusCode).toBe(400);
    expect(result.headers?.["x-gateway-attempts"]).toBeUndefined();
  });

  // A single notification (a call without `id`, valid JSON-RPC 2.0) is forwarded as is; the
  // upstream rightly sends no answer (anvil: HTTP 204, empty body), the classifier called that
  // "HTTP 204: not a JSON-RPC answer", blacklisted the provider (transient, one strike) and
  // the caller got 502 -32603. Any caller could blacklist every provider this way.
  it("a single notification got 502 -32603; now 204 with an empty body", async () => {
    const result = await open.runtime.handle(
      // A method the answer cache never keeps, so the notification does go upstream.
      simpleEvent(
        "POST",
        `/${NETWORK}`,
        '{"jsonrpc":"2.0","method":"web3_clientVersion","params":[]}',
      ),
      29_000,
    );
    expect(result.statusCode).toBe(204);
    expect(result.body ?? "").toBe("");
    expect(result.headers?.["x-gateway-provider"]).toBe("anvil");
  });
});
