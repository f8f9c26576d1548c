import { Agent, errors, request } from "undici";
import type { Upstream, UpstreamRequest, UpstreamResult } from "../core/ports.ts";
import type { TransportFailure } from "../core/verdict.ts";

/**
 * Upstream HTTP on undici. One keep-alive Agent per container (module scope in the handler)
 * reuses connections across invocations. The idle timeout stays under the few seconds many
 * providers allow, so a pooled socket is rarely stale; a reset before any answer is retried
 * once on a fresh connection rather than blamed on the provider.
 */
export function createUpstream(
  options: { clock?: () => number } = {},
): Upstream & { close(): Promise<void> } {
  const clock = options.clock ?? (() => performance.now());
  const agent = new Agent({
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 30_000,
    connections: 256,
    pipelining: 1,
    connect: { timeout: 5_000 },
  });

  async function attempt(req: UpstreamRequest, started: number): Promise<UpstreamResult> {
    // Timer APIs take whole milliseconds only.
    const timeoutMs = Math.max(1, Math.floor(req.timeoutMs));
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const response = await request(req.url, {
        dispatcher: agent,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: req.body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const declared = Number(response.headers["content-length"]);
      if (Number.isFinite(declared) && declared > req.maxResponseBytes) {
        response.body.destroy();
        return {
          ok: false,
          tooLarge: true,
          limit: req.maxResponseBytes,
          elapsedMs: clock() - started,
        };
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        const buffer = chunk as Buffer;
        size += buffer.length;
        if (size > req.maxResponseBytes) {
          response.body.destroy();
          return {
            ok: false,
            tooLarge: true,
            limit: req.maxResponseBytes,
            elapsedMs: clock() - started,
          };
        }
        chunks.push(buffer);
      }
      return {
        ok: true,
        status: response.statusCode,
        body: Buffer.concat(chunks, size).toString("utf8"),
        elapsedMs: clock() - started,
      };
    } catch (error) {
      return { ok: false, failure: transportFailure(error, signal), elapsedMs: clock() - started };
    }
  }

  return {
    async send(req) {
      const started = clock();
      const first = await attempt(req, started);
      if (!first.ok && "failure" in first && isStaleSocket(first.failure)) {
        const left = req.timeoutMs - (clock() - started);
        if (left > 0) return attempt({ ...req, timeoutMs: left }, started);
      }
      return first;
    },
    close: () => agent.close(),
  };
}

function errorCode(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const own = (error as { code?: unknown }).code;
  if (typeof own === "string") return own;
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? "" : errorCode(cause);
}

function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

const TIMEOUT_CODES = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

/** Maps undici/Node errors onto the classifier's three transport kinds. */
export function transportFailure(error: unknown, signal?: AbortSignal): TransportFailure {
  const code = errorCode(error);
  const message = errorMessage(error);
  if (
    signal?.aborted ||
    TIMEOUT_CODES.has(code) ||
    error instanceof errors.HeadersTimeoutError ||
    error instanceof errors.BodyTimeoutError ||
    (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError"))
  ) {
    return { kind: "timeout", message: `timeout: ${message}` };
  }
  if (
    /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code) ||
    /\b(tls|ssl)\b/i.test(message)
  ) {
    return { kind: "tls", message: `tls: ${message}` };
  }
  return { kind: "connection", message: `connection: ${code ? `${code} ` : ""}${message}` };
}

function isStaleSocket(failure: TransportFailure): boolean {
  return (
    failure.kind === "connection" &&
    /ECONNRESET|UND_ERR_SOCKET|EPIPE|other side closed/i.test(failure.message)
  );
}
