import http from "node:http";
import https from "node:https";
import type { Upstream, UpstreamRequest, UpstreamResult } from "../core/ports.ts";
import type { TransportFailure } from "../core/verdict.ts";

/**
 * Upstream HTTP on Node's own client with keep-alive agents at module scope, so connections
 * are reused across invocations. Node's client costs nothing to bundle or load, where undici
 * added 720 KB and most of a cold start; against anvil both move the same requests per second
 * (bench/RESULTS.md). Idle sockets close after a few seconds, under what providers allow; a
 * reset on a reused socket before any answer is retried once on a fresh connection rather
 * than blamed on the provider.
 */

const IDLE_SOCKET_MS = 4_000;
const MAX_SOCKETS_PER_HOST = 256;

interface Target {
  readonly send: typeof http.request;
  readonly options: http.RequestOptions;
}

export interface UpstreamClient extends Upstream {
  close(): Promise<void>;
}

export function createUpstream(options: { clock?: () => number } = {}): UpstreamClient {
  const clock = options.clock ?? (() => performance.now());
  const agentOptions = {
    keepAlive: true,
    maxSockets: MAX_SOCKETS_PER_HOST,
    // Most recently used first, so spare sockets idle out instead of going stale in rotation.
    scheduling: "lifo" as const,
    timeout: IDLE_SOCKET_MS,
  };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  // Provider URLs are few and fixed: each is parsed once, not on every request.
  const targets = new Map<string, Target>();
  const targetOf = (raw: string): Target => {
    let target = targets.get(raw);
    if (target === undefined) {
      const url = new URL(raw);
      const secure = url.protocol === "https:";
      target = {
        send: secure ? https.request : http.request,
        options: {
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ""),
          port: url.port || (secure ? 443 : 80),
          path: `${url.pathname}${url.search}`,
          method: "POST",
          agent: secure ? agents.https : agents.http,
          ...(url.username
            ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
            : {}),
        },
      };
      targets.set(raw, target);
    }
    return target;
  };

  /** One HTTP exchange; `retryable` marks a reset on a reused socket before any answer. */
  function attempt(
    req: UpstreamRequest,
    started: number,
  ): Promise<{ result: UpstreamResult; retryable: boolean }> {
    const timeoutMs = Math.max(1, Math.floor(req.timeoutMs));
    return new Promise((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (result: UpstreamResult, retryable = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ result, retryable });
      };
      let target: Target;
      try {
        target = targetOf(req.url);
      } catch (error) {
        finish({ ok: false, failure: transportFailure(error), elapsedMs: clock() - started });
        return;
      }
      const body = Buffer.from(req.body, "utf8");
      const outgoing = target.send({
        ...target.options,
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "content-length": body.length,
        },
      });
      timer = setTimeout(() => {
        finish({
          ok: false,
          failure: {
            kind: "timeout",
            message: `timeout: no complete answer within ${timeoutMs} ms`,
          },
          elapsedMs: clock() - started,
        });
        outgoing.destroy();
      }, timeoutMs);
      outgoing.on("error", (error) => {
        const failure = transportFailure(error);
        finish(
          { ok: false, failure, elapsedMs: clock() - started },
          outgoing.reusedSocket && isStaleSocket(failure),
        );
      });
      outgoing.on("response", (response) => {
        const refuseAsTooLarge = () => {
          finish({
            ok: false,
            tooLarge: true,
            limit: req.maxResponseBytes,
            elapsedMs: clock() - started,
          });
          response.destroy();
        };
        const declared = Number(response.headers["content-length"]);
        if (Number.isFinite(declared) && declared > req.maxResponseBytes) {
          refuseAsTooLarge();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > req.maxResponseBytes) refuseAsTooLarge();
          else chunks.push(chunk);
        });
        response.on("end", () => {
          const retryAfter = response.headers["retry-after"];
          finish({
            ok: true,
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks, size).toString("utf8"),
            elapsedMs: clock() - started,
            ...(retryAfter === undefined ? {} : { retryAfter }),
          });
        });
        // A body cut short (reset, premature close) is a connection failure, not an answer.
        response.on("error", (error) => {
          finish({ ok: false, failure: transportFailure(error), elapsedMs: clock() - started });
        });
        response.on("close", () => {
          if (response.complete) return;
          finish({
            ok: false,
            failure: { kind: "connection", message: "connection: the answer was cut short" },
            elapsedMs: clock() - started,
          });
        });
      });
      outgoing.end(body);
    });
  }

  return {
    async send(req) {
      const started = clock();
      const first = await attempt(req, started);
      const left = req.timeoutMs - (clock() - started);
      if (first.retryable && left >= 1) {
        return (await attempt({ ...req, timeoutMs: left }, started)).result;
      }
      return first.result;
    },
    async close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

function errorCode(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const own = (error as { code?: unknown }).code;
  if (typeof own === "string") return own;
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? "" : errorCode(cause);
}

const TIMEOUT_CODES = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT", "UND_ERR_CONNECT_TIMEOUT"]);

/** Maps Node's network errors onto the classifier's three transport kinds. */
export function transportFailure(error: unknown): TransportFailure {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (TIMEOUT_CODES.has(code) || (error instanceof Error && error.name === "TimeoutError")) {
    return { kind: "timeout", message: `timeout: ${message}` };
  }
  if (
    /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|EPROTO)/.test(code) ||
    /\b(tls|ssl)\b/i.test(message)
  ) {
    return { kind: "tls", message: `tls: ${code ? `${code} ` : ""}${message}` };
  }
  return { kind: "connection", message: `connection: ${code ? `${code} ` : ""}${message}` };
}

function isStaleSocket(failure: TransportFailure): boolean {
  return failure.kind === "connection" && /ECONNRESET|EPIPE|socket hang up/i.test(failure.message);
}
