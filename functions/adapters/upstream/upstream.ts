import type { Socket } from "node:net";
import type { buildConnector } from "undici";
import buildSocketConnector from "undici/lib/core/connect.js";
import Agent from "undici/lib/dispatcher/agent.js";
import type { TransportFailure } from "../../core/classify/verdict.ts";
import type { Upstream, UpstreamRequest, UpstreamResult } from "../../core/ports.ts";
import { decodeContent } from "./content-coding.ts";
import { errorCode, transportFailure } from "./transport-failure.ts";
import { type ExchangeOutcome, exchange } from "./undici-exchange.ts";

/**
 * Upstream HTTP on undici's dispatcher: one Agent (a keep-alive pool per provider origin) for
 * the life of the container. Only the dispatcher is imported, by path: the package's index
 * also loads fetch, WebSocket, the cache and the mocks, which the gateway never uses.
 *
 * Each attempt is one bounded exchange (`undici-exchange.ts`: one timer for all of it, the
 * answer capped at `maxResponseBytes`, an optional AbortSignal), judged here as an upstream
 * result; an answer the provider encoded though the request asked for identity is decoded
 * here, capped again. A request is never re-sent behind the caller's back, except an
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

  async function attempt(
    req: UpstreamRequest,
    target: Target,
    started: number,
  ): Promise<AttemptOutcome> {
    const outcome = await exchange(
      agent,
      {
        origin: target.origin,
        path: target.path,
        method: "POST",
        headers: target.headers,
        body: req.body,
      },
      { timeoutMs: req.timeoutMs, maxBytes: req.maxResponseBytes, signal: req.signal },
    );
    return {
      result: upstreamResult(outcome, req, clock() - started),
      resendable:
        outcome.kind === "failed" && !outcome.answered && afterEarlierAnswers.has(outcome.error),
    };
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

/** An exchange's outcome as the classifier reads it. */
function upstreamResult(
  outcome: ExchangeOutcome,
  req: UpstreamRequest,
  elapsedMs: number,
): UpstreamResult {
  switch (outcome.kind) {
    case "answer": {
      const header = outcome.headers["retry-after"];
      const retryAfter = Array.isArray(header) ? header[0] : header;
      const body = decodedBody(outcome, req.maxResponseBytes);
      if ("tooLarge" in body) {
        return { ok: false, tooLarge: true, limit: req.maxResponseBytes, elapsedMs };
      }
      if ("failure" in body) return { ok: false, failure: body.failure, elapsedMs };
      return {
        ok: true,
        status: outcome.status,
        body: body.text,
        elapsedMs,
        ...(retryAfter === undefined ? {} : { retryAfter }),
      };
    }
    case "timeout": {
      const ms = Math.max(1, Math.floor(req.timeoutMs));
      const message = `timeout: no complete answer within ${ms} ms`;
      return { ok: false, failure: { kind: "timeout", message }, elapsedMs };
    }
    case "too_large":
      return { ok: false, tooLarge: true, limit: req.maxResponseBytes, elapsedMs };
    case "aborted": {
      const { reason } = outcome;
      const why = reason instanceof Error ? reason.message : String(reason ?? "no reason given");
      const message = `aborted by the caller: ${why}`;
      return { ok: false, failure: { kind: "connection", message }, elapsedMs };
    }
    case "failed": {
      if (!outcome.answered)
        return { ok: false, failure: transportFailure(outcome.error), elapsedMs };
      // A body cut short (reset, premature close) is a connection failure, not an answer.
      const message = `connection: the answer was cut short (${describe(outcome.error)})`;
      return { ok: false, failure: { kind: "connection", message }, elapsedMs };
    }
  }
}

/** The start of a body that is plain JSON text: whitespace, then an object or an array. */
const PLAIN_JSON_START = /^[\t\n\r ]*[[{]/;

/**
 * The answer's text, decoded when it came with a Content-Encoding; `tooLarge` when it is over
 * the cap once decoded. A 2xx body that cannot be decoded is no answer (a connection failure,
 * as one cut short is); a refusal's status (and Retry-After) says enough without its page.
 */
function decodedBody(
  answer: Extract<ExchangeOutcome, { kind: "answer" }>,
  maxBytes: number,
): { text: string } | { tooLarge: true } | { failure: TransportFailure } {
  const header = answer.headers["content-encoding"];
  if (header === undefined) return { text: answer.body.toString("utf8") };
  const coding = Array.isArray(header) ? header.join(",") : header;
  const decoded = decodeContent(answer.body, coding, maxBytes);
  if (decoded.ok) return { text: decoded.body.toString("utf8") };
  if (decoded.problem === "too_large") return { tooLarge: true };
  // A coding name that is no coding ("utf-8", a charset put in the wrong header) over what
  // reads as JSON text once the real codings applied after it are undone: that text was never
  // encoded by it, and is taken as it is.
  if (
    decoded.problem === "unsupported" &&
    PLAIN_JSON_START.test(decoded.undone.toString("latin1", 0, 64))
  ) {
    return { text: decoded.undone.toString("utf8") };
  }
  if (answer.status >= 300) return { text: "" };
  const message =
    decoded.problem === "corrupt"
      ? `connection: the answer's ${decoded.coding} encoding is corrupt`
      : `connection: the answer came with Content-Encoding ${decoded.coding}, which the gateway does not decode`;
  return { failure: { kind: "connection", message } };
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
    // Without it HTTP lets a server pick any coding; one that does so anyway is still decoded.
    "accept-encoding": "identity",
  };
  if (url.username || url.password) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
  }
  return { origin: url.origin, path: `${url.pathname}${url.search}`, headers };
}

/**
 * Remembers the errors a socket fails with when it had carried an earlier answer (bytes came
 * after it connected, after the TLS handshake for https, and before the request now on it was
 * written) and nothing of the request now on it came: a keep-alive socket the provider dropped
 * in the pool. Bytes since the last write are the current request's answer begun (an interim
 * 100, a malformed or cut-short answer): the provider had the request, which is not re-sent.
 */
function watchForStaleness(socket: Socket, afterEarlierAnswers: WeakSet<Error>): void {
  const readAtConnect = socket.bytesRead;
  let readAtLastWrite = readAtConnect;
  const write = socket.write;
  // undici writes each request with `write` (a request's parts in one turn, before any answer).
  socket.write = function (this: Socket, ...args: Parameters<Socket["write"]>) {
    readAtLastWrite = socket.bytesRead;
    return Reflect.apply(write, this, args);
  } as Socket["write"];
  socket.on("error", (error) => {
    if (readAtLastWrite > readAtConnect && socket.bytesRead === readAtLastWrite) {
      afterEarlierAnswers.add(error);
    }
  });
}

function describe(error: unknown): string {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${code} ${message}` : message;
}
