import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentityProvider, Checksum, SourceData } from "@smithy/types";

/**
 * Reading one S3 object with a SigV4-signed GET, instead of the S3 client. The gateway reads
 * nothing from S3 but its config object, and the client costs every cold start the parsing of
 * ~130 KB of bundled code and the first run of its middleware stack (bench/RESULTS.md, cold
 * start). The signing, the credential chain and the SHA-256 are the SDK's own packages, which
 * the DynamoDB client brings anyway; only the request is ours.
 */

export interface S3ObjectLocation {
  readonly bucket: string;
  readonly key: string;
  readonly region: string;
  /**
   * The bucket's regional virtual-hosted domain (`bucket.s3.region.amazonaws.com`, or another
   * partition's); by default the commercial partition's.
   */
  readonly domain?: string;
  /** An S3-compatible server's URL (`S3_ENDPOINT` locally), addressed path-style; wins over `domain`. */
  readonly endpoint?: string;
}

export type S3ObjectAnswer =
  | { readonly text: string; readonly etag: string }
  /** 304 to `If-None-Match`: the object still has the ETag the caller holds. */
  | "unchanged";

export interface S3ObjectReader {
  get(options: { ifNoneMatch?: string; timeoutMs: number }): Promise<S3ObjectAnswer>;
}

/** An S3 error answer, named by S3's own error code (`AccessDenied`, `NoSuchKey`, …). */
export class S3ObjectError extends Error {
  readonly status: number;

  constructor(code: string, message: string, status: number) {
    super(message);
    this.name = code;
    this.status = status;
  }
}

/** Larger than any config the schema accepts; a bigger answer is cut off as an error. */
const MAX_OBJECT_BYTES = 8 * 1024 * 1024;

/** SHA-256 and HMAC-SHA-256 from node:crypto, in the shape SignatureV4 asks for. */
class NodeSha256 implements Checksum {
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#fresh();
  }

  #fresh(): Hash | Hmac {
    return this.#secret === undefined
      ? createHash("sha256")
      : createHmac("sha256", toBuffer(this.#secret));
  }

  update(data: Uint8Array): void {
    this.#hash.update(toBuffer(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }

  reset(): void {
    this.#hash = this.#fresh();
  }
}

function toBuffer(data: SourceData): Buffer {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/** S3 keys keep their slashes; every other reserved character is percent-encoded. */
function encodeKey(key: string): string {
  return key
    .split("/")
    .map((segment) =>
      encodeURIComponent(segment).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      ),
    )
    .join("/");
}

/** Path-style on an S3-compatible server, else virtual-hosted on the bucket's domain. */
export function s3ObjectUrl(location: S3ObjectLocation): URL {
  const key = encodeKey(location.key);
  if (location.endpoint !== undefined) {
    const base = location.endpoint.replace(/\/+$/, "");
    return new URL(`${base}/${encodeURIComponent(location.bucket)}/${key}`);
  }
  const domain = location.domain ?? `${location.bucket}.s3.${location.region}.amazonaws.com`;
  return new URL(`https://${domain}/${key}`);
}

/** `<Code>` and `<Message>` of an S3 XML error body, when it has them. */
function s3Error(status: number, body: string): S3ObjectError {
  const field = (name: string) =>
    new RegExp(`<${name}>([^<]{0,500})</${name}>`).exec(body)?.[1]?.trim();
  const code = field("Code") ?? (status === 404 ? "NotFound" : `Http${status}`);
  return new S3ObjectError(code, field("Message") ?? `HTTP ${status} from S3`, status);
}

export function createS3ObjectReader(
  location: S3ObjectLocation,
  credentials: AwsCredentialIdentityProvider = defaultProvider(),
): S3ObjectReader {
  const signer = new SignatureV4({
    service: "s3",
    region: location.region,
    credentials,
    sha256: NodeSha256,
    // S3 signs the path as sent: its segments are not encoded a second time.
    uriEscapePath: false,
    applyChecksum: true,
  });
  return {
    async get({ ifNoneMatch, timeoutMs }) {
      // Built here, not at import: a malformed endpoint is a failed read, not a crashed init.
      const url = s3ObjectUrl(location);
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const signed = await signer.sign({
        method: "GET",
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query: {},
        headers: {
          host: url.host,
          ...(ifNoneMatch ? { "if-none-match": ifNoneMatch } : {}),
        },
      });
      return new Promise<S3ObjectAnswer>((resolve, reject) => {
        const req = send(
          url,
          { method: "GET", headers: signed.headers, signal: AbortSignal.timeout(timeoutMs) },
          (res: IncomingMessage) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on("data", (chunk: Buffer) => {
              size += chunk.length;
              if (size > MAX_OBJECT_BYTES) {
                res.destroy(
                  new Error(`the object is over ${MAX_OBJECT_BYTES} bytes: not a gateway config`),
                );
              } else chunks.push(chunk);
            });
            res.on("error", reject);
            res.on("end", () => {
              const status = res.statusCode ?? 0;
              const body = Buffer.concat(chunks, size).toString("utf8");
              if (status === 304) resolve("unchanged");
              else if (status >= 200 && status < 300) {
                const etag = res.headers.etag;
                resolve({ text: body, etag: typeof etag === "string" ? etag : "" });
              } else reject(s3Error(status, body));
            });
          },
        );
        req.on("error", reject);
        req.end();
      });
    },
  };
}
