import type { APIGatewayProxyEventV2 } from "aws-lambda";

/** A minimal API Gateway HTTP API (payload 2.0) event: a JSON-RPC POST to `/{network}`. */
export function rpcEvent(body: string, network = "devnet"): APIGatewayProxyEventV2 {
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: `/${network}`,
    rawQueryString: "",
    headers: { "content-type": "application/json" },
    body,
    isBase64Encoded: false,
    requestContext: { http: { method: "POST", path: `/${network}` } },
  } as unknown as APIGatewayProxyEventV2;
}
