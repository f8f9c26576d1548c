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

/** What every attempt of this client shares. */
interface Client {
  readonly agent: Dispatcher;
  readonly clock: () => number;
  /**
   * Errors of sockets that had already received bytes since they connected: a keep-alive
   * socket the provider dropped while it sat in the pool, not a provider refusing this request.
   */
  readonly afterEarlierAnswers: WeakSet<Error>;
}

export function createUpstream(options: { clock?: () => number } = {}): UpstreamClient {
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
  const client: Client = {
    agent,
    clock: options.clock ?? (() => performance.now()),
    afterEarlierAnswers,
  };

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

  return {
    send(req) {
      const started = client.clock();
      let target: Target;
      try {
        target = targetOf(req.url);
      } catch (error) {
        return Promise.resolve({
          ok: false,
          failure: transportFailure(error),
          elapsedMs: client.clock() - started,
        });
      }
      return new Promise<UpstreamResult>((resolve) => {
        new Attempt(client, req, target, started, resolve, req.idempotent === true).start();
      });
    },
    async close() {
      await agent.destroy();
    },
  };
}

/**
 * One attempt of a call: the undici dispatch handler, the abort listener (`handleEvent`) and
 * the timer's subject in one object, so an attempt allocates no closures.
 */
class Attempt implements Dispatcher.DispatchHandler {
  readonly #client: Client;
  readonly #req: UpstreamRequest;
  readonly #target: Target;
  /** When the call's first attempt began: elapsed times and the resend's budget count from it. */
  readonly #started: number;
  readonly #resolve: (result: UpstreamResult) => void;
  /** Whether this attempt may be followed by a resend (an idempotent call's first attempt). */
  readonly #mayResend: boolean;
  readonly #timeoutMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #settled = false;
  #answered = false;
  #controller: Dispatcher.DispatchController | null = null;
  /** Set once the attempt is over but undici still holds the request (queued or running). */
  #abandonReason: Error | null = null;
  #status = 0;
  #retryAfter: string | undefined;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(
    client: Client,
    req: UpstreamRequest,
    target: Target,
    started: number,
    resolve: (result: UpstreamResult) => void,
    mayResend: boolean,
  ) {
    this.#client = client;
    this.#req = req;
    this.#target = target;
    this.#started = started;
    this.#resolve = resolve;
    this.#mayResend = mayResend;
    this.#timeoutMs = Math.max(1, Math.floor(req.timeoutMs));
  }

  start(): void {
    // One timer for the whole exchange: connect, send, headers, body.
    this.#timer = setTimeout(expire, this.#timeoutMs, this);
    const { signal } = this.#req;
    if (signal) {
      if (signal.aborted) {
        this.handleEvent();
        return;
      }
      signal.addEventListener("abort", this, { once: true });
    }
    try {
      this.#client.agent.dispatch(
        {
          origin: this.#target.origin,
          path: this.#target.path,
          method: "POST",
          headers: this.#target.headers,
          body: this.#req.body,
        },
        this,
      );
    } catch (error) {
      this.#finish({ ok: false, failure: transportFailure(error), elapsedMs: this.#elapsed() });
    }
  }

  #elapsed(): number {
    return this.#client.clock() - this.#started;
  }

  #finish(result: UpstreamResult, resendable = false): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    const { signal } = this.#req;
    signal?.removeEventListener("abort", this);
    if (resendable && this.#mayResend) {
      // A keep-alive socket found dead before this request got any answer: sent once more,
      // within what is left of the call's time.
      const left = this.#req.timeoutMs - this.#elapsed();
      if (left >= 1 && !signal?.aborted) {
        const resend = new Attempt(
          this.#client,
          { ...this.#req, timeoutMs: left },
          this.#target,
          this.#started,
          this.#resolve,
          false,
        );
        // Not from inside undici's error callback: the resend starts once it has returned.
        queueMicrotask(() => resend.start());
        return;
      }
    }
    this.#resolve(result);
  }

  /** Ends the attempt now and tells undici to drop the request and its socket. */
  #abandon(result: UpstreamResult, reason: Error): void {
    this.#finish(result);
    this.#abandonReason = reason;
    const controller = this.#controller;
    if (controller !== null && !controller.aborted) controller.abort(reason);
  }

  #tooLarge(): void {
    this.#abandon(
      {
        ok: false,
        tooLarge: true,
        limit: this.#req.maxResponseBytes,
        elapsedMs: this.#elapsed(),
      },
      new Error("answer over the size limit"),
    );
  }

  timeOut(): void {
    this.#abandon(
      {
        ok: false,
        failure: {
          kind: "timeout",
          message: `timeout: no complete answer within ${this.#timeoutMs} ms`,
        },
        elapsedMs: this.#elapsed(),
      },
      new Error("attempt timed out"),
    );
  }

  /** The caller's AbortSignal fired (an EventTarget listener object). */
  handleEvent(): void {
    const reason = this.#req.signal?.reason;
    const why = reason instanceof Error ? reason.message : String(reason ?? "no reason given");
    this.#abandon(
      {
        ok: false,
        failure: { kind: "connection", message: `aborted by the caller: ${why}` },
        elapsedMs: this.#elapsed(),
      },
      new Error("aborted by the caller"),
    );
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // The attempt ended while the request waited for a connection: nothing is written.
    if (this.#abandonReason !== null) controller.abort(this.#abandonReason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: the real answer follows
    this.#answered = true;
    const declared = Number(headers["content-length"]);
    if (Number.isFinite(declared) && declared > this.#req.maxResponseBytes) {
      this.#tooLarge();
      return;
    }
    this.#status = statusCode;
    const header = headers["retry-after"];
    this.#retryAfter = Array.isArray(header) ? header[0] : header;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#size += chunk.length;
    if (this.#size > this.#req.maxResponseBytes) this.#tooLarge();
    else this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    const chunks = this.#chunks;
    const body =
      chunks.length === 1
        ? (chunks[0] as Buffer).toString("utf8")
        : Buffer.concat(chunks, this.#size).toString("utf8");
    const retryAfter = this.#retryAfter;
    this.#finish({
      ok: true,
      status: this.#status,
      body,
      elapsedMs: this.#elapsed(),
      ...(retryAfter === undefined ? {} : { retryAfter }),
    });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.#settled) return;
    if (this.#answered) {
      // A body cut short (reset, premature close) is a connection failure, not an answer.
      this.#finish({
        ok: false,
        failure: {
          kind: "connection",
          message: `connection: the answer was cut short (${describe(error)})`,
        },
        elapsedMs: this.#elapsed(),
      });
      return;
    }
    this.#finish(
      { ok: false, failure: transportFailure(error), elapsedMs: this.#elapsed() },
      this.#client.afterEarlierAnswers.has(error),
    );
  }
}

function expire(attempt: Attempt): void {
  attempt.timeOut();
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
