import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentityProvider, Checksum, SourceData } from "@smithy/types";
import { decodeContent } from "../upstream/content-coding.ts";

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
  /** `etag` is "" when the answer had none. */
  | { readonly text: string; readonly etag: string }
  /** 304 to `If-None-Match`: the object still has the ETag the caller holds. */
  | "unchanged";

export interface S3ObjectReader {
  /** `timeoutMs` bounds the whole read: credentials, signing, connection, headers and body. */
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

/** A 200 whose body is not UTF-8 text: a bad object (to reject once), not an unreachable S3. */
export class S3ObjectNotText extends Error {
  readonly etag: string;

  constructor(etag: string) {
    super("the object is not UTF-8 text: not a gateway config");
    this.name = "NotText";
    this.etag = etag;
  }
}

/** Larger than any config the schema accepts; a bigger answer is cut off as an error. */
const MAX_OBJECT_BYTES = 8 * 1024 * 1024;
/** S3's error documents are a few hundred bytes; only this much of one is read. */
const MAX_ERROR_BYTES = 16 * 1024;
/** S3's error codes are short identifiers; anything else is not taken as one. */
const ERROR_CODE = /^[A-Za-z][A-Za-z0-9.]{0,63}$/;
const MAX_ERROR_MESSAGE = 300;

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

/** Where the GET goes. The path is sent as built: a URL would resolve `.` and `..` segments of the key. */
export interface S3ObjectAddress {
  readonly protocol: "http:" | "https:";
  /** Host and port, as the `Host` header carries them. */
  readonly host: string;
  readonly path: string;
}

/** Path-style on an S3-compatible server, else virtual-hosted on the bucket's domain. */
export function s3ObjectAddress(location: S3ObjectLocation): S3ObjectAddress {
  const key = encodeKey(location.key);
  const base = new URL(
    location.endpoint ??
      `https://${location.domain ?? `${location.bucket}.s3.${location.region}.amazonaws.com`}`,
  );
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new Error(`an S3 endpoint is http or https, not ${base.protocol}`);
  }
  const path =
    location.endpoint === undefined
      ? `/${key}`
      : `${base.pathname.replace(/\/+$/, "")}/${encodeURIComponent(location.bucket)}/${key}`;
  return { protocol: base.protocol, host: base.host, path };
}

/** Removes what was sent to S3 and could be echoed back (the signature, the session token). */
function scrubberOf(sent: Readonly<Record<string, string>>): (text: string) => string {
  const authorization = sent.authorization ?? "";
  const secrets = [
    authorization,
    /Signature=([0-9a-f]+)/.exec(authorization)?.[1] ?? "",
    sent["x-amz-security-token"] ?? "",
  ].filter((value) => value.length >= 8);
  return (text) => secrets.reduce((clean, secret) => clean.replaceAll(secret, "[redacted]"), text);
}

/** `<Code>` and `<Message>` of an S3 XML error body, when it has them, made safe to log. */
function s3Error(status: number, body: string, scrub: (text: string) => string): S3ObjectError {
  const field = (name: string) =>
    new RegExp(`<${name}>([^<]{0,2000})</${name}>`).exec(body)?.[1]?.trim();
  const code = field("Code");
  const message = scrub(field("Message") ?? "")
    .replace(/\p{Cc}+/gu, " ")
    .slice(0, MAX_ERROR_MESSAGE)
    .trim();
  return new S3ObjectError(
    code !== undefined && ERROR_CODE.test(code) && scrub(code) === code
      ? code
      : status === 404
        ? "NotFound"
        : `Http${status}`,
    message || `HTTP ${status} from S3`,
    status,
  );
}

/** The body as sent, decoded from its `Content-Encoding` (S3 serves an object as uploaded). */
function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  const decoded = decodeContent(body, encoding, MAX_OBJECT_BYTES);
  if (decoded.ok) return decoded.body;
  if (decoded.problem === "unsupported") {
    throw new Error(
      `the object has Content-Encoding ${decoded.coding}, which this reader does not decode`,
    );
  }
  const why = decoded.problem === "too_large" ? `over ${MAX_OBJECT_BYTES} bytes` : "corrupt";
  throw new Error(`the object's ${decoded.coding} encoding is ${why}: not a gateway config`);
}

/** Strict, and a byte-order mark is kept: the document is then not the one prepared at build time. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The answer to a GET, once its body is read. */
function answerOf(
  res: IncomingMessage,
  body: Buffer,
  ifNoneMatch: string | undefined,
  scrub: (text: string) => string,
): S3ObjectAnswer {
  const status = res.statusCode ?? 0;
  if (status === 304) {
    if (ifNoneMatch) return "unchanged";
    // Unasked for: taken as "unchanged", a cold start would use its bundled copy and report nothing.
    throw new S3ObjectError("Http304", "HTTP 304 to a GET without If-None-Match", status);
  }
  if (status !== 200) throw s3Error(status, body.toString("utf8"), scrub);
  const etag = typeof res.headers.etag === "string" ? res.headers.etag : "";
  const decoded = decodeBody(body, res.headers["content-encoding"]);
  try {
    return { text: UTF8.decode(decoded), etag };
  } catch {
    throw new S3ObjectNotText(etag);
  }
}

function timeoutError(timeoutMs: number): Error {
  const error = new Error(`no complete answer from S3 within ${timeoutMs} ms`);
  error.name = "TimeoutError";
  return error;
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

  const read = async (ifNoneMatch: string | undefined, deadline: AbortSignal) => {
    // Built here, not at import: a malformed endpoint is a failed read, not a crashed init.
    const address = s3ObjectAddress(location);
    const url = new URL(`${address.protocol}//${address.host}`);
    const signing = signer.sign({
      method: "GET",
      protocol: address.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: address.path,
      query: {},
      headers: {
        host: address.host,
        ...(ifNoneMatch ? { "if-none-match": ifNoneMatch } : {}),
      },
    });
    // A credential chain still looking (an instance metadata service that does not answer)
    // is given up at the deadline.
    const signed = await Promise.race([
      signing,
      new Promise<never>((_, reject) => {
        if (deadline.aborted) reject(deadline.reason);
        deadline.addEventListener("abort", () => reject(deadline.reason), { once: true });
      }),
    ]);
    const scrub = scrubberOf(signed.headers);
    const send = address.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<S3ObjectAnswer>((resolve, reject) => {
      let answering = false;
      const fail = (error: unknown) => reject(deadline.aborted ? deadline.reason : error);
      const req = send(
        {
          protocol: address.protocol,
          // A bracketed IPv6 literal is a URL's spelling, not a host name.
          hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
          ...(url.port ? { port: Number(url.port) } : {}),
          path: address.path,
          method: "GET",
          headers: signed.headers,
          signal: deadline,
          // No keep-alive socket outlives the read: reads are `config_refresh_seconds` apart,
          // longer than an idle socket is kept, and a frozen Lambda would carry it and its timer.
          agent: false,
        },
        (res: IncomingMessage) => {
          answering = true;
          const status = res.statusCode ?? 0;
          const limit = status === 200 ? MAX_OBJECT_BYTES : MAX_ERROR_BYTES;
          const chunks: Buffer[] = [];
          let size = 0;
          let settled = false;
          const settle = () => {
            if (settled) return;
            settled = true;
            try {
              resolve(answerOf(res, Buffer.concat(chunks), ifNoneMatch, scrub));
            } catch (error) {
              reject(error);
            }
          };
          res.on("data", (chunk: Buffer) => {
            if (settled) return;
            const room = limit - size;
            size += chunk.length;
            if (chunk.length <= room) {
              chunks.push(chunk);
            } else if (status !== 200) {
              // An error's first bytes name it; the rest is not waited for.
              chunks.push(chunk.subarray(0, room));
              settle();
              res.destroy();
            } else {
              settled = true;
              res.destroy();
              reject(
                new Error(`the object is over ${MAX_OBJECT_BYTES} bytes: not a gateway config`),
              );
            }
          });
          res.on("error", (error) => {
            if (settled) return;
            settled = true;
            fail(new Error(`S3's answer was cut off: ${error.message}`));
          });
          res.on("end", () => {
            if (res.complete) settle();
            else if (!settled) {
              settled = true;
              fail(new Error("S3's answer was cut off before its end"));
            }
          });
        },
      );
      req.on("error", (error) =>
        fail(answering ? new Error(`S3's answer was cut off: ${error.message}`) : error),
      );
      req.end();
    });
  };

  return {
    async get({ ifNoneMatch, timeoutMs }) {
      const deadline = new AbortController();
      // Cleared when the read settles, so no timer outlives it into a frozen Lambda's next thaw.
      const timer = setTimeout(() => deadline.abort(timeoutError(timeoutMs)), timeoutMs);
      try {
        return await read(ifNoneMatch, deadline.signal);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
