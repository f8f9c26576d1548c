import type { Socket } from "node:net";
import type { buildConnector, Dispatcher } from "undici";
import buildSocketConnector from "undici/lib/core/connect.js";
import Agent from "undici/lib/dispatcher/agent.js";
import type { Upstream, UpstreamRequest, UpstreamResult } from "../core/ports.ts";
import { errorCode, transportFailure } from "./transport-failure.ts";

/**
 * Upstream HTTP on undici's dispatcher: one Agent (a keep-alive pool per provider origin) for
 * the life of the container, driven through `dispatch()` with a small handler of our own. Only
 * the dispatcher is imported, by path: the package's index also loads fetch, WebSocket, the
 * cache and the mocks, which the gateway never uses.
 *
 * Per attempt: one timer for the whole exchange (connect, send, headers, body); the answer
 * capped at `maxResponseBytes`, refused at once when its Content-Length says it is over;
 * an optional AbortSignal. A request is never re-sent behind the caller's back, except an
 * `idempotent` one, once, when a keep-alive socket that had already carried an answer turns
 * out to be dead before this request got any.
 */

/** Idle time before a pooled connection is closed, when the provider gives no Keep-Alive hint. */
const KEEP_ALIVE_MS = 4_000;
/**
 * Ceiling on a provider's `Keep-Alive: timeout=N` hint (undici closes 2 s before the hint).
 * Kept well under the idle timeouts of load balancers and NAT gateways, which drop silently.
 */
const KEEP_ALIVE_MAX_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const CONNECTIONS_PER_ORIGIN = 256;

export interface UpstreamClient extends Upstream {
  close(): Promise<void>;
}

/** What `dispatch()` needs for one provider URL, computed once per URL. */
interface Target {
  readonly origin: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

type AttemptOutcome = { readonly result: UpstreamResult; readonly resendable: boolean };

export function createUpstream(options: { clock?: () => number } = {}): UpstreamClient {
  const clock = options.clock ?? (() => performance.now());

  /**
   * Errors of sockets that had already received bytes since they connected: a keep-alive
   * socket the provider dropped while it sat in the pool, not a provider refusing this request.
   */
  const afterEarlierAnswers = new WeakSet<Error>();
  const connectSocket = buildSocketConnector({ timeout: CONNECT_TIMEOUT_MS });
  const connect: buildConnector.connector = (connectOptions, callback) =>
    connectSocket(connectOptions, (error, socket) => {
      if (socket) watchForStaleness(socket, afterEarlierAnswers);
      // The union of the callback's argument tuples does not survive being passed on as one.
      (callback as (error: Error | null, socket: Socket | null) => void)(error, socket);
    });
  const agent = new Agent({
    connections: CONNECTIONS_PER_ORIGIN,
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
    // The attempt's own timer bounds the whole exchange; undici's per-phase timers would be a
    // second clock with a coarser resolution.
    headersTimeout: 0,
    bodyTimeout: 0,
    connect,
  });

  // Provider URLs are few and fixed: each is parsed once, not on every request.
  const targets = new Map<string, Target>();
  const targetOf = (raw: string): Target => {
    let target = targets.get(raw);
    if (target === undefined) {
      target = parseTarget(raw);
      targets.set(raw, target);
    }
    return target;
  };

  function attempt(req: UpstreamRequest, target: Target, started: number) {
    return new Promise<AttemptOutcome>((resolve) => {
      const timeoutMs = Math.max(1, Math.floor(req.timeoutMs));
      const elapsed = () => clock() - started;
      let settled = false;
      let answered = false;
      let controller: Dispatcher.DispatchController | null = null;
      /** Set once the attempt is over but undici still holds the request (queued or running). */
      let abandonReason: Error | null = null;
      let status = 0;
      let retryAfter: string | undefined;
      const chunks: Buffer[] = [];
      let size = 0;

      const finish = (result: UpstreamResult, resendable = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onAbort);
        resolve({ result, resendable });
      };
      /** Ends the attempt now and tells undici to drop the request and its socket. */
      const abandon = (result: UpstreamResult, reason: Error) => {
        finish(result);
        abandonReason = reason;
        if (controller !== null && !controller.aborted) controller.abort(reason);
      };
      const tooLarge = () =>
        abandon(
          { ok: false, tooLarge: true, limit: req.maxResponseBytes, elapsedMs: elapsed() },
          new Error("answer over the size limit"),
        );
      const onAbort = () => {
        const reason = req.signal?.reason;
        const why = reason instanceof Error ? reason.message : String(reason ?? "no reason given");
        abandon(
          {
            ok: false,
            failure: { kind: "connection", message: `aborted by the caller: ${why}` },
            elapsedMs: elapsed(),
          },
          new Error("aborted by the caller"),
        );
      };

      const timer = setTimeout(
        () =>
          abandon(
            {
              ok: false,
              failure: {
                kind: "timeout",
                message: `timeout: no complete answer within ${timeoutMs} ms`,
              },
              elapsedMs: elapsed(),
            },
            new Error("attempt timed out"),
          ),
        timeoutMs,
      );
      if (req.signal) {
        if (req.signal.aborted) {
          onAbort();
          return;
        }
        req.signal.addEventListener("abort", onAbort, { once: true });
      }

      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(started) {
          controller = started;
          // The attempt ended while the request waited for a connection: nothing is written.
          if (abandonReason !== null) started.abort(abandonReason);
        },
        onResponseStart(_controller, statusCode, headers) {
          if (statusCode < 200) return; // 1xx: the real answer follows
          answered = true;
          const declared = Number(headers["content-length"]);
          if (Number.isFinite(declared) && declared > req.maxResponseBytes) {
            tooLarge();
            return;
          }
          status = statusCode;
          const header = headers["retry-after"];
          retryAfter = Array.isArray(header) ? header[0] : header;
        },
        onResponseData(_controller, chunk) {
          if (settled) return;
          size += chunk.length;
          if (size > req.maxResponseBytes) tooLarge();
          else chunks.push(chunk);
        },
        onResponseEnd() {
          const body =
            chunks.length === 1
              ? (chunks[0] as Buffer).toString("utf8")
              : Buffer.concat(chunks, size).toString("utf8");
          finish({
            ok: true,
            status,
            body,
            elapsedMs: elapsed(),
            ...(retryAfter === undefined ? {} : { retryAfter }),
          });
        },
        onResponseError(_controller, error) {
          if (settled) return;
          if (answered) {
            // A body cut short (reset, premature close) is a connection failure, not an answer.
            finish({
              ok: false,
              failure: {
                kind: "connection",
                message: `connection: the answer was cut short (${describe(error)})`,
              },
              elapsedMs: elapsed(),
            });
            return;
          }
          finish(
            { ok: false, failure: transportFailure(error), elapsedMs: elapsed() },
            afterEarlierAnswers.has(error),
          );
        },
      };
      try {
        agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: "POST",
            headers: target.headers,
            body: req.body,
          },
          handler,
        );
      } catch (error) {
        finish({ ok: false, failure: transportFailure(error), elapsedMs: elapsed() });
      }
    });
  }

  return {
    async send(req) {
      const started = clock();
      let target: Target;
      try {
        target = targetOf(req.url);
      } catch (error) {
        return { ok: false, failure: transportFailure(error), elapsedMs: clock() - started };
      }
      const first = await attempt(req, target, started);
      const left = req.timeoutMs - (clock() - started);
      if (first.resendable && req.idempotent === true && left >= 1 && !req.signal?.aborted) {
        return (await attempt({ ...req, timeoutMs: left }, target, started)).result;
      }
      return first.result;
    },
    async close() {
      await agent.destroy();
    },
  };
}

/** Origin, path and headers for a provider URL; credentials in it become Basic auth. */
function parseTarget(raw: string): Target {
  const url = new URL(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`unsupported protocol ${url.protocol}`);
  }
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json",
  };
  if (url.username || url.password) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
  }
  return { origin: url.origin, path: `${url.pathname}${url.search}`, headers };
}

/**
 * Remembers the errors a socket fails with once it has received bytes since it connected
 * (after the TLS handshake, for https): it had carried an earlier answer.
 */
function watchForStaleness(socket: Socket, afterEarlierAnswers: WeakSet<Error>): void {
  const readAtConnect = socket.bytesRead;
  socket.on("error", (error) => {
    if (socket.bytesRead > readAtConnect) afterEarlierAnswers.add(error);
  });
}

function describe(error: unknown): string {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${code} ${message}` : message;
}
