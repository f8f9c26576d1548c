import { createHash, createHmac } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * What S3 does with a request's `Authorization` header, written from AWS's Signature Version 4
 * description independently of the SDK's signer: rebuild the canonical request from what
 * arrived, derive the signing key from the secret, and compare signatures. For tests of code
 * that signs its own requests, against servers that do not check (s3rver accepts any).
 */
export interface SignatureCheck {
  readonly valid: boolean;
  readonly accessKeyId: string;
  readonly scope: string;
  readonly signedHeaders: readonly string[];
}

const hmac = (key: Buffer | string, data: string): Buffer =>
  createHmac("sha256", key).update(data, "utf8").digest();

export function checkSigV4(request: IncomingMessage, secretAccessKey: string): SignatureCheck {
  const header = request.headers.authorization ?? "";
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      header,
    );
  if (match === null) return { valid: false, accessKeyId: "", scope: "", signedHeaders: [] };
  const [, accessKeyId = "", date = "", region = "", service = "", signed = "", signature] = match;
  const signedHeaders = signed.split(";");
  const [path = "", query = ""] = (request.url ?? "").split("?");
  const canonicalQuery = query
    .split("&")
    .filter((part) => part !== "")
    .sort()
    .join("&");
  const canonicalHeaders = signedHeaders
    .map((name) => {
      const value = request.headers[name];
      const text = Array.isArray(value) ? value.join(",") : (value ?? "");
      return `${name}:${text.trim().replace(/\s+/g, " ")}\n`;
    })
    .join("");
  const payloadHash = String(request.headers["x-amz-content-sha256"] ?? "");
  const canonicalRequest = [
    request.method,
    path,
    canonicalQuery,
    canonicalHeaders,
    signed,
    payloadHash,
  ].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = [
    "AWS4-HMAC-SHA256",
    String(request.headers["x-amz-date"] ?? ""),
    scope,
    createHash("sha256").update(canonicalRequest, "utf8").digest("hex"),
  ].join("\n");
  const key = hmac(
    hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service),
    "aws4_request",
  );
  const expected = hmac(key, stringToSign).toString("hex");
  return { valid: expected === signature, accessKeyId, scope, signedHeaders };
}
