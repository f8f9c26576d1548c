import {
  createServer,
  type IncomingHttpHeaders,
  type RequestListener,
  type Server,
} from "node:http";
import type { AddressInfo } from "node:net";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createS3ObjectReader,
  S3ObjectError,
  s3ObjectAddress,
} from "../../../../functions/adapters/config/s3-object.ts";
import { type S3Bucket, s3rverObjectReader, startS3Bucket } from "../../../support/s3-bucket.ts";
import { checkSigV4, type SignatureCheck } from "../../../support/sigv4-check.ts";

/**
 * The signed GET the functions read their config object with, against s3rver (which checks
 * SigV4 signatures) and against plain HTTP servers that misbehave as S3 or a proxy could.
 */

const BUCKET = "object-reader";
let bucket: S3Bucket;

beforeAll(async () => {
  bucket = await startS3Bucket(BUCKET);
});

afterAll(async () => {
  await bucket?.close();
});

async function put(key: string, body: string): Promise<string> {
  const answer = await bucket.client.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }),
  );
  return answer.ETag ?? "";
}

describe("reading an object from an S3 API that checks signatures", () => {
  it.each([
    ["config/dev.json"],
    ["a key with spaces/and (parens) + plus=equals.json"],
    ["ünïcödé/€.json"],
  ])("reads %s with its ETag", async (key) => {
    const etag = await put(key, `{"key":${JSON.stringify(key)}}`);
    const answer = await s3rverObjectReader(bucket.endpoint, BUCKET, key).get({ timeoutMs: 2000 });
    expect(answer).toEqual({ text: `{"key":${JSON.stringify(key)}}`, etag });
  });

  it("answers unchanged to the ETag it holds, and the object to another", async () => {
    const etag = await put("conditional.json", "{}");
    const reader = s3rverObjectReader(bucket.endpoint, BUCKET, "conditional.json");
    expect(await reader.get({ ifNoneMatch: etag, timeoutMs: 2000 })).toBe("unchanged");
    expect(await reader.get({ ifNoneMatch: '"0000"', timeoutMs: 2000 })).toEqual({
      text: "{}",
      etag,
    });
  });

  it("names a missing object by S3's error code", async () => {
    const failure = await s3rverObjectReader(bucket.endpoint, BUCKET, "missing.json")
      .get({ timeoutMs: 2000 })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(S3ObjectError);
    expect(failure).toMatchObject({ name: "NoSuchKey", status: 404 });
  });
});

/** A plain HTTP server standing in for S3 or a proxy in front of it. */
let server: Server | undefined;
async function serve(respond: RequestListener): Promise<string> {
  server = createServer(respond);
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  const running = server;
  server = undefined;
  if (running === undefined) return;
  running.closeAllConnections();
  await new Promise((resolve) => running.close(resolve));
});

describe("what reaches S3, and a misbehaving answer", () => {
  it.each([
    ["config/dev.json", undefined],
    ["a key with spaces/and (parens) + plus=equals*.json", undefined],
    ["ünïcödé/€.json", "session-token-1"],
  ])("signs a GET of %s as S3 checks it (session token %s)", async (key, sessionToken) => {
    const secretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let check: SignatureCheck | undefined;
    let wrongSecret: SignatureCheck | undefined;
    let seen: IncomingHttpHeaders = {};
    const endpoint = await serve((request, response) => {
      seen = request.headers;
      check = checkSigV4(request, secretAccessKey);
      wrongSecret = checkSigV4(request, `${secretAccessKey}x`);
      response.writeHead(200, { etag: '"abc"' }).end("{}");
    });
    const reader = createS3ObjectReader(
      { bucket: "b", key, region: "eu-west-1", endpoint },
      async () => ({
        accessKeyId: "AKIDEXAMPLE",
        secretAccessKey,
        ...(sessionToken ? { sessionToken } : {}),
      }),
    );
    expect(await reader.get({ ifNoneMatch: '"old"', timeoutMs: 2000 })).toEqual({
      text: "{}",
      etag: '"abc"',
    });
    expect(check).toMatchObject({ valid: true, accessKeyId: "AKIDEXAMPLE" });
    expect(check?.scope).toMatch(/^\d{8}\/eu-west-1\/s3\/aws4_request$/);
    expect(check?.signedHeaders).toEqual(
      expect.arrayContaining(["host", "if-none-match", "x-amz-content-sha256", "x-amz-date"]),
    );
    expect(wrongSecret?.valid).toBe(false);
    // A role's temporary credentials: the token travels, signed.
    expect(seen["x-amz-security-token"]).toBe(sessionToken);
    expect(check?.signedHeaders.includes("x-amz-security-token")).toBe(sessionToken !== undefined);
  });

  it.each([
    [{ endpoint: "http://127.0.0.1:9000/" }, "http://127.0.0.1:9000/b/config/a%20b.json"],
    [{ endpoint: "http://[::1]:9000/s3" }, "http://[::1]:9000/s3/b/config/a%20b.json"],
    [
      { domain: "b.s3.cn-north-1.amazonaws.com.cn" },
      "https://b.s3.cn-north-1.amazonaws.com.cn/config/a%20b.json",
    ],
    [{}, "https://b.s3.eu-west-1.amazonaws.com/config/a%20b.json"],
  ])("addresses %j as %s", (where, url) => {
    const location = { bucket: "b", key: "config/a b.json", region: "eu-west-1", ...where };
    const address = s3ObjectAddress(location);
    expect(`${address.protocol}//${address.host}${address.path}`).toBe(url);
  });

  it("fails a read that gets no answer within its timeout", async () => {
    const endpoint = await serve(() => undefined);
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint },
      async () => ({ accessKeyId: "AKIA", secretAccessKey: "secret" }),
    );
    await expect(reader.get({ timeoutMs: 50 })).rejects.toMatchObject({
      name: "TimeoutError",
      message: "no complete answer from S3 within 50 ms",
    });
  });

  it("names an error page that is not S3's XML by its HTTP status", async () => {
    const endpoint = await serve((_, response) => {
      response.writeHead(503, { "content-type": "text/html" }).end("<html>Bad gateway</html>");
    });
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint },
      async () => ({ accessKeyId: "AKIA", secretAccessKey: "secret" }),
    );
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toMatchObject({
      name: "Http503",
      status: 503,
      message: "HTTP 503 from S3",
    });
  });

  it("cuts off an answer larger than any config", async () => {
    const endpoint = await serve((_, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 9; i++) response.write(chunk);
      response.end();
    });
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint },
      async () => ({ accessKeyId: "AKIA", secretAccessKey: "secret" }),
    );
    await expect(reader.get({ timeoutMs: 5000 })).rejects.toThrow(/over 8388608 bytes/);
  });

  it.each([
    ["not a url", /Invalid URL/],
    ["ftp://127.0.0.1:21", /an S3 endpoint is http or https, not ftp:/],
  ])("fails the read, not the import, on the malformed endpoint %s", async (endpoint, error) => {
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint },
      async () => ({ accessKeyId: "AKIA", secretAccessKey: "secret" }),
    );
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toThrow(error);
  });
});
