import { DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import middy from "@middy/core";
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { createUpstream } from "../../functions/adapters/upstream/upstream.ts";

/**
 * The bench's baseline Lambda: the least a proxy handler on this stack does. It imports middy
 * and the same two AWS SDK clients as the gateway, makes the same three calls on its first
 * request (the config object from S3, one Query of the network's state, the upstream call)
 * and afterwards only forwards the body with the same HTTP client (the gateway's upstream
 * adapter). No routing, checks or metrics.
 */

const env = process.env;
const s3 = new S3Client({
  ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT, forcePathStyle: true } : {}),
  region: env.AWS_REGION ?? "us-east-1",
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
const dynamo = new DynamoDBClient({
  ...(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {}),
  region: env.AWS_REGION ?? "us-east-1",
});
const upstream = createUpstream();

let providerUrl: Promise<string> | undefined;

async function loadProvider(network: string): Promise<string> {
  const object = await s3.send(
    new GetObjectCommand({ Bucket: env.CONFIG_BUCKET, Key: env.CONFIG_KEY }),
  );
  const config = JSON.parse((await object.Body?.transformToString("utf-8")) ?? "{}") as {
    networks: Record<string, { providers: Array<{ url: string }> }>;
  };
  await dynamo.send(
    new QueryCommand({
      TableName: env.TABLE_NAME,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": { S: `NET#${network}` } },
    }),
  );
  const url = config.networks[network]?.providers[0]?.url;
  if (url === undefined) throw new Error(`no provider for ${network}`);
  return url;
}

export const handler = middy<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  Context
>().handler(async (event) => {
  const network = event.rawPath.slice(1);
  providerUrl ??= loadProvider(network);
  const answer = await upstream.send({
    url: await providerUrl,
    body: event.body ?? "",
    timeoutMs: 10_000,
    maxResponseBytes: 6_000_000,
  });
  return answer.ok
    ? {
        statusCode: answer.status,
        headers: { "content-type": "application/json" },
        body: answer.body,
      }
    : { statusCode: 502, body: "upstream failed" };
});
