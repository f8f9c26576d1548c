import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ROUTES, routeKeyOf } from "../../functions/core/http/http-api.ts";
import { ENVIRONMENTS } from "../../infra/environments.ts";
import { PROJECT_ROOT, readGatewayConfig } from "../../infra/gateway-config.ts";
import { GatewayStack } from "../../infra/gateway-stack.ts";
import { routerFor } from "../../local/apigw-routing.ts";
import { CDK_JSON_CONTEXT, type Synthesized, synthGateway } from "./synth.ts";

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string[];
}

const ofType = (resources: Record<string, Resource>, type: string) =>
  Object.entries(resources).filter(([, resource]) => resource.Type === type);

describe.each([ENVIRONMENTS.dev, ENVIRONMENTS.prod])("HTTP API of $name", (settings) => {
  let synth: Synthesized;
  let resources: Record<string, Resource>;
  beforeAll(() => {
    synth = synthGateway(settings.name);
    // The WebSocket API's own resources are test/infra/websocket-api.test.ts's.
    const webSocketApi = synth.stack.getLogicalId(
      synth.stack.webSocket.api.node.defaultChild as never,
    );
    resources = Object.fromEntries(
      Object.entries(synth.template.toJSON().Resources as Record<string, Resource>).filter(
        ([id, resource]) =>
          id !== webSocketApi &&
          (resource.Properties?.ApiId as { Ref?: string } | undefined)?.Ref !== webSocketApi,
      ),
    );
  });
  afterAll(() => rmSync(synth.outdir, { recursive: true, force: true }));

  const routeKeys = () =>
    ofType(resources, "AWS::ApiGatewayV2::Route").map(([, r]) => r.Properties.RouteKey as string);

  it("deploys the shared route table: GET and POST on any path, no OPTIONS route, no $default", () => {
    expect(routeKeys().sort()).toEqual(API_ROUTES.map(routeKeyOf).sort());
    expect(routeKeys().some((key) => key.startsWith("OPTIONS") || key.startsWith("ANY"))).toBe(
      false,
    );
    expect(routeKeys()).not.toContain("$default");
  });

  it("sends every route to the one payload-2.0 integration, which outwaits the function", () => {
    const integrations = ofType(resources, "AWS::ApiGatewayV2::Integration");
    expect(integrations).toHaveLength(1);
    const [integrationId, integration] = integrations[0] ?? [];
    expect(integration?.Properties).toMatchObject({
      IntegrationType: "AWS_PROXY",
      PayloadFormatVersion: "2.0",
      TimeoutInMillis: 30_000,
    });
    for (const [, route] of ofType(resources, "AWS::ApiGatewayV2::Route")) {
      expect(route.Properties.Target).toEqual({
        "Fn::Join": ["", ["integrations/", { Ref: integrationId }]],
      });
    }
    const proxy =
      resources[synth.stack.getLogicalId(synth.stack.proxy.function.node.defaultChild as never)];
    expect(proxy?.Properties.Timeout).toBe(29);
  });

  it("answers CORS preflights at the API from the shared policy and the config's origins", () => {
    const [api] = ofType(resources, "AWS::ApiGatewayV2::Api");
    expect(api?.[1].Properties.CorsConfiguration).toEqual({
      AllowOrigins: readGatewayConfig(settings.name).corsOrigins,
      AllowMethods: ["GET", "POST", "OPTIONS"],
      AllowHeaders: ["content-type", "x-api-key"],
      ExposeHeaders: [
        "x-gateway-provider",
        "x-gateway-attempts",
        "x-gateway-cache",
        "x-gateway-head",
      ],
      MaxAge: 86_400,
    });
  });

  it("throttles the status routes far tighter than JSON-RPC, after the routes exist", () => {
    const [[stageId, stage] = []] = ofType(resources, "AWS::ApiGatewayV2::Stage");
    const { throttle, statusThrottle } = settings.api;
    expect(statusThrottle.rateLimit * 10).toBeLessThanOrEqual(throttle.rateLimit);
    expect(stage?.Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: throttle.rateLimit,
      ThrottlingBurstLimit: throttle.burstLimit,
    });
    const statusKeys = API_ROUTES.filter((route) => route.throttle === "status").map(routeKeyOf);
    expect(statusKeys.sort()).toEqual(["GET /status", "GET /{network}/status"]);
    // CloudFormation's own key names: the property is JSON, nothing converts them.
    expect(stage?.Properties.RouteSettings).toEqual(
      Object.fromEntries(
        statusKeys.map((key) => [
          key,
          {
            ThrottlingRateLimit: statusThrottle.rateLimit,
            ThrottlingBurstLimit: statusThrottle.burstLimit,
          },
        ]),
      ),
    );
    const routeIds = ofType(resources, "AWS::ApiGatewayV2::Route").map(([id]) => id);
    expect(stageId).toBeDefined();
    expect(stage?.DependsOn).toEqual(expect.arrayContaining(routeIds));
  });

  it("routes a request the same way as the local emulator, which reads the same table", () => {
    const deployed = routerFor(routeKeys());
    const local = routerFor(API_ROUTES.map(routeKeyOf));
    const cases: Array<[string, string, string | null]> = [
      ["POST", "/ethereum", "POST /{proxy+}"],
      ["POST", "/", "POST /"],
      ["POST", "/status", "POST /{proxy+}"],
      ["GET", "/ethereum/get/eth_chainId", "GET /{proxy+}"],
      ["GET", '/ethereum/get/eth_getBalance/["0x1","latest"]', "GET /{proxy+}"],
      ["GET", '/ethereum/get/eth_call/["a/b"]', "GET /{proxy+}"],
      ["GET", "/status", "GET /status"],
      ["GET", "/ethereum/status", "GET /{network}/status"],
      ["GET", "/health", "GET /{proxy+}"],
      ["GET", "/", "GET /"],
      ["GET", "/no/such/route", "GET /{proxy+}"],
      ["OPTIONS", "/ethereum", null],
      ["HEAD", "/health", null],
      ["PUT", "/ethereum", null],
      ["DELETE", "/ethereum", null],
    ];
    for (const [method, path, expected] of cases) {
      expect([method, path, deployed(method, path)?.routeKey ?? null]).toEqual([
        method,
        path,
        expected,
      ]);
      expect(local(method, path)).toEqual(deployed(method, path));
    }
  });
});

describe("a config that lists its origins", () => {
  it("puts exactly those origins in the API's CORS configuration", () => {
    const outdir = mkdtempSync(join(tmpdir(), "rpc-gateway-cors-"));
    try {
      const app = new App({
        context: { ...CDK_JSON_CONTEXT, "aws:cdk:bundling-stacks": [] },
        outdir,
      });
      const origins = ["https://app.example.com", "http://localhost:3000"];
      const stack = new GatewayStack(app, "RpcGateway-dev", {
        settings: ENVIRONMENTS.dev,
        config: { ...readGatewayConfig("dev"), corsOrigins: origins },
        projectRoot: PROJECT_ROOT,
      });
      Template.fromStack(stack).hasResourceProperties("AWS::ApiGatewayV2::Api", {
        CorsConfiguration: { AllowOrigins: origins },
      });
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
