import {
  brotliDecompressSync,
  gunzipSync,
  inflateRawSync,
  inflateSync,
  zstdDecompressSync,
} from "node:zlib";

/**
 * Undoes an HTTP `Content-Encoding`. A server may encode an answer to a request that names no
 * coding (HTTP takes that as "any coding will do"), so a body is decoded by what its header
 * says, not by what was asked for. The decoded size is capped: a few KB of gzip can expand to
 * gigabytes.
 */

export type Decoded =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly problem: "too_large"; readonly coding: string }
  | { readonly ok: false; readonly problem: "corrupt"; readonly coding: string }
  /**
   * `coding` is the name as sent when it reads as a coding name, else "(unreadable)";
   * `undone`: the body with the codings applied after that one already undone.
   */
  | {
      readonly ok: false;
      readonly problem: "unsupported";
      readonly coding: string;
      readonly undone: Buffer;
    };

/** `header`: the Content-Encoding as received (codings listed in the order they were applied). */
export function decodeContent(body: Buffer, header: string | undefined, maxBytes: number): Decoded {
  const codings = (header ?? "")
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
  let decoded = body;
  for (const coding of codings.reverse()) {
    const decode = DECODERS.get(coding);
    if (decode === undefined) {
      const named = /^[a-z0-9.+-]{1,32}$/.test(coding) ? coding : "(unreadable)";
      return { ok: false, problem: "unsupported", coding: named, undone: decoded };
    }
    try {
      decoded = decode(decoded, { maxOutputLength: maxBytes });
    } catch (error) {
      return { ok: false, problem: error instanceof RangeError ? "too_large" : "corrupt", coding };
    }
  }
  return { ok: true, body: decoded };
}

type Decoder = (body: Buffer, limits: { maxOutputLength: number }) => Buffer;

/** `deflate` is meant to be zlib-wrapped, but some servers send the raw stream (browsers take both). */
const inflateEither: Decoder = (body, limits) => {
  try {
    return inflateSync(body, limits);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return inflateRawSync(body, limits);
  }
};

const DECODERS: ReadonlyMap<string, Decoder> = new Map<string, Decoder>([
  ["gzip", gunzipSync],
  ["x-gzip", gunzipSync],
  ["deflate", inflateEither],
  ["br", brotliDecompressSync],
  ["zstd", zstdDecompressSync],
]);
