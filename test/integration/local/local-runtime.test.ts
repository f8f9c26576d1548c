import { once } from "node:events";
import { connect } from "node:net";
import {
  ConditionalCheckFailedException,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type AnvilNode, JsonRpcCallError, startAnvil } from "../../../local/anvil.ts";
import {
  type ApiGatewayEmulator,
  type ApiGatewayHandler,
  MAX_PAYLOAD_BYTES,
  startApiGateway,
} from "../../../local/apigw-emulator.ts";
import {
  createGatewayTable,
  createLocalDynamoDbClient,
  type LocalDynamoDb,
  startDynalite,
  startDynamoDbLocal,
} from "../../../local/dynamodb.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { RUN_DYNAMODB_LOCAL } from "../../support/environment.ts";
import {
  loadExecutionApisFixtures,
  type ReplayUpstream,
  startReplayUpstream,
} from "../../support/execution-apis.ts";

// A private connection pool, so a fault that resets connections cannot leak into other files.
const agent = new Agent({ keepAliveTimeout: 1000 });
afterAll(() => agent.close());

interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

async function post(
  url: string,
  body: string | Buffer,
  options: { headers?: string[] | Record<string, string>; headersTimeout?: number } = {},
): Promise<HttpAnswer> {
  const response = await request(url, {
    method: "POST",
    dispatcher: agent,
    headers: options.headers ?? { "content-type": "application/json" },
    body,
    headersTimeout: options.headersTimeout,
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    text: await response.body.text(),
  };
}

async function get(url: string): Promise<HttpAnswer> {
  const response = await request(url, { dispatcher: agent });
  return {
    status: response.statusCode,
    headers: response.headers,
    text: await response.body.text(),
  };
}

function call(method: string, params: unknown[] = [], id: unknown = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}

async function rpcResult(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  return (JSON.parse((await post(url, call(method, params))).text) as { result: unknown }).result;
}

async function tcpConnect(port: number): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  try {
    await once(socket, "connect");
  } finally {
    socket.destroy();
  }
}

function processIsGone(pid: number | undefined): boolean {
  try {
    process.kill(pid ?? -1, 0);
    return false;
  } catch {
    return true;
  }
}

describe("anvil", () => {
  it("starts on 127.0.0.1 with the chain id, answers, and stops", async () => {
    const node = await startAnvil({ chainId: 4242 });
    expect(node.url).toBe(`http://127.0.0.1:${node.port}`);
    expect(node.chainId).toBe(4242);
    expect(await node.rpc("eth_chainId")).toBe("0x1092");
    expect(await node.rpc("eth_blockNumber")).toBe("0x0");
    await expect(node.rpc("no_such_method")).rejects.toBeInstanceOf(JsonRpcCallError);
    await node.stop();
    expect(node.process.exitCode !== null || node.process.signalCode !== null).toBe(true);
    expect(processIsGone(node.process.pid)).toBe(true);
  });

  it("kill() ends the node at once", async () => {
    const node = await startAnvil({ chainId: 1 });
    const exited = once(node.process, "exit");
    node.kill();
    const [, signal] = await exited;
    expect(signal).toBe("SIGKILL");
    await expect(get(node.url)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await node.stop(); // stopping a dead node is a no-op
  });

  it("mines on an interval when blockTimeSeconds is set", async () => {
    const node = await startAnvil({ chainId: 7, blockTimeSeconds: 1 });
    try {
      await vi.waitFor(
        async () => expect(Number(await node.rpc<string>("eth_blockNumber"))).toBeGreaterThan(0),
        { timeout: 5000, interval: 100 },
      );
    } finally {
      await node.stop();
    }
  });

  it("reports a taken port and a node that never gets ready", async () => {
    const node = await startAnvil({ chainId: 1 });
    try {
      await expect(startAnvil({ chainId: 2, port: node.port })).rejects.toThrow(
        /exited before it was ready.*Address already in use/s,
      );
      await expect(startAnvil({ chainId: 3, readyTimeoutMs: 1 })).rejects.toThrow(
        /did not become ready within 1 ms/,
      );
    } finally {
      await node.stop();
    }
  });
});

describe("fault shim in front of anvil", () => {
  let node: AnvilNode;
  let shim: FaultShim;

  beforeAll(async () => {
    node = await startAnvil({ chainId: 1337 });
    shim = await startFaultShim(node.url);
  });
  afterAll(async () => {
    await shim?.close();
    await node?.stop();
  });

  async function expectPassThrough(): Promise<void> {
    const body = call("eth_getBlockByNumber", ["0x0", false], 5);
    const direct = await post(node.url, body);
    const relayed = await post(shim.url, body);
    expect(relayed.status).toBe(direct.status);
    expect(relayed.text).toBe(direct.text);
  }

  it("passes requests and answers through unchanged, and counts them", async () => {
    const before = shim.requests;
    expect(shim.url).toBe(`http://127.0.0.1:${shim.port}`);
    expect(shim.fault).toBeNull();
    await expectPassThrough();
    expect(await rpcResult(shim.url, "eth_chainId")).toBe("0x539");
    expect(shim.requests).toBe(before + 2);
  });

  it("refuse: resets the connection without an answer", async () => {
    await shim.setFault({ kind: "refuse" });
    const before = shim.requests;
    await expect(post(shim.url, call("eth_chainId"))).rejects.toThrow();
    expect(shim.requests).toBe(before + 1);
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("down: refuses connections, then listens again on the same port", async () => {
    const { port } = shim;
    await shim.setFault({ kind: "down" });
    // A pooled connection sees the close; a new one is refused.
    await expect(post(shim.url, call("eth_chainId"))).rejects.toThrow();
    await expect(tcpConnect(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await shim.setFault(null);
    expect(shim.port).toBe(port);
    await tcpConnect(port);
    await expectPassThrough();
  });

  it("hang: never answers", async () => {
    await shim.setFault({ kind: "hang" });
    await expect(
      post(shim.url, call("eth_chainId"), { headersTimeout: 300 }),
    ).rejects.toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT" });
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("slow: delays, then forwards", async () => {
    await shim.setFault({ kind: "slow", ms: 250 });
    const started = performance.now();
    expect(await rpcResult(shim.url, "eth_chainId")).toBe("0x539");
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("http: answers with the given status, headers and body", async () => {
    await shim.setFault({
      kind: "http",
      status: 429,
      headers: { "retry-after": "3", "content-type": "application/json" },
      body: '{"error":"too many requests"}',
    });
    const limited = await post(shim.url, call("eth_chainId"));
    expect(limited).toMatchObject({ status: 429, text: '{"error":"too many requests"}' });
    expect(limited.headers["retry-after"]).toBe("3");

    const page = "<html><body>Error 522: Connection timed out</body></html>";
    await shim.setFault({
      kind: "http",
      status: 522,
      headers: { "content-type": "text/html" },
      body: page,
    });
    expect(await post(shim.url, call("eth_chainId"))).toMatchObject({ status: 522, text: page });

    await shim.setFault({ kind: "http", status: 503 });
    expect(await post(shim.url, call("eth_chainId"))).toMatchObject({ status: 503, text: "" });
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("jsonrpc_error: answers every call with the error and the caller's id", async () => {
    await shim.setFault({ kind: "jsonrpc_error", code: -32005, message: "limit exceeded" });
    expect(JSON.parse((await post(shim.url, call("eth_chainId", [], 7))).text)).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32005, message: "limit exceeded" },
    });
    await shim.setFault({ kind: "jsonrpc_error", code: -32000, message: "boom", data: { x: 1 } });
    const batch = `[${call("eth_chainId", [], 1)},${call("eth_blockNumber", [], "b")}]`;
    expect(JSON.parse((await post(shim.url, batch)).text)).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "boom", data: { x: 1 } } },
      { jsonrpc: "2.0", id: "b", error: { code: -32000, message: "boom", data: { x: 1 } } },
    ]);
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("result: answers every call with the given result", async () => {
    await shim.setFault({ kind: "result", value: "not a hex number" });
    expect(JSON.parse((await post(shim.url, call("eth_blockNumber", [], 3))).text)).toEqual({
      jsonrpc: "2.0",
      id: 3,
      result: "not a hex number",
    });
    await shim.setFault({ kind: "result", value: null });
    expect(await rpcResult(shim.url, "eth_getBlockByNumber", ["0x0", false])).toBeNull();
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("truncate: sends half the body, then closes the connection", async () => {
    await shim.setFault({ kind: "truncate" });
    await expect(post(shim.url, call("eth_getBlockByNumber", ["0x0", false]))).rejects.toThrow();
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("malformed: answers 200 with a body that is not JSON", async () => {
    await shim.setFault({ kind: "malformed" });
    expect(await post(shim.url, call("eth_chainId"))).toMatchObject({
      status: 200,
      text: "{not json",
    });
    await shim.setFault(null);
    await expectPassThrough();
  });

  it("stuck_head: freezes the head the shim reports, forwards everything else", async () => {
    await node.rpc("anvil_mine", ["0x2"]);
    const frozenNumber = await node.rpc<string>("eth_blockNumber");
    await shim.setFault({ kind: "stuck_head" });
    await node.rpc("anvil_mine", ["0x3"]);
    expect(Number(await node.rpc<string>("eth_blockNumber"))).toBe(Number(frozenNumber) + 3);

    expect(await rpcResult(shim.url, "eth_blockNumber")).toBe(frozenNumber);
    const latest = (await rpcResult(shim.url, "eth_getBlockByNumber", ["latest", false])) as {
      number: string;
    };
    expect(latest.number).toBe(frozenNumber);
    const batch = `[${call("eth_blockNumber", [], 1)},${call("eth_chainId", [], 2)}]`;
    expect(JSON.parse((await post(shim.url, batch)).text)).toEqual([
      { jsonrpc: "2.0", id: 1, result: frozenNumber },
      { jsonrpc: "2.0", id: 2, result: "0x539" },
    ]);
    await expectPassThrough();

    await shim.setFault(null);
    expect(Number(await rpcResult(shim.url, "eth_blockNumber"))).toBe(Number(frozenNumber) + 3);
  });

  it("chain_id: reports another chain id, forwards everything else", async () => {
    await shim.setFault({ kind: "chain_id", id: 10 });
    expect(await rpcResult(shim.url, "eth_chainId")).toBe("0xa");
    const batch = `[${call("eth_chainId", [], 1)},${call("net_version", [], 2)}]`;
    expect(JSON.parse((await post(shim.url, batch)).text)).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0xa" },
      { jsonrpc: "2.0", id: 2, result: "1337" },
    ]);
    await expectPassThrough();
    await shim.setFault(null);
    expect(await rpcResult(shim.url, "eth_chainId")).toBe("0x539");
  });

  it("resets callers when the upstream itself is gone", async () => {
    const doomed = await startAnvil({ chainId: 9 });
    const front = await startFaultShim(doomed.url);
    try {
      expect(await rpcResult(front.url, "eth_chainId")).toBe("0x9");
      doomed.kill();
      await once(doomed.process, "exit");
      await expect(post(front.url, call("eth_chainId"))).rejects.toThrow();
    } finally {
      await front.close();
      await doomed.stop();
    }
  });
});

async function expectGatewayTable(db: LocalDynamoDb): Promise<void> {
  const client = createLocalDynamoDbClient(db.endpoint);
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: db.tableName }));
    expect(Table?.TableStatus).toBe("ACTIVE");
    expect(Table?.KeySchema).toEqual([
      { AttributeName: "pk", KeyType: "HASH" },
      { AttributeName: "sk", KeyType: "RANGE" },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe("PAY_PER_REQUEST");

    const item = { pk: { S: "NET#ethereum" }, sk: { S: "PROVIDER#llama" }, strikes: { N: "0" } };
    await client.send(new PutItemCommand({ TableName: db.tableName, Item: item }));
    const { Item } = await client.send(
      new GetItemCommand({ TableName: db.tableName, Key: { pk: item.pk, sk: item.sk } }),
    );
    expect(Item).toEqual(item);
    await expect(
      client.send(
        new PutItemCommand({
          TableName: db.tableName,
          Item: item,
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    ).rejects.toBeInstanceOf(ConditionalCheckFailedException);

    // Creating the table again is harmless.
    await createGatewayTable(client, db.tableName);
  } finally {
    client.destroy();
  }
}

describe("local DynamoDB", () => {
  it("dynalite starts on 127.0.0.1 with the gateway table", async () => {
    const db = await startDynalite({ tableName: "gateway-state" });
    try {
      expect(db.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await expectGatewayTable(db);
    } finally {
      await db.close();
    }
    await expect(get(db.endpoint)).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it.skipIf(!RUN_DYNAMODB_LOCAL)(
    "DynamoDB Local starts with the gateway table and stops",
    async () => {
      const db = await startDynamoDbLocal({ tableName: "gateway-state" });
      try {
        expect(db.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        await expectGatewayTable(db);
      } finally {
        await db.close();
      }
      await expect(get(db.endpoint)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    },
    180_000,
  );
});

describe("API Gateway HTTP API emulator", () => {
  let gateway: ApiGatewayEmulator;
  let current: ApiGatewayHandler;
  let invocations = 0;

  beforeAll(async () => {
    gateway = await startApiGateway({
      host: "127.0.0.1",
      integrationTimeoutMs: 300,
      handler: (event, context) => {
        invocations++;
        return current(event, context);
      },
    });
  });
  afterAll(() => gateway?.close());

  const echo: ApiGatewayHandler = async (event, context) => ({
    statusCode: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      event,
      remainingMs: context.getRemainingTimeInMillis(),
      awsRequestId: context.awsRequestId,
      functionName: context.functionName,
    }),
  });

  interface Echoed {
    event: APIGatewayProxyEventV2;
    remainingMs: number;
    awsRequestId: string;
    functionName: string;
  }

  it("builds a payload format 2.0 event like the stack's greedy POST route", async () => {
    current = echo;
    const sentAt = Date.now();
    const path = `/ethereum/get/eth_call/${encodeURIComponent('["a/b c"]')}`;
    const answer = await post(
      `${gateway.url}${path}?x=1&x=2&y=a+b&z=%2B&flag`,
      '{"jsonrpc":"2.0"}',
      {
        headers: [
          "Content-Type",
          "application/json",
          "X-Multi",
          "one",
          "X-Multi",
          "two",
          "Cookie",
          "a=1; b=2",
          "User-Agent",
          "local-runtime-test",
        ],
      },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers["apigw-requestid"]).toBeTypeOf("string");
    const { event, remainingMs, awsRequestId, functionName } = JSON.parse(answer.text) as Echoed;

    expect(event.version).toBe("2.0");
    expect(event.routeKey).toBe("POST /{proxy+}");
    // HTTP APIs deliver the path decoded, "%2F" included.
    expect(event.rawPath).toBe('/ethereum/get/eth_call/["a/b c"]');
    expect(event.rawQueryString).toBe("x=1&x=2&y=a+b&z=%2B&flag");
    expect(event.queryStringParameters).toEqual({ x: "1,2", y: "a b", z: "+", flag: "" });
    expect(event.cookies).toEqual(["a=1", "b=2"]);
    expect(event.headers["x-multi"]).toBe("one,two");
    expect(event.headers["content-type"]).toBe("application/json");
    expect(event.headers.cookie).toBeUndefined();
    expect(event.headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(event.headers["x-forwarded-proto"]).toBe("http");
    expect(event.headers["x-amzn-trace-id"]).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    expect(Object.keys(event.headers).every((name) => name === name.toLowerCase())).toBe(true);
    expect(event.body).toBe('{"jsonrpc":"2.0"}');
    expect(event.isBase64Encoded).toBe(false);
    expect(event.pathParameters).toEqual({ proxy: 'ethereum/get/eth_call/["a/b c"]' });
    expect(event).not.toHaveProperty("stageVariables");

    const context = event.requestContext;
    expect(context).toMatchObject({
      accountId: "123456789012",
      apiId: "local",
      domainName: "127.0.0.1",
      domainPrefix: "127",
      routeKey: "POST /{proxy+}",
      stage: "$default",
      requestId: answer.headers["apigw-requestid"],
      http: {
        method: "POST",
        path: '/ethereum/get/eth_call/["a/b c"]',
        protocol: "HTTP/1.1",
        sourceIp: "127.0.0.1",
        userAgent: "local-runtime-test",
      },
    });
    expect(context.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
    expect(context.timeEpoch).toBeGreaterThanOrEqual(sentAt - 1000);
    expect(context.timeEpoch).toBeLessThanOrEqual(Date.now());

    expect(remainingMs).toBeGreaterThan(0);
    expect(remainingMs).toBeLessThanOrEqual(29_000);
    expect(awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(functionName).toBeTypeOf("string");
  });

  it("leaves out query parameters, cookies and body when there are none", async () => {
    current = echo;
    const { event } = JSON.parse((await get(`${gateway.url}/health`)).text) as Echoed;
    expect(event.rawPath).toBe("/health");
    expect(event.rawQueryString).toBe("");
    expect(event.requestContext.http.method).toBe("GET");
    expect(event).not.toHaveProperty("queryStringParameters");
    expect(event).not.toHaveProperty("cookies");
    expect(event).not.toHaveProperty("body");
    expect(event.isBase64Encoded).toBe(false);
  });

  it("base64-encodes a body that is not UTF-8", async () => {
    current = echo;
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    const answer = await post(`${gateway.url}/bin`, bytes, {
      headers: { "content-type": "application/octet-stream" },
    });
    const { event } = JSON.parse(answer.text) as Echoed;
    expect(event.isBase64Encoded).toBe(true);
    expect(event.body).toBe(bytes.toString("base64"));
  });

  it("writes the result: status, headers, cookies, base64 body", async () => {
    current = async () => ({
      statusCode: 200,
      headers: { "content-type": "application/octet-stream", "x-count": 3 },
      cookies: ["s=1; Path=/", "t=2"],
      body: Buffer.from([1, 2, 3, 250]).toString("base64"),
      isBase64Encoded: true,
    });
    const response = await request(`${gateway.url}/`, { dispatcher: agent });
    expect(response.statusCode).toBe(200);
    expect(response.headers["x-count"]).toBe("3");
    expect(response.headers["set-cookie"]).toEqual(["s=1; Path=/", "t=2"]);
    expect(response.headers.connection).toBe("keep-alive");
    expect([...Buffer.from(await response.body.arrayBuffer())]).toEqual([1, 2, 3, 250]);

    current = async () => ({ statusCode: 404, body: "nope" });
    expect(await get(`${gateway.url}/`)).toMatchObject({ status: 404, text: "nope" });
  });

  it("answers 413 above the 10 MB payload cap without invoking the handler", async () => {
    current = async (event) => ({ statusCode: 200, body: String(event.body?.length) });
    const before = invocations;
    // Under API Gateway's cap but over Lambda's 6 MB request limit.
    const atCap = await post(`${gateway.url}/`, Buffer.alloc(MAX_PAYLOAD_BYTES, "a"));
    expect(atCap).toMatchObject({ status: 413, text: '{"message":"Request Too Long"}' });

    const tooLarge = await post(`${gateway.url}/`, Buffer.alloc(MAX_PAYLOAD_BYTES + 1, "a"));
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.text)).toEqual({ message: "Request Entity Too Large" });
    expect(invocations).toBe(before);
  });

  it("maps a throwing handler to 500 without leaking the error", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      current = async () => {
        throw new Error("secret upstream https://key@provider.example detail");
      };
      const answer = await post(`${gateway.url}/`, "{}");
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.text)).toEqual({ message: "Internal Server Error" });
      expect(answer.text).not.toContain("secret");
      expect(logged).toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
  });

  it("answers 503 when the handler outlives the integration timeout", async () => {
    current = () => new Promise(() => undefined);
    const answer = await post(`${gateway.url}/`, "{}");
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toEqual({ message: "Service Unavailable" });
  });

  it("rejects a path API Gateway cannot decode", async () => {
    current = echo;
    const before = invocations;
    const answer = await get(`${gateway.url}/a%25zz`);
    expect(answer.status).toBe(400);
    expect(invocations).toBe(before);
  });
});

describe("execution-apis fixtures", () => {
  const fixtures = loadExecutionApisFixtures();
  const exchanges = fixtures.flatMap((fixture) => fixture.exchanges);
  let replay: ReplayUpstream;

  beforeAll(async () => {
    replay = await startReplayUpstream(exchanges);
  });
  afterAll(() => replay?.close());

  it("parses every .io file into request/response pairs", () => {
    expect(fixtures.length).toBeGreaterThan(100);
    expect(fixtures.every((fixture) => fixture.file.endsWith(".io"))).toBe(true);
    expect(fixtures.every((fixture) => fixture.exchanges.length > 0)).toBe(true);
    expect(fixtures.some((fixture) => fixture.exchanges.length === 2)).toBe(true);
    expect(fixtures.some((fixture) => fixture.specOnly)).toBe(true);
    const chainId = fixtures.find((fixture) => fixture.file.startsWith("eth_chainId/"));
    expect(chainId?.exchanges).toEqual([
      {
        request: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
        response: '{"jsonrpc":"2.0","id":1,"result":"0xc72dd9d5e883e"}',
      },
    ]);
  });

  it("replays every recorded response byte for byte", async () => {
    for (const { request: recordedRequest, response } of exchanges) {
      expect((await post(replay.url, recordedRequest)).text).toBe(response);
    }
  });

  it("puts back the caller's id, matches params regardless of key order, answers batches", async () => {
    const answer = await post(replay.url, call("eth_chainId", [], "abc"));
    expect(answer.text).toBe('{"jsonrpc":"2.0","id":"abc","result":"0xc72dd9d5e883e"}');

    const recorded = exchanges.find((exchange) => exchange.request.includes('"eth_getBalance"'));
    if (recorded === undefined) throw new Error("no eth_getBalance recording");
    const { params } = JSON.parse(recorded.request) as { params: unknown[] };
    const reordered = JSON.stringify({ params, method: "eth_getBalance", id: 99, jsonrpc: "2.0" });
    const expected = JSON.parse(recorded.response) as Record<string, unknown>;
    expect(JSON.parse((await post(replay.url, reordered)).text)).toEqual({ ...expected, id: 99 });

    const batch = `[${call("eth_chainId", [], 1)},${call("eth_nothing", [], 2)}]`;
    expect(JSON.parse((await post(replay.url, batch)).text)).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0xc72dd9d5e883e" },
      { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "no recording" } },
    ]);
  });
});
