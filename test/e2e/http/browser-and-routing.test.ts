import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LAMBDA_RESPONSE_LIMIT_BYTES } from "../../../functions/core/http/payload-limit.ts";
import { internalErrorResult } from "../../../functions/proxy/api.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";

/**
 * Browsers and routing end to end, on the local stack (the API Gateway emulator serving the
 * stack's route table and CORS policy, dynalite, the proxy runtime) with an anvil upstream and
 * an upstream whose answers are too large for Lambda once JSON-escaped.
 */

const CHAIN_ID = 31337;
const APP = "https://app.example.com";
const agent = new Agent({ keepAliveTimeout: 1000 });

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

async function send(
  url: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const method = options.method ?? (options.body === undefined ? "GET" : "POST");
  const response = await request(url, {
    dispatcher: agent,
    method: method as "GET",
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    },
    body: options.body,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return { status: response.statusCode, headers, text: await response.body.text() };
}

const call = (method: string, params: unknown[] = [], id: unknown = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });

/** eth_getLogs answers of ~5.5 MB of short strings: under max_response_bytes, over Lambda's limit once escaped. */
async function startBulkyUpstream(): Promise<{ url: string; close: () => Promise<void> }> {
  const logs = `[${'"0x1234",'.repeat(610_000)}"0x0"]`;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    req.on("end", () => {
      const answer = (call: { id: unknown; method: string }) => {
        const result =
          call.method === "eth_chainId"
            ? `"0x${CHAIN_ID.toString(16)}"`
            : call.method === "eth_blockNumber"
              ? '"0x10"'
              : logs;
        return `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":${result}}`;
      };
      const parsed = JSON.parse(body) as
        | { id: unknown; method: string }
        | Array<{ id: unknown; method: string }>;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(Array.isArray(parsed) ? `[${parsed.map(answer).join(",")}]` : answer(parsed));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let node: AnvilNode;
let bulky: { url: string; close: () => Promise<void> };
let stack: LocalStack;

beforeAll(async () => {
  [node, bulky] = await Promise.all([startAnvil({ chainId: CHAIN_ID }), startBulkyUpstream()]);
  stack = await startLocalStack({
    config: {
      cors_origins: [APP],
      networks: {
        devnet: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: node.url }] },
        bulky: { chain_id: CHAIN_ID, providers: [{ name: "bulky", url: bulky.url }] },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([node?.stop(), bulky?.close()]);
  await agent.close();
});

describe("a browser on an allowed origin", () => {
  it("gets its preflight answered with the methods and headers it needs", async () => {
    const answer = await send(`${stack.url}/devnet`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(answer.status).toBe(204);
    expect(answer.headers["access-control-allow-origin"]).toBe(APP);
    expect(answer.headers["access-control-allow-methods"]?.split(",")).toContain("POST");
    expect(answer.headers["access-control-allow-headers"]?.split(",")).toContain("content-type");
  });

  it("can read which provider answered and after how many attempts", async () => {
    const answer = await send(`${stack.url}/devnet`, {
      body: call("eth_chainId"),
      headers: { origin: APP },
    });
    expect(JSON.parse(answer.text)).toMatchObject({ id: 1, result: "0x7a69" });
    expect(answer.headers["access-control-allow-origin"]).toBe(APP);
    const exposed = answer.headers["access-control-expose-headers"]?.split(",") ?? [];
    expect(exposed).toEqual(expect.arrayContaining(["x-gateway-provider", "x-gateway-attempts"]));
    expect(answer.headers["x-gateway-provider"]).toBe("anvil");
    expect(answer.headers.vary).toBe("origin");
  });

  it.each([
    ["the status page", "/status", { accept: "text/html" }],
    ["the status JSON", "/devnet/status", {}],
    ["GET mode", "/devnet/get/eth_chainId", {}],
    ["health", "/health", {}],
    ["an unknown route", "/devnet/nothing/here", {}],
    ["an unknown network", "/mainnet/status", {}],
    ["a wrong method", "/status", { "content-type": "application/json" }],
  ])("gets the CORS headers on %s", async (_name, path, headers) => {
    const method = _name === "a wrong method" ? "POST" : "GET";
    const answer = await send(`${stack.url}${path}`, {
      method,
      ...(method === "POST" ? { body: "{}" } : {}),
      headers: { origin: APP, ...headers },
    });
    expect(answer.headers["access-control-allow-origin"]).toBe(APP);
  });

  it("gets nothing that lets another origin read the answer", async () => {
    const answer = await send(`${stack.url}/devnet`, {
      body: call("eth_chainId"),
      headers: { origin: "https://evil.example.net" },
    });
    expect(answer.headers).not.toHaveProperty("access-control-allow-origin");
  });
});

describe("routing, the same as in AWS", () => {
  it("serves GET mode without a params segment", async () => {
    const answer = await send(`${stack.url}/devnet/get/eth_chainId`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ result: "0x7a69" });
  });

  it("answers a POST to the base URL with the handler's list of routes", async () => {
    const answer = await send(`${stack.url}/`, { body: call("eth_chainId") });
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text).error.message).toContain("POST /{network}");
  });

  it.each(["PUT", "DELETE", "PATCH"])("answers %s with API Gateway's 404", async (method) => {
    const answer = await send(`${stack.url}/devnet`, { method, body: call("eth_chainId") });
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text)).toEqual({ message: "Not Found" });
  });

  it("accepts a curl-style form-encoded POST, which arrives base64-encoded", async () => {
    const answer = await send(`${stack.url}/devnet`, {
      body: call("eth_chainId", [], 9),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(JSON.parse(answer.text)).toMatchObject({ id: 9, result: "0x7a69" });
  });
});

describe("an answer too large for Lambda once JSON-escaped", () => {
  it("regression: became API Gateway's bare 500; now the gateway's error with the caller's id", async () => {
    const answer = await send(`${stack.url}/bulky`, {
      body: call("eth_getLogs", [{ fromBlock: "0x0" }], "logs-1"),
    });
    expect(answer.status).toBe(200);
    const parsed = JSON.parse(answer.text) as {
      id: unknown;
      error: { code: number; message: string };
    };
    expect(parsed.id).toBe("logs-1");
    // geth's "response too large", which no client retries: the same call never fits.
    expect(parsed.error.code).toBe(-32003);
    expect(parsed.error.message).toContain(`over the ${LAMBDA_RESPONSE_LIMIT_BYTES} bytes`);
    expect(parsed.error.message).toContain("ask for less");
  });

  it("answers each call of a batch with its own error", async () => {
    const answer = await send(`${stack.url}/bulky`, {
      body: `[${call("eth_getLogs", [{}], 1)},${call("eth_blockNumber", [], 2)}]`,
    });
    expect(answer.status).toBe(200);
    const answers = JSON.parse(answer.text) as Array<{ id: number; error: { message: string } }>;
    expect(answers.map((member) => member.id)).toEqual([1, 2]);
    for (const member of answers) expect(member.error.message).toContain("ask for less");
  });

  it("is never cached in GET mode", async () => {
    const answer = await send(`${stack.url}/bulky/get/eth_getLogs/%5B%7B%7D%5D`);
    expect(JSON.parse(answer.text)).toMatchObject({ id: 1, error: { code: -32003 } });
    expect(answer.headers["cache-control"]).toBe("no-store");
  });
});

describe("the handler's own CORS headers (for a caller that reaches it without API Gateway)", () => {
  const event = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    ({
      version: "2.0",
      routeKey: "$default",
      rawPath: path,
      rawQueryString: "",
      headers,
      ...(body === undefined ? {} : { body }),
      isBase64Encoded: false,
      requestContext: { http: { method, path } },
    }) as unknown as APIGatewayProxyEventV2;

  it.each([
    ["the status page", event("GET", "/status", { origin: APP, accept: "text/html" })],
    ["a JSON-RPC answer", event("POST", "/devnet", { origin: APP }, call("eth_chainId"))],
    ["a wrong method", event("PUT", "/devnet", { origin: APP })],
    ["an unknown route", event("GET", "/nothing/here/at/all", { origin: APP })],
  ])("are on %s", async (_name, request) => {
    const result = await stack.runtime.handle(request, 29_000);
    expect(result.headers).toMatchObject({ "access-control-allow-origin": APP, vary: "origin" });
  });

  it("answer a preflight the way API Gateway does", async () => {
    const result = await stack.runtime.handle(
      event("OPTIONS", "/devnet", { origin: APP, "access-control-request-method": "POST" }),
      29_000,
    );
    expect(result.statusCode).toBe(204);
    expect(result.headers).toMatchObject({
      "access-control-allow-origin": APP,
      "access-control-allow-methods": "GET,POST,OPTIONS",
    });
  });

  it("are on the catch-all 503, which carries the caller's id", () => {
    const result = internalErrorResult(
      event("POST", "/devnet", { origin: APP }, call("eth_chainId", [], "c-1")),
      [APP],
    );
    expect(result.statusCode).toBe(503);
    expect(result.headers).toMatchObject({ "access-control-allow-origin": APP });
    expect(JSON.parse(result.body ?? "")).toEqual({
      jsonrpc: "2.0",
      id: "c-1",
      error: { code: -32603, message: "internal gateway error" },
    });
  });
});
