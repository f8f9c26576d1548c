import { once } from "node:events";
import { connect } from "node:net";
import type { APIGatewayProxyEventV2, Context } from "aws-lambda";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type ApiGatewayEmulator,
  type ApiGatewayHandler,
  MAX_REQUEST_LINE_AND_HEADERS_BYTES,
  startApiGateway,
} from "../../../local/apigw-emulator.ts";

/**
 * The emulator against what API Gateway HTTP APIs and Lambda do: the stack's route table,
 * CORS preflights from the shared policy, body encoding by content type, the size quotas,
 * both timeouts, payload 2.0 result inference, and N containers.
 */

const agent = new Agent({ keepAliveTimeout: 1000 });
afterAll(() => agent.close());

const APP = "https://app.example.com";

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

async function send(
  url: string,
  options: {
    method?: string;
    body?: string | Buffer;
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const response = await request(url, {
    dispatcher: agent,
    method: (options.method ?? "GET") as "GET",
    headers: options.headers,
    body: options.body,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return { status: response.statusCode, headers, text: await response.body.text() };
}

const ok = (body: string, headers: Record<string, string> = {}) => ({
  statusCode: 200,
  headers: { "content-type": "application/json", ...headers },
  body,
});

describe("an emulator with the stack's routes and a list of CORS origins", () => {
  let api: ApiGatewayEmulator;
  let current: ApiGatewayHandler;
  const events: APIGatewayProxyEventV2[] = [];
  beforeAll(async () => {
    api = await startApiGateway({
      corsOrigins: [APP],
      handler: (event, context) => {
        events.push(event);
        return current(event, context);
      },
    });
  });
  afterAll(() => api?.close());

  const echoEvent: ApiGatewayHandler = async (event) => ok(JSON.stringify(event));
  const lastEvent = () => events.at(-1) as APIGatewayProxyEventV2;

  it.each([
    ["POST", "/ethereum", "POST /{proxy+}", { proxy: "ethereum" }],
    ["POST", "/", "POST /", undefined],
    ["GET", "/ethereum/get/eth_chainId", "GET /{proxy+}", { proxy: "ethereum/get/eth_chainId" }],
    ["GET", "/status", "GET /status", undefined],
    ["GET", "/ethereum/status", "GET /{network}/status", { network: "ethereum" }],
  ])("routes %s %s to %s", async (method, path, routeKey, pathParameters) => {
    current = echoEvent;
    const answer = await send(`${api.url}${path}`, {
      method,
      ...(method === "POST" ? { body: "{}" } : {}),
    });
    expect(answer.status).toBe(200);
    const event = JSON.parse(answer.text) as APIGatewayProxyEventV2;
    expect(event.routeKey).toBe(routeKey);
    expect(event.requestContext.routeKey).toBe(routeKey);
    expect(event.pathParameters).toEqual(pathParameters);
  });

  it.each([
    ["PUT", "/ethereum", {}],
    ["DELETE", "/ethereum", {}],
    ["HEAD", "/health", {}],
    ["OPTIONS", "/ethereum", {}],
    ["OPTIONS", "/ethereum", { origin: APP }],
    ["OPTIONS", "/ethereum", { "access-control-request-method": "POST" }],
  ])(
    "answers %s %s %j with API Gateway's 404, without the function",
    async (method, path, headers) => {
      current = echoEvent;
      const before = events.length;
      const answer = await send(`${api.url}${path}`, { method, headers });
      expect(answer.status).toBe(404);
      if (method !== "HEAD") expect(JSON.parse(answer.text)).toEqual({ message: "Not Found" });
      expect(events.length).toBe(before);
    },
  );

  it("answers a preflight from an allowed origin itself", async () => {
    const before = events.length;
    const answer = await send(`${api.url}/ethereum`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,x-api-key",
      },
    });
    expect(answer.status).toBe(204);
    expect(answer.text).toBe("");
    expect(answer.headers).toMatchObject({
      "access-control-allow-origin": APP,
      "access-control-allow-methods": "GET,POST,OPTIONS",
      "access-control-allow-headers": "content-type,x-api-key",
      "access-control-expose-headers":
        "x-gateway-provider,x-gateway-attempts,x-gateway-cache,x-gateway-head",
      "access-control-max-age": "86400",
    });
    expect(events.length).toBe(before);
  });

  it("answers a preflight from another origin without CORS headers", async () => {
    const answer = await send(`${api.url}/ethereum`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example.net", "access-control-request-method": "POST" },
    });
    expect(answer.status).toBe(204);
    expect(
      Object.keys(answer.headers).filter((name) => name.startsWith("access-control-")),
    ).toEqual([]);
  });

  it("replaces the function's CORS headers with the API's, only for a request with an Origin", async () => {
    current = async () =>
      ok("{}", {
        "access-control-allow-origin": "https://wrong.example.org",
        "access-control-allow-credentials": "true",
        vary: "origin",
        "x-gateway-provider": "alpha",
      });
    const fromBrowser = await send(`${api.url}/ethereum/status`, { headers: { origin: APP } });
    expect(fromBrowser.headers).toMatchObject({
      "access-control-allow-origin": APP,
      "access-control-expose-headers":
        "x-gateway-provider,x-gateway-attempts,x-gateway-cache,x-gateway-head",
      vary: "origin",
      "x-gateway-provider": "alpha",
    });
    expect(fromBrowser.headers).not.toHaveProperty("access-control-allow-credentials");

    const fromCurl = await send(`${api.url}/ethereum/status`);
    expect(
      Object.keys(fromCurl.headers).filter((name) => name.startsWith("access-control-")),
    ).toEqual([]);
  });

  it.each([
    ["application/json", false],
    ["application/json; charset=utf-8", false],
    ["Application/JSON", false],
    ["text/plain", false],
    ["text/html; charset=iso-8859-1", false],
    ["application/xml", false],
    ["application/javascript", false],
    ["application/x-www-form-urlencoded", true],
    ["application/octet-stream", true],
    ["application/json-rpc", true],
    ["application/problem+json", true],
    [undefined, true],
  ])("passes a body sent as %s base64-encoded: %s", async (contentType, base64) => {
    current = echoEvent;
    const body = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}');
    await send(`${api.url}/ethereum`, {
      method: "POST",
      body,
      headers: contentType === undefined ? {} : { "content-type": contentType },
    });
    const event = lastEvent();
    expect(event.isBase64Encoded).toBe(base64);
    expect(Buffer.from(event.body ?? "", base64 ? "base64" : "utf8")).toEqual(body);
  });

  it("regression: passed a JSON body with invalid UTF-8 as text, as its content type says", async () => {
    current = echoEvent;
    await send(`${api.url}/ethereum`, {
      method: "POST",
      body: Buffer.from([0x7b, 0xff, 0x7d]),
      headers: { "content-type": "application/json" },
    });
    expect(lastEvent()).toMatchObject({ isBase64Encoded: false, body: "{\ufffd}" });
  });

  it("refuses a request line and headers over 10,240 bytes before the function", async () => {
    current = echoEvent;
    const path = "/ethereum/status";
    // The request line, and the host and padding headers (undici adds host, connection).
    const fixed = `GET ${path} HTTP/1.1`.length + "host".length + api.url.length - 7;
    const fixedHeaders = "connection".length + "keep-alive".length + "x-padding".length;
    const room = MAX_REQUEST_LINE_AND_HEADERS_BYTES - fixed - fixedHeaders;
    const atLimit = await send(`${api.url}${path}`, {
      headers: { "x-padding": "a".repeat(room) },
    });
    expect(atLimit.status).toBe(200);

    const before = events.length;
    const over = await send(`${api.url}${path}`, {
      headers: { "x-padding": "a".repeat(room + 1) },
    });
    expect(over.status).toBe(431);
    expect(JSON.parse(over.text)).toEqual({ message: "Request Header Fields Too Large" });
    expect(events.length).toBe(before);
  });

  it("refuses a body that is under 6 MB but over Lambda's request limit once JSON-escaped", async () => {
    current = async (event) => ok(String(event.body?.length));
    const fits = await send(`${api.url}/ethereum`, {
      method: "POST",
      body: '"'.repeat(3_000_000),
      headers: { "content-type": "text/plain" },
    });
    expect(fits).toMatchObject({ status: 200, text: "3000000" });

    const before = events.length;
    const tooLong = await send(`${api.url}/ethereum`, {
      method: "POST",
      body: '"'.repeat(3_200_000),
      headers: { "content-type": "text/plain" },
    });
    expect(tooLong.status).toBe(413);
    expect(JSON.parse(tooLong.text)).toEqual({ message: "Request Too Long" });
    expect(events.length).toBe(before);
  });

  it("answers a bare 500 for a result over Lambda's response limit once JSON-escaped", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      current = async () => ok('"'.repeat(3_000_000));
      const fits = await send(`${api.url}/ethereum/status`);
      expect(fits.status).toBe(200);
      expect(fits.text.length).toBe(3_000_000);

      current = async () => ok('"'.repeat(3_200_000));
      const tooLarge = await send(`${api.url}/ethereum/status`);
      expect(tooLarge.status).toBe(500);
      expect(JSON.parse(tooLarge.text)).toEqual({ message: "Internal Server Error" });
    } finally {
      logged.mockRestore();
    }
  });

  it.each([
    ["a string, as is", "hello", "hello"],
    [
      "an object without statusCode, as JSON",
      { body: "x", headers: { a: "b" } },
      '{"body":"x","headers":{"a":"b"}}',
    ],
    ["an array, as JSON", [1, 2], "[1,2]"],
    ["a number, as JSON", 42, "42"],
    ["null, as JSON", null, "null"],
  ])("reads a result that is %s with status 200", async (_name, value, body) => {
    current = async () => value;
    const answer = await send(`${api.url}/ethereum/status`);
    expect(answer).toMatchObject({ status: 200, text: body });
    expect(answer.headers["content-type"]).toBe("application/json");
  });

  it.each([
    ["a status code that is not a number", { statusCode: "200", body: "x" }],
    ["a status code out of range", { statusCode: 99, body: "x" }],
  ])("answers 500 for %s", async (_name, value) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      current = async () => value;
      const answer = await send(`${api.url}/ethereum/status`);
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.text)).toEqual({ message: "Internal Server Error" });
    } finally {
      logged.mockRestore();
    }
  });

  it("drops connection-level headers a result sets, and frames the answer itself", async () => {
    current = async () =>
      ok('{"result":"0x1"}', {
        "transfer-encoding": "chunked",
        connection: "close",
        "keep-alive": "timeout=1",
        upgrade: "h2c",
        "content-length": "3",
      });
    const answer = await send(`${api.url}/ethereum/status`);
    expect(answer.text).toBe('{"result":"0x1"}');
    expect(answer.headers["content-length"]).toBe("16");
    expect(answer.headers).not.toHaveProperty("transfer-encoding");
    expect(answer.headers).not.toHaveProperty("upgrade");
    expect(answer.headers.connection).toBe("keep-alive");
    // The connection stays usable.
    expect((await send(`${api.url}/ethereum/status`)).status).toBe(200);
  });
});

describe("timeouts", () => {
  const never: ApiGatewayHandler = () => new Promise(() => undefined);

  it("answers 500 when the function times out first, as Lambda fails it", async () => {
    const api = await startApiGateway({
      handler: never,
      functionTimeoutMs: 100,
      integrationTimeoutMs: 2000,
    });
    try {
      const answer = await send(`${api.url}/ethereum`, { method: "POST", body: "{}" });
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.text)).toEqual({ message: "Internal Server Error" });
    } finally {
      await api.close();
    }
  });

  it("answers 503 when the integration times out first", async () => {
    const api = await startApiGateway({
      handler: never,
      functionTimeoutMs: 2000,
      integrationTimeoutMs: 100,
    });
    try {
      const answer = await send(`${api.url}/ethereum`, { method: "POST", body: "{}" });
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.text)).toEqual({ message: "Service Unavailable" });
    } finally {
      await api.close();
    }
  });

  it("gives the function its own timeout as remaining time, 29 s by default", async () => {
    let remaining = 0;
    const api = await startApiGateway({
      handler: async (_event: APIGatewayProxyEventV2, context: Context) => {
        remaining = context.getRemainingTimeInMillis();
        return ok("{}");
      },
    });
    try {
      await send(`${api.url}/health`);
      expect(remaining).toBeGreaterThan(28_000);
      expect(remaining).toBeLessThanOrEqual(29_000);
    } finally {
      await api.close();
    }
  });

  it("regression: the remaining time reads alone, taken off the context (middy does so)", async () => {
    let remaining = 0;
    const api = await startApiGateway({
      handler: async (_event: APIGatewayProxyEventV2, context: Context) => {
        const { getRemainingTimeInMillis } = context;
        remaining = getRemainingTimeInMillis();
        return ok("{}");
      },
    });
    try {
      expect((await send(`${api.url}/health`)).status).toBe(200);
      expect(remaining).toBeGreaterThan(28_000);
    } finally {
      await api.close();
    }
  });

  it("answers the function's timeout when both timeouts are equal, as Lambda fails it first", async () => {
    const api = await startApiGateway({
      handler: never,
      functionTimeoutMs: 100,
      integrationTimeoutMs: 100,
    });
    try {
      expect((await send(`${api.url}/ethereum`, { method: "POST", body: "{}" })).status).toBe(500);
    } finally {
      await api.close();
    }
  });
});

describe("a caller that hangs up", () => {
  it("regression: a caller gone before its body ended was logged as a failed request with a stack trace; now it is dropped quietly and the function never runs", async () => {
    const handler = vi.fn(async () => ok("{}"));
    const api = await startApiGateway({ handler });
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      const socket = connect(api.port, "127.0.0.1");
      await once(socket, "connect");
      socket.write(
        "POST /ethereum HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n" + '{"jsonrpc"',
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      await once(socket, "close");
      // The server sees the close on its next turn of the event loop; a request after it proves so.
      expect((await send(`${api.url}/health`)).status).toBe(200);
      expect(logged).not.toHaveBeenCalled();
      expect(handler).toHaveBeenCalledTimes(1);
    } finally {
      logged.mockRestore();
      await api.close();
    }
  });
});

describe("N containers", () => {
  /** Each container answers with its own number; `hold` keeps the next request waiting. */
  function pool() {
    let created = 0;
    let hold: Promise<void> | null = null;
    return {
      created: () => created,
      holdNext(until: Promise<void>) {
        hold = until;
      },
      create: (): ApiGatewayHandler => {
        const id = created++;
        return async () => {
          const waiting = hold;
          hold = null;
          if (waiting) await waiting;
          return ok(String(id));
        };
      },
    };
  }

  it("spreads requests over the containers in turn", async () => {
    const containers = pool();
    const api = await startApiGateway({ containers: { count: 3, create: containers.create } });
    try {
      const answers: string[] = [];
      for (let index = 0; index < 5; index++) answers.push((await send(`${api.url}/health`)).text);
      expect(answers).toEqual(["0", "1", "2", "0", "1"]);
      expect(containers.created()).toBe(3);
    } finally {
      await api.close();
    }
  });

  it("gives a request to an idle container, never to the busy one", async () => {
    const containers = pool();
    const api = await startApiGateway({ containers: { count: 2, create: containers.create } });
    try {
      const { promise: released, resolve: release } = Promise.withResolvers<void>();
      containers.holdNext(released);
      const held = send(`${api.url}/health`);
      await vi.waitFor(() => expect(containers.created()).toBe(2));
      const others = [];
      for (let index = 0; index < 3; index++) others.push((await send(`${api.url}/health`)).text);
      expect(others).toEqual(["1", "1", "1"]);
      release();
      expect((await held).text).toBe("0");
    } finally {
      await api.close();
    }
  });

  it("replaces a container whose function timed out with a fresh runtime", async () => {
    const containers = pool();
    const api = await startApiGateway({
      containers: { count: 1, create: containers.create },
      functionTimeoutMs: 100,
    });
    try {
      containers.holdNext(new Promise<void>(() => undefined));
      expect((await send(`${api.url}/health`)).status).toBe(500);
      expect(containers.created()).toBe(2);
      expect((await send(`${api.url}/health`)).text).toBe("1");
    } finally {
      await api.close();
    }
  });
  it("regression: a container was counted idle once API Gateway answered 503, though its function was still running; now it stays busy until the function ends", async () => {
    const containers = pool();
    const api = await startApiGateway({
      containers: { count: 2, create: containers.create },
      integrationTimeoutMs: 100,
      functionTimeoutMs: 5000,
    });
    try {
      const { promise: released, resolve: release } = Promise.withResolvers<void>();
      containers.holdNext(released);
      expect((await send(`${api.url}/health`)).status).toBe(503);
      const others = [];
      for (let index = 0; index < 3; index++) others.push((await send(`${api.url}/health`)).text);
      expect(others).toEqual(["1", "1", "1"]);
      release();
      await vi.waitFor(async () => {
        const answers = [
          (await send(`${api.url}/health`)).text,
          (await send(`${api.url}/health`)).text,
        ];
        expect(answers.sort()).toEqual(["0", "1"]);
      });
    } finally {
      await api.close();
    }
  });

  it("regression: a function still running after API Gateway's 503 was never failed at its own timeout, its container never reset; now Lambda's timeout replaces it", async () => {
    const containers = pool();
    const api = await startApiGateway({
      containers: { count: 1, create: containers.create },
      integrationTimeoutMs: 50,
      functionTimeoutMs: 200,
    });
    try {
      containers.holdNext(new Promise<void>(() => undefined));
      expect((await send(`${api.url}/health`)).status).toBe(503);
      expect(containers.created()).toBe(1);
      await vi.waitFor(() => expect(containers.created()).toBe(2), { timeout: 1000 });
      expect((await send(`${api.url}/health`)).text).toBe("1");
    } finally {
      await api.close();
    }
  });
});
