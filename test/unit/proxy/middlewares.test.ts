import middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { describe, expect, it } from "vitest";
import type { FlushableTelemetry } from "../../../functions/adapters/telemetry.ts";
import type { Telemetry } from "../../../functions/core/ports.ts";
import { reportFailedRun } from "../../../functions/monitor/middlewares.ts";
import { flushBesideRequest, jsonRpcErrorBoundary } from "../../../functions/proxy/middlewares.ts";
import { rpcEvent } from "../../support/api-gateway-event.ts";

/** The proxy's and the monitor's middy middlewares, each on a bare middy handler. */

const context = { getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

function telemetry(): Telemetry & { errors: string[] } {
  const errors: string[] = [];
  return {
    errors,
    log: (level, _message, fields = {}) => {
      if (level === "error") errors.push(String(fields.error));
    },
    count: () => undefined,
    measure: () => undefined,
  };
}

function failingHandler(
  error: unknown,
  ...uses: Array<
    middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>
  >
) {
  let handler = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>();
  for (const use of uses) handler = handler.use(use);
  return handler.handler(async () => {
    throw error;
  });
}

describe("jsonRpcErrorBoundary", () => {
  it.each([
    ['{"jsonrpc":"2.0","id":7,"method":"eth_call","params":[]}', "7"],
    ['{"jsonrpc":"2.0","id":"a-1","method":"eth_call"}', '"a-1"'],
    ['  {"id":null,"method":"eth_call"}', "null"],
    ['[{"jsonrpc":"2.0","id":7,"method":"eth_call"}]', "null"],
    ['{"jsonrpc":"2.0","id":{"x":1},"method":"eth_call"}', "null"],
    ["not json", "null"],
  ])("answers a failure for %s with -32603 and id %s, and no stack trace", async (body, id) => {
    const recorded = telemetry();
    const handler = failingHandler(
      new RangeError("Maximum call stack size exceeded"),
      jsonRpcErrorBoundary(recorded, () => ["*"]),
    );
    const result = await handler(rpcEvent(body), context);
    expect(result.statusCode).toBe(503);
    expect(result.body).toBe(
      `{"jsonrpc":"2.0","id":${id},"error":{"code":-32603,"message":"internal gateway error"}}`,
    );
    expect(recorded.errors).toEqual(["Maximum call stack size exceeded"]);
  });

  it("answers with id null for a base64 body it cannot read as text", async () => {
    const handler = failingHandler(
      new Error("boom"),
      jsonRpcErrorBoundary(telemetry(), () => ["*"]),
    );
    const event = {
      ...rpcEvent('{"id":3}'),
      body: Buffer.from('{"id":3}').toString("base64"),
      isBase64Encoded: true,
    };
    const result = await handler(event, context);
    expect(JSON.parse(result.body ?? "")).toMatchObject({ id: null, error: { code: -32603 } });
  });
});

describe("flushBesideRequest", () => {
  it("starts a due flush with the request and answers without waiting for it", async () => {
    let started = 0;
    let release: () => void = () => undefined;
    const flush = flushBesideRequest(() => {
      started++;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    const handler = middy<
      APIGatewayProxyEventV2,
      APIGatewayProxyStructuredResultV2,
      Error,
      Context
    >()
      .use(flush)
      .handler(async () => ({ statusCode: 200, body: "{}" }));
    const result = await handler(rpcEvent("{}"), context);
    expect(result.statusCode).toBe(200);
    expect(started).toBe(1);
    release();
  });

  it("a failing flush neither fails the request nor leaves an unhandled rejection", async () => {
    const flush = flushBesideRequest(() => Promise.reject(new Error("DynamoDB down")));
    const handler = middy<
      APIGatewayProxyEventV2,
      APIGatewayProxyStructuredResultV2,
      Error,
      Context
    >()
      .use(flush)
      .handler(async () => ({ statusCode: 200, body: "{}" }));
    expect((await handler(rpcEvent("{}"), context)).statusCode).toBe(200);
  });
});

describe("reportFailedRun (monitor)", () => {
  it("logs the failure, flushes metrics and still fails the invocation", async () => {
    const recorded = telemetry();
    let flushed = 0;
    const flushable = { ...recorded, flush: () => flushed++ } as unknown as FlushableTelemetry;
    const handler = middy()
      .use(reportFailedRun(flushable) as middy.MiddlewareObj)
      .handler(async () => {
        throw new Error("lease store unreachable");
      });
    await expect(handler({}, context)).rejects.toThrow("lease store unreachable");
    expect(recorded.errors).toEqual(["lease store unreachable"]);
    expect(flushed).toBe(1);
  });
});
