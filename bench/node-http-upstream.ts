import http from "node:http";
import https from "node:https";
import { transportFailure } from "../functions/adapters/transport-failure.ts";
import type { UpstreamClient } from "../functions/adapters/upstream.ts";
import type { UpstreamRequest, UpstreamResult } from "../functions/core/ports.ts";

/**
 * The gateway's former upstream adapter, on Node's own HTTP client with keep-alive agents: the
 * "B" of the bench's same-run A/B against the undici adapter that ships
 * (functions/adapters/upstream.ts). Same contract: idle sockets close after a few seconds, a
 * reset on a reused socket before any answer is re-sent once only for idempotent requests.
 */

const IDLE_SOCKET_MS = 4_000;
const MAX_SOCKETS_PER_HOST = 256;

interface Target {
  readonly send: typeof http.request;
  readonly options: http.RequestOptions;
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
        req.signal?.removeEventListener("abort", onAbort);
        resolve({ result, retryable });
      };
      const onAbort = () => {
        finish({
          ok: false,
          failure: { kind: "connection", message: "aborted by the caller" },
          elapsedMs: clock() - started,
        });
        outgoing?.destroy();
      };
      let outgoing: http.ClientRequest | undefined;
      if (req.signal?.aborted) {
        onAbort();
        return;
      }
      req.signal?.addEventListener("abort", onAbort, { once: true });
      let target: Target;
      try {
        target = targetOf(req.url);
      } catch (error) {
        finish({ ok: false, failure: transportFailure(error), elapsedMs: clock() - started });
        return;
      }
      const body = Buffer.from(req.body, "utf8");
      const request = target.send({
        ...target.options,
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "content-length": body.length,
        },
      });
      outgoing = request;
      timer = setTimeout(() => {
        finish({
          ok: false,
          failure: {
            kind: "timeout",
            message: `timeout: no complete answer within ${timeoutMs} ms`,
          },
          elapsedMs: clock() - started,
        });
        request.destroy();
      }, timeoutMs);
      request.on("error", (error) => {
        const failure = transportFailure(error);
        finish(
          { ok: false, failure, elapsedMs: clock() - started },
          request.reusedSocket && isStaleSocket(failure),
        );
      });
      request.on("response", (response) => {
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
          finish({
            ok: true,
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks, size).toString("utf8"),
            elapsedMs: clock() - started,
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
      request.end(body);
    });
  }

  return {
    async send(req) {
      const started = clock();
      const first = await attempt(req, started);
      const left = req.timeoutMs - (clock() - started);
      if (first.retryable && req.idempotent === true && left >= 1) {
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

function isStaleSocket(failure: { kind: string; message: string }): boolean {
  return failure.kind === "connection" && /ECONNRESET|EPIPE|socket hang up/i.test(failure.message);
}
